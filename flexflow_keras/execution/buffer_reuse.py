"""Buffers that share memory: a training step's activations, saved buffers and activation gradients that
are never live at once get one region between them, as TensorFlow's allocator reuses freed memory.

A step issues its launches in one order (`StepProgram.run`): the loader, the forward entries (each op's
statistics, fills, forward and state update), the state copies, the backward entries. A buffer's span is
[first, last] of the launches whose arguments touch it: an activation is written by its producer's
forward and read last by a consumer's forward or by a backward that needs it; a gradient is written by
the backward of its first consumer in backward order and read last by its producer's backward; a saved
buffer lives from its op's forward to its backward. Two buffers of the same shape and dtype whose spans
do not overlap can live in one region: an activation whose last reader was the backward of a late layer
holds the gradients of earlier layers, and a gradient freed early holds a later one. The runtime keeps
it correct by itself: a region's later writer takes it with a write privilege after the earlier
buffer's readers, so the dependence analysis orders them (Legion's write-after-read).

Only buffers that forward and backward launches alone touch share: not what the loader writes or the
metrics and the host read (model inputs and outputs, labels, losses and their seeds, masks, sample
weights, tensors a `compute_loss` override records), not the gradients zeroed at the start of each step
(a split layout sums into them) or once when the step was built (an output nobody differentiates), not
a state copy's source. The plan is made once per store, by its first program. A training program's plan
holds for every program (an evaluation issues the training forward's entries, a prediction the model's
nodes of them, in the same order: a predict program's nodes follow the training graph's order, `Engine`);
an evaluation's (every activation dead at its last forward reader) for predictions. A program its store's
plan does not hold for (training on a store an evaluation planned: the backward reads activations the
evaluation let go) gives the store's buffers their own regions back (`restore`) and plans again. With a
strategy across MPI nodes only gradients share (the nodes exchange activations by region).

Without this, each activation gradient had a buffer of its own for the whole step (the ViT of keras.io's
vit_small_ds peaked at twice TensorFlow's memory at batch 64), and each activation and its gradient
never shared (the same model at batch 256: 1.23x TensorFlow's peak).
"""

from __future__ import annotations

import numpy as np


def touches(entries) -> dict[int, tuple[int, int]]:
    """Region uid -> (first, last) index of the `entries` (each a list of launch arguments, in issue
    order) whose arguments touch it."""
    span: dict[int, tuple[int, int]] = {}
    for i, args in enumerate(entries):
        for a in args:
            root = getattr(a, "root", None)
            if root is None:
                continue
            first, _ = span.get(root.uid, (i, i))
            span[root.uid] = (first, i)
    return span


def plan(buffers: dict, span: dict[int, tuple[int, int]], excluded: set[int]) -> dict:
    """Key -> the region that buffer uses, for the `buffers` (key -> its own region) whose regions have a
    `span` and are not `excluded` (region uids). Each shares the region of an earlier buffer of its shape
    and dtype whose last touch came before its first (the one freed earliest: the most room between the
    two), or keeps its own. Deterministic: buffers are taken in the order of their first touch, then in
    the order of `buffers`."""
    order = {key: k for k, key in enumerate(buffers)}
    items = sorted(((span[r.uid][0], order[key], key, r) for key, r in buffers.items()
                    if r.uid in span and r.uid not in excluded), key=lambda x: x[:2])
    free: dict[tuple, list[tuple[int, int, object]]] = {}  # (shape, dtype) -> [(last touch, region uid, region)]
    out: dict = {}
    for first, _, key, region in items:
        pool = free.setdefault((tuple(region.shape), np.dtype(region.dtype).str), [])
        done = [k for k, (last, _, _) in enumerate(pool) if last < first]
        shared = pool.pop(min(done, key=lambda k: pool[k][:2]))[2] if done else region
        out[key] = shared
        pool.append((span[region.uid][1], shared.uid, shared))
    return out


def issue_order(prog) -> list[list]:
    """The arguments of a program's launches up to the end of its backward pass (if any), one list per
    step of `StepProgram.run`'s issue order (loader, zeroing, each forward entry, the state copies, each
    backward entry with the sums started after it)."""
    entries = [list(prog.loader_args), list(prog.zero_fill)]
    for _lay, _task, args, fills, pre, post in prog.forward:
        got = list(fills) + list(args)
        if pre is not None:
            got += list(pre[1]) + list(pre[2])
        if post is not None:
            got += list(post[1])
        entries.append(got)
    entries.append([r for _task, src, dst in prog.state_copies for r in (src, dst)])
    for i, (_lay, _task, args) in enumerate(prog.backward):
        got = list(args)
        for _stask, _dom, sargs, _procs in prog.part_sums.get(i, ()):
            got += list(sargs)
        entries.append(got)
    return entries


def fixed_regions(prog) -> set[int]:
    """Uids of the regions that keep their own buffer: those the loader writes, the metrics and the host
    read, the step zeroes, or the step was built with (see the module docstring)."""
    s, tg = prog.store, prog.engine.tgraph
    fixed = set(s.filled_grads) | {r.uid for r in prog.zero_fill}
    fixed |= {a.root.uid for a in prog.loader_args if hasattr(a, "root")}
    fixed |= {src.uid for _task, src, _dst in prog.state_copies}
    host = [*tg.model_inputs, *tg.model_outputs, *tg.per_sample_losses, *tg.labels, *(tg.masks or ()),
            *(tg.sample_weights or ()), *tg.recorded_tensors, *(tg.metric_logits or ())]
    for t in (t for t in host if t is not None):
        for table in (s.acts, s.grads):
            r = table.get(t.uid)
            if r is not None:
                fixed.add(r.uid)
    return fixed


def candidates(store, with_activations: bool) -> dict:
    """Key -> region of every buffer of `store` that may share: each activation gradient, and (unless a
    strategy spans nodes) each activation and saved buffer."""
    out = {("g", uid): r for uid, r in store.grads.items()}
    if with_activations:
        out.update({("a", uid): r for uid, r in store.acts.items()})
        out.update({("s", nid, i): r for nid, group in store.saved.items() for i, r in enumerate(group)})
    return out


def snapshot(store) -> tuple:
    """The store's tables as they are (each buffer in its own region, before a plan)."""
    return dict(store.acts), dict(store.grads), {nid: list(group) for nid, group in store.saved.items()}


def restore(store) -> None:
    """Give every buffer the store's `snapshot` knows its own region again (buffers made since kept theirs).
    The programs built on the plan keep the regions they were built with: programs sharing regions with
    each other stay correct, as each step writes a buffer before it reads it and the runtime orders the
    steps' launches by their privileges."""
    if store.originals is None:
        return
    acts, grads, saved = store.originals
    store.acts.update(acts)
    store.grads.update(grads)
    for nid, group in saved.items():
        store.saved[nid] = list(group)


def apply(store, chosen: dict) -> bool:
    """Point the store's tables at the chosen regions. Returns whether any buffer changed region."""
    changed = False
    for key, region in chosen.items():
        if key[0] == "g":
            changed |= store.grads[key[1]] is not region
            store.grads[key[1]] = region
        elif key[0] == "a":
            changed |= store.acts[key[1]] is not region
            store.acts[key[1]] = region
        else:
            group = store.saved[key[1]]
            changed |= group[key[2]] is not region
            group[key[2]] = region
    return changed
