"""CUDA twins of `kernels.shape`: reshape copies, transposes (strided gathers) and concatenation."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.gpu import launch, reshaped
from kernels.gpu.elementwise import contiguous_strides, strided_copy_cuda
from kernels.softmax import axis_view


@cuda.jit
def _slab(src, dst, start, to_dst, accumulate):
    # src (outer, n, inner) <-> dst (outer, total, inner) at offset `start` on the middle axis.
    i = cuda.grid(1)
    if i < src.size:
        outer, n, inner = src.shape
        o = i // (n * inner)
        j = (i // inner) % n
        k = i % inner
        if to_dst:
            dst[o, start + j, k] = dst[o, start + j, k] + src[o, j, k] if accumulate else src[o, j, k]
        else:
            src[o, j, k] = src[o, j, k] + dst[o, start + j, k] if accumulate else dst[o, start + j, k]


def copy_forward_cuda(x, y) -> None:
    """``y = x`` reshaped (same size, contiguous)."""
    strided_copy_cuda(x, y, contiguous_strides(tuple(y.shape) or (1,)))


def copy_backward_cuda(dy, dx, accumulate: bool = False) -> None:
    """The gradient of a reshape."""
    strided_copy_cuda(dy, dx, contiguous_strides(tuple(dx.shape) or (1,)), accumulate)


def transpose_forward_cuda(x, perm: tuple[int, ...], y) -> None:
    """``y = x.transpose(perm)`` on device arrays."""
    xs = contiguous_strides(x.shape)
    strided_copy_cuda(x, y, tuple(xs[p] for p in perm))


def transpose_backward_cuda(dy, perm: tuple[int, ...], dx, accumulate: bool = False) -> None:
    """``dx (+)= dy.transpose(inverse(perm))``."""
    inv = tuple(int(i) for i in np.argsort(perm))
    ds = contiguous_strides(dy.shape)
    strided_copy_cuda(dy, dx, tuple(ds[p] for p in inv), accumulate)


def concat_forward_cuda(xs: list, axis: int, y) -> None:
    """``y = concatenate(xs, axis)`` on device arrays."""
    y3 = reshaped(y, axis_view(tuple(y.shape), axis))
    start = 0
    for x in xs:
        x3 = reshaped(x, axis_view(tuple(x.shape), axis))
        launch(_slab, x3.size, x3, y3, start, True, False)
        start += x3.shape[1]


def concat_backward_cuda(dy, axis: int, sizes: list[int], dxs: list, accumulate: tuple[bool, ...] = ()) -> None:
    """Slice dy back into each input's gradient (None: not wanted)."""
    d3 = reshaped(dy, axis_view(tuple(dy.shape), axis))
    start = 0
    for i, (size, dx) in enumerate(zip(sizes, dxs, strict=True)):
        if dx is not None:
            x3 = reshaped(dx, axis_view(tuple(dx.shape), axis))
            launch(_slab, x3.size, x3, d3, start, False, i < len(accumulate) and accumulate[i])
        start += size
