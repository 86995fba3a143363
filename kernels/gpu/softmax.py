"""CUDA twins of `kernels.softmax`: one thread per softmax vector, sharing the CPU row functions."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import launch
from kernels.softmax import _softmax_grad_row, _softmax_row, axis_view

_row = cuda.jit(device=True)(_softmax_row)
_grad_row = cuda.jit(device=True)(_softmax_grad_row)


@cuda.jit
def _forward(x, y, log):
    i = cuda.grid(1)
    if i < x.shape[0] * x.shape[2]:
        _row(x, y, i // x.shape[2], i % x.shape[2], log)


@cuda.jit
def _backward(y, dy, dx, log, accumulate):
    i = cuda.grid(1)
    if i < y.shape[0] * y.shape[2]:
        _grad_row(y, dy, dx, i // y.shape[2], i % y.shape[2], log, accumulate)


def _as3(a, axis):
    return a.reshape(axis_view(tuple(a.shape), axis))


def _run_forward(x, y, axis, log):
    outer, _, inner = axis_view(tuple(x.shape), axis)
    launch(_forward, outer * inner, _as3(x, axis), _as3(y, axis), log)


def _run_backward(y, dy, dx, axis, log, accumulate):
    outer, _, inner = axis_view(tuple(y.shape), axis)
    launch(_backward, outer * inner, _as3(y, axis), _as3(dy, axis), _as3(dx, axis), log, accumulate)


def softmax_forward_cuda(x, y, axis: int = -1) -> None:
    """Softmax along `axis` on device arrays."""
    _run_forward(x, y, axis, False)


def softmax_backward_cuda(y, dy, dx, axis: int = -1, accumulate: bool = False) -> None:
    """Softmax backward from the forward output."""
    _run_backward(y, dy, dx, axis, False, accumulate)


def log_softmax_forward_cuda(x, y, axis: int = -1) -> None:
    """Log-softmax along `axis` on device arrays."""
    _run_forward(x, y, axis, True)


def log_softmax_backward_cuda(y, dy, dx, axis: int = -1, accumulate: bool = False) -> None:
    """Log-softmax backward from the forward output."""
    _run_backward(y, dy, dx, axis, True, accumulate)
