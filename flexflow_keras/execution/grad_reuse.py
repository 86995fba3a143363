"""Activation gradients that share one buffer: a training step's tensors whose gradients are never live at
the same time get one region between them, as TensorFlow's allocator reuses a freed gradient's memory.

The backward pass runs its entries in one order. The gradient of an activation is written first by the
backward entry of its first consumer in that order (later consumers add to it) and read last by the
entry of the op that produced it; after that read it is dead. Two gradients of the same shape and dtype
whose spans of entries [first touch, last touch] do not overlap can therefore live in one region. The
runtime keeps that correct by itself: the region's later writer takes it with a write privilege after
the earlier tensor's readers, so the dependence analysis orders them (Legion's write-after-read).

Only gradients that backward entries alone touch share: not the losses' seeds (the loader writes them,
the metrics read them at the step's end), not the gradients zeroed at the start of each step (a split
layout that sums into them) or once when the step was built (an output nobody differentiates).

Without this, each activation had a gradient buffer of its own for the whole step: the ViT of keras.io's
vit_small_ds peaked at twice TensorFlow's memory at batch 64, and its script's batch of 256 did not fit.
"""

from __future__ import annotations

import numpy as np


def _touches(backward) -> dict[int, tuple[int, int]]:
    """Region uid -> (first, last) index of the backward entries whose arguments touch it."""
    span: dict[int, tuple[int, int]] = {}
    for i, (_lay, _task, args) in enumerate(backward):
        for a in args:
            root = getattr(a, "root", None)
            if root is None:
                continue
            first, _ = span.get(root.uid, (i, i))
            span[root.uid] = (first, i)
    return span


def plan(grads: dict, backward, excluded: set[int]) -> dict[int, object]:
    """Tensor uid -> the region its gradient uses, for the gradients in `grads` (tensor uid -> region, as the
    first build of the backward pass made them) whose regions only `backward` entries touch and that are
    not `excluded` (region uids). Each shares the region of an earlier tensor of its shape and dtype whose
    last touch came before its first (the one freed earliest: the most room between the two), or keeps
    its own. Deterministic: tensors are taken in the order of their first touch, then by uid."""
    span = _touches(backward)
    items = sorted(((span[r.uid][0], uid, r) for uid, r in grads.items()
                    if r.uid in span and r.uid not in excluded), key=lambda x: (x[0], x[1]))
    free: dict[tuple, list[tuple[int, int, object]]] = {}  # (shape, dtype) -> [(last touch, region uid, region)]
    out: dict[int, object] = {}
    for first, uid, region in items:
        key = (tuple(region.shape), np.dtype(region.dtype).str)
        pool = free.setdefault(key, [])
        done = [k for k, (last, _, _) in enumerate(pool) if last < first]
        shared = pool.pop(min(done, key=lambda k: pool[k][:2]))[2] if done else region
        out[uid] = shared
        pool.append((span[region.uid][1], shared.uid, shared))
    return out
