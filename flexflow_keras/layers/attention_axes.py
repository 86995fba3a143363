"""MultiHeadAttention over chosen `attention_axes` (Keras 3 semantics), for inputs of rank >= 4 where
attention runs over some of the positional axes and the others act as batch axes.

Keras writes this as einsums over the projected tensors ``(batch, positions..., heads, channels)``: the
positional axes not in `attention_axes` (N) and the heads are batch axes; scores have the shape
``(batch, N..., heads, query's attention axes..., key's attention axes...)`` (the attention axes in the
order given), and the softmax runs jointly over the key's attention axes. Here the same is composed from
ops with backward: transpose each projection to ``(batch, N..., heads, A..., channels)``, flatten N and A,
two batched matmuls and a (masked) softmax over the flattened key axes, then restore the layout.
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras import ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.ops import functional as F

_NEG = -1e9  # Keras' large negative number for masked float32 scores


def normalize_axes(layer, axes, rank: int) -> tuple[int, ...] | None:
    """`axes` as non-negative positional axes of a rank-`rank` input (Keras: a negative axis counts from
    the projected tensor's heads axis, i.e. from the input's feature axis), or None for Keras' default
    (every axis between the batch and the features)."""
    if axes is None:
        return None
    got = tuple(int(a) if a >= 0 else rank + int(a) for a in axes)
    if len(set(got)) != len(got) or any(not 1 <= a <= rank - 2 for a in got):
        raise ValueError(f"{_args.who(layer)} expects attention_axes among the positional axes 1..{rank - 2} of "
                         f"inputs of rank {rank} (negative axes count from the features), received "
                         f"attention_axes={tuple(axes)}.")
    return None if tuple(sorted(got)) == tuple(range(1, rank - 1)) else got


def _sizes(layer, shape, axes, what: str) -> tuple[int, ...]:
    dims = tuple(shape[a] for a in axes)
    if any(d is None for d in dims):
        raise ShapeError(f"{_args.who(layer)} needs known sizes on the positional axes, received {what} shape "
                         f"{tuple(shape)}.")
    return dims


def _to_blocks(x, batch_axes, attn_axes, n: int, t: int):
    """(B, positions..., H, D) -> (B, n, H, t, D): the batch positions, the heads, the attention positions."""
    rank = len(x.shape)
    perm = (0,) + tuple(batch_axes) + (rank - 2,) + tuple(attn_axes) + (rank - 1,)
    y = ops.transpose(x, perm)
    return ops.reshape(y, (-1, n, x.shape[-2], t, x.shape[-1]))


def _mask_blocks(layer, mask, n_dims, h: int, q_dims, k_dims, n: int, t: int, s: int):
    """The attention mask (as Keras expands it) in the (B, n, 1 or H, t, s) layout of the scores."""
    if str(getattr(mask, "dtype", "")) != "bool":
        mask = (np.asarray(mask) != 0) if not F._symbolic(mask) else ops.not_equal(mask, np.zeros((), mask.dtype))
    full = 1 + len(n_dims) + 1 + len(q_dims) + len(k_dims)
    rank = len(mask.shape)
    if rank > full:
        raise ShapeError(f"{_args.who(layer)} expects attention_mask of at most {full} dims, received shape "
                         f"{tuple(mask.shape)}.")
    at = -2 * len(q_dims) - 1
    for _ in range(full - rank):  # Keras: expand in front of the query's attention axes
        mask = ops.expand_dims(mask, at)
    want = (None,) + tuple(n_dims) + (h,) + tuple(q_dims) + tuple(k_dims)
    got = tuple(mask.shape)
    for g, w in zip(got[1:], want[1:], strict=True):
        if g not in (1, w):
            raise ShapeError(f"{_args.who(layer)} expects attention_mask broadcastable to the scores' shape "
                             f"(batch, {', '.join(map(str, want[1:]))}), received shape {tuple(mask.shape)}.")
    heads = got[1 + len(n_dims)]
    ones = np.ones((1,) + tuple(n_dims) + (heads,) + tuple(q_dims) + tuple(k_dims), bool)
    mask = ops.logical_and(mask, F.constant(ones) if F._symbolic(mask) else ones)
    return ops.reshape(mask, (-1, n, heads, t, s))


def attend_over_axes(layer, q, k, v, axes, attention_mask, training, return_scores: bool):
    """Attention of the projected q (B, pos..., H, K), k, v (B, pos'..., H, K / Vd) over `axes`; returns
    the context (B, pos..., H, Vd) and, with `return_scores`, the probabilities in Keras' layout."""
    rank = len(q.shape)  # the projected rank: the input's plus one
    n_axes = tuple(a for a in range(1, rank - 2) if a not in axes)
    n_dims = _sizes(layer, q.shape, n_axes, "query")
    if _sizes(layer, v.shape, n_axes, "value") != n_dims:
        raise ShapeError(f"{_args.who(layer)}: query and value must agree on the axes outside attention_axes "
                         f"{axes}; received query positions {tuple(q.shape[1:-2])} and value positions "
                         f"{tuple(v.shape[1:-2])}.")
    q_dims, k_dims = _sizes(layer, q.shape, axes, "query"), _sizes(layer, v.shape, axes, "value")
    n, t, s = math.prod(n_dims), math.prod(q_dims), math.prod(k_dims)
    h, vd = q.shape[-2], v.shape[-1]
    qb = _to_blocks(ops.multiply(q, 1.0 / math.sqrt(float(layer.key_dim))), n_axes, axes, n, t)  # (B, n, H, t, K)
    kb, vb = _to_blocks(k, n_axes, axes, n, s), _to_blocks(v, n_axes, axes, n, s)
    scores = ops.matmul(qb, ops.transpose(kb, (0, 1, 2, 4, 3)))  # (B, n, H, t, s)
    mask = None
    if attention_mask is not None:
        mask = _mask_blocks(layer, attention_mask, n_dims, h, q_dims, k_dims, n, t, s)
        scores = ops.where(mask, scores, np.float32(_NEG))
    probs = ops.softmax(scores, axis=-1)
    if mask is not None:
        probs = ops.where(mask, probs, np.float32(0.0))
    dropped = probs
    if layer.dropout > 0.0:
        dropped = F.dropout(probs, layer.dropout, seed=layer._seed, training=training)
    ctx = ops.matmul(dropped, vb)  # (B, n, H, t, Vd)
    ctx = ops.reshape(ctx, (-1,) + n_dims + (h,) + q_dims + (vd,))
    # back to (B, pos..., H, Vd): position p of the query sits at n_axes.index(p) or len(N) + 1 + axes.index(p)
    src = [0] + [1 + n_axes.index(p) if p in n_axes else 2 + len(n_axes) + axes.index(p) for p in range(1, rank - 2)]
    ctx = ops.transpose(ctx, tuple(src) + (1 + len(n_axes), rank - 1))
    if not return_scores:
        return ctx, None
    return ctx, ops.reshape(probs, (-1,) + n_dims + (h,) + q_dims + k_dims)
