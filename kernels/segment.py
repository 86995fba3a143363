"""Segment reductions (TensorFlow's ``unsorted_segment_*`` / ``segment_*``, Keras 3's ``ops.segment_*``).

Rows of ``x`` (its leading ``ids.ndim`` dims, flattened: shape (n, inner)) are reduced into rows of ``y``
(num_segments, inner) by their segment id. A negative id drops its row (TensorFlow's unsorted ops); an
id at or past num_segments is an error: the kernels return its flat position (nothing trusted written).

Modes: ``sum``, ``mean`` (sum / max(count, 1)), ``sqrt_n`` (sum / sqrt(max(count, 1))), ``max``,
``min``, ``prod``. An empty segment is 0 for the sums, 1 for ``prod``, and for ``max`` / ``min`` the
dtype's lowest / highest value (unsorted ops), or 0 with ``empty_zero`` (TensorFlow's sorted ops).

Gradients, as TensorFlow's: a sum's is a gather of dy (divided by the count for mean and sqrt_n); max and
min route dy[s] to the rows equal to y[s], split equally between ties (per element); prod's is
dy[s] * y[s] / x, with a zero's gradient the product of the segment's other elements and none where the
segment holds two zeros.

CPU variants are NumPy; the CUDA twins are `kernels.gpu.segment`.
"""

from __future__ import annotations

import numpy as np

MODES = ("sum", "mean", "sqrt_n", "max", "min", "prod")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"segment reduction: mode must be one of {MODES}, received {mode!r}.")


def empty_value(mode: str, dtype, empty_zero: bool = False):
    """What an empty segment holds."""
    dt = np.dtype(dtype)
    if mode == "prod":
        return dt.type(1)
    if mode in ("max", "min") and not empty_zero:
        info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
        return info.min if mode == "max" else info.max
    return dt.type(0)


def first_bad(ids: np.ndarray, num_segments: int) -> int:
    """The flat position of the first id at or past `num_segments`, or -1."""
    bad = np.flatnonzero(np.asarray(ids).reshape(-1) >= num_segments)
    return int(bad[0]) if bad.size else -1


def _rows(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return x.reshape(ids.size, -1)


def counts(ids: np.ndarray, num_segments: int) -> np.ndarray:
    """Rows per segment (negative ids dropped; ids must be below num_segments)."""
    flat = ids.reshape(-1).astype(np.int64)
    return np.bincount(flat[flat >= 0], minlength=num_segments)[:num_segments]


def _divisor(mode: str, cnt: np.ndarray, dtype) -> np.ndarray:
    c = np.maximum(cnt, 1).astype(dtype)
    return np.sqrt(c) if mode == "sqrt_n" else c


def segment_forward_cpu(mode: str, x: np.ndarray, ids: np.ndarray, y: np.ndarray, empty_zero: bool = False) -> int:
    """``y[s] = reduce(x[i] for ids[i] == s)``; returns the flat position of an id >= num_segments, else -1."""
    check_mode(mode)
    s = y.shape[0]
    bad = first_bad(ids, s)
    if bad >= 0:
        return bad
    rows, out = _rows(x, ids), y.reshape(s, -1)
    flat = ids.reshape(-1).astype(np.int64)
    keep = flat >= 0
    sel, vals = flat[keep], rows[keep]
    out[...] = empty_value(mode, y.dtype)  # empty_zero's zeros come after the fold
    if mode in ("sum", "mean", "sqrt_n"):
        acc = np.zeros(out.shape, np.result_type(x.dtype, y.dtype))
        np.add.at(acc, sel, vals)
        if mode != "sum":
            acc = acc / _divisor(mode, counts(ids, s), acc.dtype)[:, None]
        out[...] = acc
    elif mode == "prod":
        np.multiply.at(out, sel, vals)
    else:
        (np.maximum if mode == "max" else np.minimum).at(out, sel, vals)
        if empty_zero:
            out[counts(ids, s) == 0] = 0
    return -1


def segment_backward_cpu(mode: str, x: np.ndarray, ids: np.ndarray, y: np.ndarray, dy: np.ndarray,
                         dx: np.ndarray, accumulate: bool = False) -> None:
    """``dx (+)=`` the gradient of ``sum(y * dy)`` with respect to x (rows with a negative id get 0)."""
    check_mode(mode)
    s = y.shape[0]
    flat = ids.reshape(-1).astype(np.int64)
    keep = (flat >= 0)[:, None]
    at = np.maximum(flat, 0)
    rows, out, g = _rows(x, ids), y.reshape(s, -1), dy.reshape(s, -1)
    if mode in ("sum", "mean", "sqrt_n"):
        if mode != "sum":
            g = g / _divisor(mode, counts(ids, s), g.dtype)[:, None]
        grad = np.where(keep, g[at], 0)
    elif mode in ("max", "min"):
        chosen = (rows == out[at]) & keep
        n_chosen = np.zeros(out.shape, g.dtype)
        np.add.at(n_chosen, at, chosen.astype(g.dtype))
        grad = np.where(chosen, g[at] / np.maximum(n_chosen, 1)[at], 0)
    else:
        zero = rows == 0
        n_zero = np.zeros(out.shape, np.int64)
        np.add.at(n_zero, at[keep[:, 0]], zero[keep[:, 0]])
        nonzero_prod = np.ones(out.shape, np.result_type(x.dtype, y.dtype))
        np.multiply.at(nonzero_prod, at[keep[:, 0]], np.where(zero, 1, rows)[keep[:, 0]])
        g = np.where(n_zero > 1, 0, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            partial = np.where(zero, nonzero_prod[at], out[at] / np.where(zero, 1, rows))
        grad = np.where(keep, g[at] * partial, 0)
    grad = grad.reshape(dx.shape)
    if accumulate:
        dx += grad
    else:
        np.copyto(dx, grad, casting="unsafe")


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import segment as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
