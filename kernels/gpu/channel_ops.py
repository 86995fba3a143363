"""Small CUDA helpers of the convolution-family kernels: add a per-channel bias, sum a gradient over
every axis but the last (a bias gradient), copy one array into another or add it."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import flat, launch, reshaped


@cuda.jit
def _add_bias(y2, bias):
    # y2 (rows, C) += bias (C,)
    t = cuda.grid(1)
    if t < y2.size:
        c = y2.shape[1]
        y2[t // c, t % c] += bias[t % c]


@cuda.jit
def _column_sums(g2, accumulate, out):
    # out (C,) (+)= column sums of g2 (rows, C): one thread per column
    c = cuda.grid(1)
    if c < g2.shape[1]:
        acc = out.dtype.type(0)  # in out's dtype: a float32 sum stays float32
        for r in range(g2.shape[0]):
            acc += g2[r, c]
        out[c] = out[c] + acc if accumulate else acc


@cuda.jit
def _add_into(dst, src):
    t = cuda.grid(1)
    if t < dst.size:
        dst[t] += src[t]


@cuda.jit
def _copy(dst, src):
    t = cuda.grid(1)
    if t < dst.size:
        dst[t] = src[t]


def copy_cuda(dst, src) -> None:
    """``dst[...] = src`` for contiguous device arrays of one size."""
    launch(_copy, dst.size, flat(dst), flat(src))


def add_bias_cuda(y, bias) -> None:
    """``y += bias`` over the last axis of a contiguous device array."""
    c = int(y.shape[y.ndim - 1])  # the simulator's shapes take no negative index
    launch(_add_bias, y.size, reshaped(y, y.size // c, c), bias)


def bias_grad_cuda(grad_y, grad_bias, accumulate: bool = False) -> None:
    """``grad_bias (+)= grad_y.sum(all axes but the last)``."""
    c = int(grad_y.shape[grad_y.ndim - 1])
    launch(_column_sums, c, reshaped(grad_y, grad_y.size // c, c), accumulate, grad_bias)


def add_into_cuda(dst, src) -> None:
    """``dst += src`` for contiguous device arrays of one size."""
    launch(_add_into, dst.size, flat(dst), flat(src))
