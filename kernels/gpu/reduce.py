"""CUDA twins of `kernels.reduce`: one thread per output element walks the reduced elements."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.elementwise import DIVIDE, MULTIPLY
from kernels.gpu import empty, flat, launch
from kernels.gpu.elementwise import (
    EQUAL,
    _binary,
    broadcast_strides,
    contiguous_strides,
    offset,
    strided_copy_cuda,
)
from kernels.gpu.scalar_source import float32_constants
from kernels.reduce import MAX, MEAN, SUM, kept_shape


@cuda.jit
@float32_constants
def _reduce(x, y, out_shape, out_sx, red_shape, red_sx, nred, code, scale, accumulate):
    o = cuda.grid(1)
    if o < y.size:
        base = offset(o, out_shape, out_sx)
        acc = 0.0 + x[base]
        for r in range(1, nred):
            v = x[base + offset(r, red_shape, red_sx)]
            if code == SUM or code == MEAN:
                acc += v
            elif code == MAX:
                acc = max(acc, v)
            else:
                acc = min(acc, v)
        if code == MEAN:
            acc *= scale
        y[o] = y[o] + acc if accumulate else acc


def _plan(shape, axes):
    cs = contiguous_strides(shape)
    out_shape = kept_shape(shape, axes)
    out_sx = tuple(0 if i in axes else s for i, s in enumerate(cs))
    red_shape = tuple(shape[i] if i in axes else 1 for i in range(len(shape)))
    red_sx = tuple(s if i in axes else 0 for i, s in enumerate(cs))
    nred = int(np.prod(red_shape, dtype=np.int64))
    return out_shape, out_sx, red_shape, red_sx, nred


def reduce_forward_cuda(code: int, x, axes: tuple[int, ...], y, accumulate: bool = False) -> None:
    """Reduce the device array `x` over `axes` into `y` (keepdims or squeezed: the same size)."""
    shape = tuple(x.shape) or (1,)
    axes = tuple(axes) if x.ndim else (0,)
    out_shape, out_sx, red_shape, red_sx, nred = _plan(shape, axes)
    launch(_reduce, y.size, flat(x), flat(y), out_shape, out_sx, red_shape, red_sx, nred, code,
           1.0 / max(nred, 1), accumulate)


def sum_to_shape_cuda(g, out, accumulate: bool = False) -> None:
    """``out (+)= g`` summed down to out's shape (reverse broadcasting)."""
    shape = tuple(g.shape) or (1,)
    target = (1,) * (len(shape) - out.ndim) + tuple(out.shape)
    axes = tuple(i for i, (t, s) in enumerate(zip(target, shape, strict=True)) if t == 1 and s != 1)
    if not axes:
        strided_copy_cuda(g, out, contiguous_strides(shape), accumulate)
        return
    reduce_forward_cuda(SUM, g, axes, out, accumulate)


def reduce_backward_cuda(code: int, x, y, axes: tuple[int, ...], dy, dx, accumulate: bool = False) -> None:
    """``dx (+)=`` the gradient of `reduce_forward_cuda` (max/min split ties equally)."""
    shape = tuple(x.shape) or (1,)
    ks = kept_shape(shape, axes)
    bs = broadcast_strides(ks, shape)
    if code in (SUM, MEAN):
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        strided_copy_cuda(dy, dx, bs, accumulate, scale=1.0 / max(count, 1) if code == MEAN else None)
        return
    full = contiguous_strides(shape)
    hit = empty(shape, dx.dtype)
    launch(_binary, hit.size, flat(x), flat(y), flat(hit), shape, full, bs, EQUAL, False)
    counts = empty(ks, dx.dtype)
    reduce_forward_cuda(SUM, hit, axes, counts)
    share = empty(ks, dx.dtype)
    kstr = contiguous_strides(ks)
    launch(_binary, share.size, flat(dy), flat(counts), flat(share), ks, kstr, kstr, DIVIDE, False)
    launch(_binary, dx.size, flat(hit), flat(share), flat(dx), shape, full, bs, MULTIPLY, accumulate)
