"""CUDA twins of `kernels.array_ops`, data movement: static indexing, gather, take_along_axis, tile, repeat,
broadcast_to, cumsum and prod (argmax/argmin, one_hot, top_k and the random draws: `kernels.gpu.array_select`).

Element-wise data movement runs one thread per output element (strided offsets as in
`kernels.gpu.elementwise`); cumsum runs one thread per line along its axis (adjacent threads take adjacent
lines, so reads coalesce when the axis is not the last). The scatter-adds of gather / take_along_axis use
atomics (an index may repeat); every other backward writes each element from one thread.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, int64

from kernels.gpu import flat, launch
from kernels.gpu.checks import buffer, note_bad, result
from kernels.gpu.elementwise import broadcast_strides, contiguous_strides, offset, operand, strided_copy_cuda
from kernels.gpu.reduce import sum_to_shape_cuda
from kernels.reduce import kept_shape
from kernels.softmax import axis_view


# --- shared element kernels ---------------------------------------------------------------------------------
@cuda.jit
def _fill(y, value):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = value


@cuda.jit
def _strided_read(x, y, shape, strides, start):
    # y[i] = x[start + offset(i)]: a basic index as a strided view of x
    i = cuda.grid(1)
    if i < y.size:
        y[i] = x[start + offset(i, shape, strides)]


@cuda.jit
def _strided_add(dy, dx, shape, strides, start):
    # dx[start + offset(i)] += dy[i]; a basic index reaches each element of dx at most once
    i = cuda.grid(1)
    if i < dy.size:
        j = start + offset(i, shape, strides)
        dx[j] = dx[j] + dy[i]


@cuda.jit
def _find_bad(idx, size, bad):
    # the lowest flat position of an index outside [-size, size) goes to the check (kernels.gpu.checks)
    i = cuda.grid(1)
    if i < idx.size:
        v = int64(idx[i])
        if v < -size or v >= size:
            note_bad(bad, i)


def _zero(y) -> None:
    launch(_fill, y.size, flat(y), 0)


def _first_bad(idx, size: int, check) -> int:
    """-1, or the flat position of the first index outside [-size, size) (read back at once); with a
    `DeviceCheck` the position goes to it and -1 is returned without waiting for the device."""
    bad = buffer(check)
    launch(_find_bad, idx.size, flat(idx), size, bad)
    return result(check, bad, flat(idx), idx.size)  # without a check the op raises before writing


# --- static indexing ----------------------------------------------------------------------------------------
def _index_view(shape: tuple[int, ...], index: tuple):
    """(shape, element strides, start) of ``x[index]`` inside a contiguous x of `shape`."""
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=shape, strides=contiguous_strides(shape))
    view = probe[index]  # int8 probe: byte strides are element strides; nothing is read
    start = view.__array_interface__["data"][0] - probe.__array_interface__["data"][0]
    return tuple(view.shape) or (1,), tuple(view.strides) or (0,), int(start)


def index_forward_cuda(x, index: tuple, y) -> None:
    """``y = x[index]`` for a basic index on device arrays."""
    shape, strides, start = _index_view(tuple(x.shape), index)
    launch(_strided_read, y.size, flat(x), flat(y), shape, strides, start)


def index_backward_cuda(dy, index: tuple, dx, accumulate: bool = False) -> None:
    """``dx[index] (+)= dy``, zero elsewhere unless accumulating."""
    shape, strides, start = _index_view(tuple(dx.shape), index)
    if not accumulate:
        _zero(dx)
    launch(_strided_add, dy.size, flat(dy), flat(dx), shape, strides, start)


# --- gather, take_along_axis --------------------------------------------------------------------------------
@cuda.jit
def _gather(x, idx, y, n, inner, m):
    # x (outer, n, inner), y (outer, m, inner) flat; y[o, j, k] = x[o, idx[j] mod n, k]
    i = cuda.grid(1)
    if i < y.size:
        k = i % inner
        j = (i // inner) % m
        o = i // (inner * m)
        y[i] = x[(o * n + int64(idx[j]) % n) * inner + k]


@cuda.jit
def _gather_grad(dy, idx, dx, n, inner, m):
    i = cuda.grid(1)
    if i < dy.size:
        k = i % inner
        j = (i // inner) % m
        o = i // (inner * m)
        cuda.atomic.add(dx, (o * n + int64(idx[j]) % n) * inner + k, dy[i])


def _gather_dims(x_shape, idx, axis):
    _outer, n, inner = axis_view(tuple(x_shape), axis)
    return n, inner, idx.size


def gather_forward_cuda(x, idx, axis: int, y, check=None) -> int:
    """``y = take(x, idx, axis)``; returns the flat position of a bad index (nothing written) or -1 (with a
    `DeviceCheck`: see `_first_bad`; a bad index then reads a wrapped position, never out of bounds)."""
    idx = operand(idx)
    bad = _first_bad(idx, x.shape[axis], check)
    if bad < 0:
        n, inner, m = _gather_dims(x.shape, idx, axis)
        launch(_gather, y.size, flat(x), flat(idx), flat(y), n, inner, m)
    return bad


def gather_backward_cuda(dy, idx, axis: int, dx, accumulate: bool = False) -> None:
    """Scatter-add dy back to the gathered slices of dx (repeated indices add up)."""
    idx = operand(idx)
    if not accumulate:
        _zero(dx)
    n, inner, m = _gather_dims(dx.shape, idx, axis)
    launch(_gather_grad, dy.size, flat(dy), flat(idx), flat(dx), n, inner, m)


@cuda.jit(device=True)
def _along_pos(i, shape, sx, si, axis, idx, n):
    # x's flat position read by output element i (si: idx's strides, 0 on its broadcast dims)
    src = 0
    ii = 0
    rem = i
    for d in range(len(shape) - 1, -1, -1):
        c = rem % shape[d]
        rem //= shape[d]
        ii += c * si[d]
        if d != axis:
            src += c * sx[d]
    return src + (int64(idx[ii]) % n) * sx[axis]


@cuda.jit
def _take_along(x, idx, y, shape, sx, si, axis, n):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = x[_along_pos(i, shape, sx, si, axis, idx, n)]


@cuda.jit
def _take_along_grad(dy, idx, dx, shape, sx, si, axis, n):
    i = cuda.grid(1)
    if i < dy.size:
        cuda.atomic.add(dx, _along_pos(i, shape, sx, si, axis, idx, n), dy[i])


def _along_plan(x_shape, idx, axis):
    shape = tuple(idx.shape[d] if d == axis else s for d, s in enumerate(x_shape))
    return shape, contiguous_strides(x_shape), broadcast_strides(tuple(idx.shape), shape)


def take_along_forward_cuda(x, idx, axis: int, y, check=None) -> int:
    """``y = take_along_axis(x, idx, axis)``; -1, or the flat position of a bad index (nothing written; with
    a `DeviceCheck`: see `_first_bad`)."""
    idx = operand(idx)
    bad = _first_bad(idx, x.shape[axis], check)
    if bad < 0:
        shape, sx, si = _along_plan(tuple(x.shape), idx, axis)
        launch(_take_along, y.size, flat(x), flat(idx), flat(y), shape, sx, si, axis, x.shape[axis])
    return bad


def take_along_backward_cuda(dy, idx, axis: int, dx, accumulate: bool = False) -> None:
    """Scatter-add dy to the positions take_along_axis read."""
    idx = operand(idx)
    if not accumulate:
        _zero(dx)
    shape, sx, si = _along_plan(tuple(dx.shape), idx, axis)
    launch(_take_along_grad, dy.size, flat(dy), flat(idx), flat(dx), shape, sx, si, axis, dx.shape[axis])


# --- tile, repeat, broadcast --------------------------------------------------------------------------------
@cuda.jit
def _tile(x, y, yshape, xshape, sx):
    i = cuda.grid(1)
    if i < y.size:
        src = 0
        rem = i
        for d in range(len(yshape) - 1, -1, -1):
            src += (rem % yshape[d]) % xshape[d] * sx[d]
            rem //= yshape[d]
        y[i] = x[src]


@cuda.jit
def _tile_grad(dy, dx, xshape, reps, sy, nreps, accumulate):
    # dx[c] (+)= sum over the tiles t of dy[t * xshape + c]
    i = cuda.grid(1)
    if i < dx.size:
        base = offset(i, xshape, sy)
        acc = dy[base]
        for t in range(1, nreps):
            off = base
            rem = t
            for d in range(len(reps) - 1, -1, -1):
                off += (rem % reps[d]) * xshape[d] * sy[d]
                rem //= reps[d]
            acc += dy[off]
        dx[i] = dx[i] + acc if accumulate else acc


@cuda.jit
def _repeat(x, y, n, inner, repeats):
    # x (outer, n, inner), y (outer, n * repeats, inner) flat
    i = cuda.grid(1)
    if i < y.size:
        k = i % inner
        j = (i // inner) % (n * repeats)
        o = i // (inner * n * repeats)
        y[i] = x[(o * n + j // repeats) * inner + k]


@cuda.jit
def _repeat_grad(dy, dx, n, inner, repeats, accumulate):
    i = cuda.grid(1)
    if i < dx.size:
        k = i % inner
        j = (i // inner) % n
        o = i // (inner * n)
        base = ((o * n + j) * repeats) * inner + k
        acc = dy[base]
        for r in range(1, repeats):
            acc += dy[base + r * inner]
        dx[i] = dx[i] + acc if accumulate else acc


def _empty_grad(dy, dx, accumulate: bool) -> bool:
    """True (dx zeroed unless accumulating) when dy is empty: nothing to sum."""
    if dy.size == 0:
        if not accumulate:
            _zero(dx)
        return True
    return False


def tile_forward_cuda(x, reps: tuple[int, ...], y) -> None:
    """``y = tile(x, reps)`` (len(reps) == x.ndim) on device arrays."""
    xshape = tuple(x.shape) or (1,)
    launch(_tile, y.size, flat(x), flat(y), tuple(y.shape) or (1,), xshape, contiguous_strides(xshape))


def tile_backward_cuda(dy, reps: tuple[int, ...], dx, accumulate: bool = False) -> None:
    """Sum the tiles of dy into dx."""
    if _empty_grad(dy, dx, accumulate):
        return
    xshape = tuple(dx.shape) or (1,)
    reps = tuple(int(r) for r in reps) or (1,)
    launch(_tile_grad, dx.size, flat(dy), flat(dx), xshape, reps, contiguous_strides(tuple(dy.shape) or (1,)),
           math.prod(reps), accumulate)


def repeat_forward_cuda(x, repeats: int, axis: int, y) -> None:
    """``y = repeat(x, repeats, axis)`` on device arrays."""
    _outer, n, inner = axis_view(tuple(x.shape), axis)
    launch(_repeat, y.size, flat(x), flat(y), n, inner, int(repeats))


def repeat_backward_cuda(dy, repeats: int, axis: int, dx, accumulate: bool = False) -> None:
    """Sum each group of `repeats` copies of dy into dx."""
    if _empty_grad(dy, dx, accumulate):
        return
    _outer, n, inner = axis_view(tuple(dx.shape), axis)
    launch(_repeat_grad, dx.size, flat(dy), flat(dx), n, inner, int(repeats), accumulate)


def broadcast_forward_cuda(x, y) -> None:
    """``y = broadcast_to(x, y.shape)`` on device arrays (a strided copy with stride 0 on broadcast dims)."""
    shape = tuple(y.shape) or (1,)
    strided_copy_cuda(x, y, broadcast_strides(tuple(x.shape), shape))


def broadcast_backward_cuda(dy, dx, accumulate: bool = False) -> None:
    """Sum dy over the broadcast dims into dx."""
    sum_to_shape_cuda(dy, dx, accumulate)


# --- scans, products ------------------------------------------------------------------------
@cuda.jit
def _cumsum(x, y, lines, n, inner, reverse, accumulate):
    # one thread per line (o, k) of the (outer, n, inner) view, summing in order along n
    t = cuda.grid(1)
    if t < lines:
        base = (t // inner) * n * inner + t % inner
        step = -inner if reverse else inner
        p = base + (n - 1) * inner if reverse else base
        acc = x[p]
        y[p] = y[p] + acc if accumulate else acc
        for _ in range(1, n):
            p += step
            acc += x[p]
            y[p] = y[p] + acc if accumulate else acc


def _cumsum_run(x, axis: int, reverse: bool, y, accumulate: bool) -> None:
    outer, n, inner = axis_view(tuple(x.shape) or (1,), axis)
    if n:
        launch(_cumsum, outer * inner, flat(x), flat(y), outer * inner, n, inner, bool(reverse), accumulate)


def cumsum_forward_cuda(x, axis: int, reverse: bool, y) -> None:
    """Inclusive cumulative sum along `axis` (from the end when `reverse`) on device arrays."""
    _cumsum_run(x, axis, reverse, y, False)


def cumsum_backward_cuda(dy, axis: int, reverse: bool, dx, accumulate: bool = False) -> None:
    """dx (+)= the cumulative sum of dy from the other end."""
    _cumsum_run(dy, axis, not reverse, dx, accumulate)


@cuda.jit
def _prod(x, y, out_shape, out_sx, red_shape, red_sx, nred):
    o = cuda.grid(1)
    if o < y.size:
        base = offset(o, out_shape, out_sx)
        acc = x[base]
        for r in range(1, nred):
            acc *= x[base + offset(r, red_shape, red_sx)]
        y[o] = acc


@cuda.jit
def _prod_grad(x, dy, dx, shape, base_sx, dy_sx, red_shape, red_sx, nred, accumulate):
    # dx[i] (+)= dy[group] * product of the group's other elements (no division: exact at zeros)
    i = cuda.grid(1)
    if i < dx.size:
        base = offset(i, shape, base_sx)
        acc = dy[offset(i, shape, dy_sx)]
        for r in range(nred):
            p = base + offset(r, red_shape, red_sx)
            if p != i:
                acc *= x[p]
        dx[i] = dx[i] + acc if accumulate else acc


def _prod_plan(shape, axes):
    cs = contiguous_strides(shape)
    red_shape = tuple(shape[i] if i in axes else 1 for i in range(len(shape)))
    red_sx = tuple(s if i in axes else 0 for i, s in enumerate(cs))
    return cs, red_shape, red_sx, math.prod(red_shape)


def prod_forward_cuda(x, axes: tuple[int, ...], y) -> None:
    """Product over `axes` into y (keepdims or squeezed: the same size) on device arrays."""
    shape = tuple(x.shape) or (1,)
    axes = tuple(axes) if x.ndim else (0,)
    cs, red_shape, red_sx, nred = _prod_plan(shape, axes)
    if nred == 0:
        launch(_fill, y.size, flat(y), 1)
        return
    out_sx = tuple(0 if i in axes else s for i, s in enumerate(cs))
    launch(_prod, y.size, flat(x), flat(y), kept_shape(shape, axes), out_sx, red_shape, red_sx, nred)


def prod_backward_cuda(x, axes: tuple[int, ...], dy, dx, accumulate: bool = False) -> None:
    """``dx (+)= dy * (product of the other elements of each reduced group)`` on device arrays."""
    shape = tuple(x.shape) or (1,)
    axes = tuple(axes) if x.ndim else (0,)
    cs, red_shape, red_sx, nred = _prod_plan(shape, axes)
    base_sx = tuple(0 if i in axes else s for i, s in enumerate(cs))
    dy_sx = broadcast_strides(kept_shape(shape, axes), shape)
    launch(_prod_grad, dx.size, flat(x), flat(dy), flat(dx), shape, base_sx, dy_sx, red_shape, red_sx, nred,
           accumulate)
