"""Keras 3's `keras.ops.dot_product_attention`, `psnr`, `histogram` and `unravel_index`, with its signatures,
checks and dtypes (as its TensorFlow backend).

`dot_product_attention` and `psnr` (float inputs) and `unravel_index` are composed from differentiable ops
(transposes, matmul, where, softmax, mean, log; floor_divide and mod), so they run in a model's graph and
under a GradientTape. `histogram` counts data-dependent bins: arrays and eager tensors only.

Example:
    >>> q = np.ones((2, 4, 3, 8), "float32")
    >>> keras.ops.dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 3, 8)
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops import numpy_extra as X
from flexflow_keras.ops.dtype_rules import dtype_of, result_type

__all__ = ["dot_product_attention", "psnr", "histogram", "unravel_index"]


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") and not isinstance(x, np.ndarray) else np.shape(x)


def _as(x, dtype: str, sym: bool):
    t = F._tensor(x, sym, None if sym else dtype_of(x))
    return t if dtype_of(t) == dtype else F.cast(t, dtype)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """``softmax(query . key * scale + bias, masked) . value`` per head: query (B, T, N, H), key and value
    (B, S, K, H) with K dividing N (grouped-query attention repeats each key/value head N // K times);
    `mask` (True: attend) and `bias` broadcast to (B, N, T, S); `scale` defaults to ``1 / sqrt(H)``;
    `is_causal` keeps key s <= query t. The output has query's shape."""
    if attn_logits_soft_cap is not None:
        raise ValueError("attn_logits_soft_cap is only supported for JAX on TPU. Set attn_logits_soft_cap=None when "
                         "not using JAX on TPU.")
    if flash_attention:
        raise ValueError("Flash attention is not supported in tensorflow backend (nor in flexflow_keras); leave "
                         "flash_attention=None or False.")
    shapes = [_shape(t) for t in (query, key, value)]
    if any(len(s) != 4 for s in shapes):
        raise ValueError(f"`dot_product_attention` only supports 4D inputs. Received: query.shape={shapes[0]}, "
                         f"key.shape={shapes[1]}, value.shape={shapes[2]}.")
    sym = F._symbolic(query, key, value, bias, mask)
    dtype = result_type(query, key, value)
    q, k, v = (_as(t, dtype, sym) for t in (query, key, value))
    heads, kv_heads = shapes[0][2], shapes[1][2]
    if heads != kv_heads:
        if kv_heads < 1 or heads % kv_heads:  # TensorFlow's einsum refuses it
            from flexflow_keras.tf_convert import invalid

            invalid(f"keras.ops.dot_product_attention: query has {heads} heads and key/value {kv_heads}; "
                    f"grouped-query attention needs the key/value heads to divide the query heads.")
        k, v = N.repeat(k, heads // kv_heads, axis=2), N.repeat(v, heads // kv_heads, axis=2)
    logits_dtype = result_type(np.zeros(0, dtype), np.zeros(0, "float32"))
    logits = F.matmul(F.transpose(q, (0, 2, 1, 3)), F.transpose(k, (0, 2, 3, 1)))  # (B, N, T, S)
    logits = _as(logits, logits_dtype, sym)
    if scale is None:  # TensorFlow's: computed in float32, whatever the dtype
        scale = np.float32(1.0) / np.sqrt(np.float32(shapes[1][-1]))
    logits = F.multiply(logits, np.asarray(scale, logits_dtype))
    if bias is not None:
        logits = F.add(logits, _as(_as(bias, dtype, sym), logits_dtype, sym))
    keep = None if mask is None else F.not_equal(_as(mask, dtype_of(mask), sym), False)
    if is_causal:
        t, s = _shape(logits)[2:]
        if t is None or s is None:
            raise ArgumentError(f"keras.ops.dot_product_attention(is_causal=True) needs the query and key lengths "
                                f"known, received query {shapes[0]} and key {shapes[1]}.")
        causal = np.tril(np.ones((t, s), bool))
        keep = causal if keep is None else F.logical_and(keep, causal)
    if keep is not None:
        low = (65500.0 if logits_dtype == "float16" else 3.38953e38) * -0.7
        logits = F.where(keep, logits, np.asarray(low, logits_dtype))
    probs_dtype = result_type(np.zeros(0, logits_dtype), np.zeros(0, "float32"))
    probs = _as(F.softmax(_as(logits, probs_dtype, sym), axis=-1), dtype, sym)
    return F.transpose(F.matmul(probs, F.transpose(v, (0, 2, 1, 3))), (0, 2, 1, 3))


def psnr(x1, x2, max_val):
    """The peak signal-to-noise ratio ``20 log10(max_val) - 10 log10(mean((x1 - x2)^2))`` over all elements
    (a scalar; float inputs of one dtype, as TensorFlow takes them)."""
    s1, s2 = _shape(x1), _shape(x2)
    if s1 != s2:
        raise ValueError(f"Input shapes {s1} and {s2} must match for PSNR calculation. ")
    d1, d2 = dtype_of(x1), dtype_of(x2)
    if d1 != d2:
        from flexflow_keras.tf_convert import invalid

        invalid(f"cannot compute Sub as input #1(zero-based) was expected to be a {d1} tensor but is a {d2} tensor "
                f"[Op:Sub]. keras.ops.psnr needs x1 and x2 of one dtype.")
    if np.dtype(d2).kind != "f":  # integer images: TensorFlow's integer mean, then float32 logarithms
        X._eager_only("psnr of integer images", x1, x2)
        diff = np.asarray(x1).astype(np.int64) - np.asarray(x2)
        mse = np.sum(diff * diff) // max(diff.size, 1)
        top = np.asarray(max_val).astype(d2)
        return np.float32(20 * np.log10(np.float32(top)) - 10 * np.log10(np.float32(mse)))
    sym = F._symbolic(x1, x2)
    a, b = _as(x1, d1, sym), _as(x2, d2, sym)
    diff = F.subtract(a, b)
    mse = F.mean(F.multiply(diff, diff))
    top = 20.0 * np.log10(np.asarray(max_val, d2).astype(np.float64))
    return F.subtract(np.asarray(top, d2), F.multiply(X.log10(mse), np.asarray(10.0, d2)))


def histogram(x, bins=10, range=None):  # noqa: A002 - Keras' argument name
    """(counts (bins,), edges (bins + 1,)) of a 1-D x over [min, max] (or `range`), both in x's dtype; values
    outside `range` are not counted. Eager only: the counts depend on the data."""
    if not isinstance(bins, int):
        raise TypeError(f"Argument `bins` must be of type `int`. Received: bins={bins}")
    if bins < 0:
        raise ValueError(f"Argument `bins` should be a non-negative integer. Received: bins={bins}")
    if range:
        if len(range) < 2 or not isinstance(range, tuple):
            raise ValueError(f"Argument `range` must be a tuple of two elements. Received: range={range}")
        if range[1] < range[0]:
            raise ValueError(f"The second element of `range` must be greater than the first. Received: range={range}")
    X._eager_only("histogram", x)
    a = np.asarray(x) if isinstance(x, np.ndarray) else np.asarray(x, dtype_of(x))
    if a.ndim != 1:
        raise ValueError(f"Input tensor must be 1-dimensional. Received: input.shape={a.shape}")
    lo, hi = (a.min(), a.max()) if range is None else range
    kept = a[(a >= lo) & (a <= hi)]
    edges = np.linspace(float(lo), float(hi), bins + 1).astype(a.dtype)
    index = np.searchsorted(edges[1:-1], kept, side="right")
    counts = np.bincount(index, minlength=bins)[:bins].astype(a.dtype)
    return counts, edges


def unravel_index(indices, shape):
    """The coordinates of flat `indices` in an array of `shape`: a tuple of one tensor per dim, in the
    indices' dtype (NumPy's row-major order)."""
    shape = tuple(shape)
    if None in shape:
        raise ValueError(f"`shape` argument cannot contain `None`. Received: shape={shape}")
    dtype = dtype_of(indices)
    sym = F._symbolic(indices)
    rest = _as(indices, dtype, sym)
    coords = []
    for dim in reversed(shape):
        coords.append(_as(X.mod(rest, dim), dtype, sym))
        rest = X.floor_divide(rest, dim)
    return tuple(reversed(coords))
