"""CUDA twins of `kernels.segment`: one thread per element of data, folding into the output with atomics
(add, max, min); products, which have no atomic, take one thread per column walking the rows in order.
Counts (mean, sqrt_n, empty segments) are atomic adds of 1 per row. Scratch buffers are kept on the
output or gradient array (`kernels.gpu.memo`), so a step allocates nothing."""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.gpu import empty, flat, launch, per_array, reshaped
from kernels.gpu.checks import buffer, note_bad, result
from kernels.gpu.scalar_source import float32_constants
from kernels.segment import check_mode, empty_value

_ADD, _MAX, _MIN = 0, 1, 2
_PLAIN, _MEAN, _SQRT_N = 0, 1, 2


@cuda.jit
def _fill(a, value):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = value


@cuda.jit
def _copy(src, dst):
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = src[i]


@cuda.jit
def _scatter(x, ids, y, bad, how):
    # y[ids[r], j] <- fold(y[ids[r], j], x[r, j]); a negative id drops the row, one too large is noted
    i = cuda.grid(1)
    if i < x.size:
        r = i // x.shape[1]
        j = i % x.shape[1]
        s = ids[r]
        if s >= y.shape[0]:
            note_bad(bad, r)
        elif s >= 0:
            if how == 0:
                cuda.atomic.add(y, (s, j), x[r, j])
            elif how == 1:
                cuda.atomic.max(y, (s, j), x[r, j])
            else:
                cuda.atomic.min(y, (s, j), x[r, j])


@cuda.jit
def _prod_columns(x, ids, y, bad):
    # one thread per column: y[ids[r], j] *= x[r, j] over the rows in order (no atomic multiply)
    j = cuda.grid(1)
    if j < x.shape[1]:
        for r in range(x.shape[0]):
            s = ids[r]
            if s >= y.shape[0]:
                note_bad(bad, r)
            elif s >= 0:
                y[s, j] *= x[r, j]


@cuda.jit
def _count(ids, n_segments, cnt):
    r = cuda.grid(1)
    if r < ids.size:
        s = ids[r]
        if s >= 0 and s < n_segments:
            cuda.atomic.add(cnt, s, 1.0)


@cuda.jit
@float32_constants
def _divide(y, cnt, how):
    i = cuda.grid(1)
    if i < y.size:
        s = i // y.shape[1]
        c = max(cnt[s], 1.0)
        y[s, i % y.shape[1]] /= math.sqrt(c) if how == 2 else c


@cuda.jit
def _zero_empty(y, cnt):
    i = cuda.grid(1)
    if i < y.size:
        s = i // y.shape[1]
        if cnt[s] == 0:
            y[s, i % y.shape[1]] = 0


@cuda.jit
@float32_constants
def _gather_grad(dy, ids, cnt, dx, how, accumulate):
    # dx[r, j] (+)= dy[ids[r], j] (divided by the count for mean / sqrt_n); 0 for a dropped row
    i = cuda.grid(1)
    if i < dx.size:
        r = i // dx.shape[1]
        j = i % dx.shape[1]
        s = ids[r]
        g = 0.0
        if s >= 0 and s < dy.shape[0]:
            g = dy[s, j]
            if how != 0:
                c = max(cnt[s], 1.0)
                g /= math.sqrt(c) if how == 2 else c
        dx[r, j] = dx[r, j] + g if accumulate else g


@cuda.jit
def _count_chosen(x, ids, y, n_chosen):
    i = cuda.grid(1)
    if i < x.size:
        r = i // x.shape[1]
        j = i % x.shape[1]
        s = ids[r]
        if s >= 0 and s < y.shape[0] and x[r, j] == y[s, j]:
            cuda.atomic.add(n_chosen, (s, j), 1.0)


@cuda.jit
@float32_constants
def _route(x, ids, y, n_chosen, dy, dx, accumulate):
    # max / min: dy[s, j] split equally between the rows equal to y[s, j] (TensorFlow's tie rule)
    i = cuda.grid(1)
    if i < x.size:
        r = i // x.shape[1]
        j = i % x.shape[1]
        s = ids[r]
        g = 0.0
        if s >= 0 and s < y.shape[0] and x[r, j] == y[s, j]:
            g = dy[s, j] / n_chosen[s, j]
        dx[r, j] = dx[r, j] + g if accumulate else g


@cuda.jit
def _prod_parts(x, ids, n_zero, nonzero_prod):
    # one thread per column: zeros per segment, and the product of the segment's other elements
    j = cuda.grid(1)
    if j < x.shape[1]:
        for r in range(x.shape[0]):
            s = ids[r]
            if s >= 0 and s < n_zero.shape[0]:
                v = x[r, j]
                if v == 0:
                    n_zero[s, j] += 1.0
                else:
                    nonzero_prod[s, j] *= v


@cuda.jit
@float32_constants
def _prod_grad(x, ids, y, n_zero, nonzero_prod, dy, dx, accumulate):
    # dy[s] * y[s] / x, a zero's: dy[s] * (product of the others); nothing where the segment has two zeros
    i = cuda.grid(1)
    if i < x.size:
        r = i // x.shape[1]
        j = i % x.shape[1]
        s = ids[r]
        g = 0.0
        if s >= 0 and s < y.shape[0] and n_zero[s, j] <= 1:
            v = x[r, j]
            g = dy[s, j] * (nonzero_prod[s, j] if v == 0 else y[s, j] / v)
        dx[r, j] = dx[r, j] + g if accumulate else g


def _scratch(a, name: str, shape, dtype):
    shape = tuple(int(s) for s in shape)
    return per_array(a, ("segment", name, shape), lambda: empty(shape, dtype))


def _counts(ids_flat, n_segments: int, keep_on, dtype):
    dtype = dtype if np.dtype(dtype).kind == "f" else np.float64  # float atomics; exact below 2**24 rows
    cnt = _scratch(keep_on, "count", (max(n_segments, 1),), dtype)
    launch(_fill, cnt.size, cnt, 0.0)
    launch(_count, ids_flat.size, ids_flat, n_segments, cnt)
    return cnt


def segment_forward_cuda(mode: str, x, ids, y, empty_zero: bool = False, check=None) -> int:
    """`kernels.segment.segment_forward_cpu` on device arrays; with a `kernels.gpu.checks.DeviceCheck` a
    bad id goes to it and -1 is returned without waiting for the device."""
    check_mode(mode)
    n, s = ids.size, y.shape[0]
    inner = y.size // s if s else x.size // max(n, 1)
    ids_flat, bad = flat(ids), buffer(check)
    rows, out = reshaped(x, n, inner), reshaped(y, s, inner)
    if x.dtype != y.dtype:  # integer data averaged in float64
        cast = _scratch(y, "cast", (n, inner), y.dtype)
        launch(_copy, x.size, flat(x), flat(cast))
        rows = cast
    launch(_fill, y.size, flat(y), empty_value(mode, y.dtype))  # empty_zero: zeroed after the fold
    if mode == "prod":
        launch(_prod_columns, inner, rows, ids_flat, out, bad)
    else:
        launch(_scatter, n * inner, rows, ids_flat, out, bad, {"max": _MAX, "min": _MIN}.get(mode, _ADD))
    if mode in ("mean", "sqrt_n"):
        launch(_divide, y.size, out, _counts(ids_flat, s, y, y.dtype), _SQRT_N if mode == "sqrt_n" else _MEAN)
    elif mode in ("max", "min") and empty_zero:
        launch(_zero_empty, y.size, out, _counts(ids_flat, s, y, y.dtype))
    return result(check, bad, ids_flat, n)


def segment_backward_cuda(mode: str, x, ids, y, dy, dx, accumulate: bool = False) -> None:
    """`kernels.segment.segment_backward_cpu` on device arrays."""
    check_mode(mode)
    n, s = ids.size, y.shape[0]
    inner = dx.size // max(n, 1)
    ids_flat = flat(ids)
    g, out, grad = reshaped(dy, s, inner), reshaped(y, s, inner), reshaped(dx, n, inner)
    if mode in ("sum", "mean", "sqrt_n"):
        how = {"sum": _PLAIN, "mean": _MEAN, "sqrt_n": _SQRT_N}[mode]
        cnt = _counts(ids_flat, s, dx, dy.dtype) if how != _PLAIN else _scratch(dx, "none", (1,), dy.dtype)
        launch(_gather_grad, dx.size, g, ids_flat, cnt, grad, how, bool(accumulate))
        return
    rows = reshaped(x, n, inner)
    if mode in ("max", "min"):
        n_chosen = _scratch(dx, "chosen", (s, inner), dy.dtype)
        launch(_fill, n_chosen.size, flat(n_chosen), 0.0)
        launch(_count_chosen, x.size, rows, ids_flat, out, n_chosen)
        launch(_route, x.size, rows, ids_flat, out, n_chosen, g, grad, bool(accumulate))
        return
    n_zero = _scratch(dx, "zeros", (s, inner), dy.dtype)
    nonzero_prod = _scratch(dx, "nonzero", (s, inner), y.dtype)
    launch(_fill, n_zero.size, flat(n_zero), 0.0)
    launch(_fill, nonzero_prod.size, flat(nonzero_prod), 1.0)
    launch(_prod_parts, inner, rows, ids_flat, n_zero, nonzero_prod)
    launch(_prod_grad, x.size, rows, ids_flat, out, n_zero, nonzero_prod, g, grad, bool(accumulate))
