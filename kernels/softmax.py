"""Softmax and log-softmax along one axis, forward and backward.

The array is viewed as (outer, n, inner) with `n` the softmax axis, so any axis works without a copy;
axis -1 is the (outer, n, 1) case. Sums accumulate in float64.
"""

from __future__ import annotations

import math

import numpy as np

from kernels import vector_math
from kernels._jit import cpu_jit


def axis_view(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, n, inner) sizes for reducing `shape` along `axis`."""
    axis = axis % len(shape)
    return math.prod(shape[:axis]), int(shape[axis]), math.prod(shape[axis + 1:])


def _as3(a: np.ndarray, axis: int) -> np.ndarray:
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a.reshape(axis_view(a.shape, axis))


def _out3(a: np.ndarray, axis: int, who: str) -> np.ndarray:
    if not a.flags.c_contiguous:
        raise ValueError(f"{who}: output must be C-contiguous, received strides {a.strides}.")
    return a.reshape(axis_view(a.shape, axis))


def _softmax_row(x, y, o, k, log):
    # One softmax vector x[o, :, k] of a (outer, n, inner) view.
    n = x.shape[1]
    m = x[o, 0, k]
    for j in range(1, n):
        m = max(m, x[o, j, k])
    s = 0.0
    for j in range(n):
        s += math.exp(x[o, j, k] - m)
    if log:
        lse = m + math.log(s)
        for j in range(n):
            y[o, j, k] = x[o, j, k] - lse
    else:
        for j in range(n):
            y[o, j, k] = math.exp(x[o, j, k] - m) / s


def _softmax_grad_row(y, dy, dx, o, k, log, accumulate):
    n = y.shape[1]
    s = 0.0
    for j in range(n):
        s += dy[o, j, k] if log else dy[o, j, k] * y[o, j, k]
    for j in range(n):
        if log:
            g = dy[o, j, k] - math.exp(y[o, j, k]) * s
        else:
            g = y[o, j, k] * (dy[o, j, k] - s)
        if accumulate:
            dx[o, j, k] += g
        else:
            dx[o, j, k] = g


# The row functions are also compiled as CUDA device functions (kernels.gpu.softmax).
ROW_SOURCES = (_softmax_row, _softmax_grad_row)
_row = cpu_jit(_softmax_row)
_grad_row = cpu_jit(_softmax_grad_row)


@cpu_jit
def _forward(x, y, log):
    for o in range(x.shape[0]):
        for k in range(x.shape[2]):
            _row(x, y, o, k, log)


@cpu_jit
def _backward(y, dy, dx, log, accumulate):
    for o in range(y.shape[0]):
        for k in range(y.shape[2]):
            _grad_row(y, dy, dx, o, k, log, accumulate)


@cpu_jit
def _forward_last(x, y, log):
    """`_softmax_row` over the last axis of a (rows, n) array, with `vector_math.exp`: the loops over a
    row are unit-stride and call nothing, so they vectorise (MultiHeadAttention's softmax over 32x4x64x64
    scores took 6 ms a step with the C library's expf, 23% of a transformer block's step). The exponential
    is computed once a value (stored, then divided by the sum), as `_softmax_row` rounds it."""
    n = x.shape[1]
    for o in range(x.shape[0]):
        m = x[o, 0]
        for j in range(1, n):
            m = max(m, x[o, j])
        for j in range(n):  # no reduction in this loop: it vectorises
            y[o, j] = np.float32(vector_math.exp(np.float64(x[o, j] - m)))
        s = 0.0
        for j in range(n):
            s += y[o, j]
        if log:
            lse = m + math.log(s)
            for j in range(n):
                y[o, j] = x[o, j] - lse
        else:
            for j in range(n):
                y[o, j] = y[o, j] / s


def _forward_any(x: np.ndarray, y: np.ndarray, axis: int, log: bool, who: str) -> None:
    x3, y3 = _as3(x, axis), _out3(y, axis, who)
    if x3.shape[2] == 1 and x3.shape[1] > 0 and x3.dtype == y3.dtype == np.float32:  # last axis, float32
        _forward_last(x3.reshape(x3.shape[0], x3.shape[1]), y3.reshape(y3.shape[0], y3.shape[1]), log)
    else:
        _forward(x3, y3, log)


def softmax_forward_cpu(x: np.ndarray, y: np.ndarray, axis: int = -1) -> None:
    """``y = exp(x) / sum(exp(x), axis)`` (max-shifted)."""
    _forward_any(x, y, axis, False, "softmax_forward_cpu")


def softmax_backward_cpu(y: np.ndarray, dy: np.ndarray, dx: np.ndarray, axis: int = -1,
                         accumulate: bool = False) -> None:
    """``dx (+)= y * (dy - sum(dy * y, axis))`` from the forward output `y`."""
    _backward(_as3(y, axis), _as3(dy, axis), _out3(dx, axis, "softmax_backward_cpu"), False, accumulate)


def log_softmax_forward_cpu(x: np.ndarray, y: np.ndarray, axis: int = -1) -> None:
    """``y = x - logsumexp(x, axis)``."""
    _forward_any(x, y, axis, True, "log_softmax_forward_cpu")


def log_softmax_backward_cpu(y: np.ndarray, dy: np.ndarray, dx: np.ndarray, axis: int = -1,
                             accumulate: bool = False) -> None:
    """``dx (+)= dy - exp(y) * sum(dy, axis)`` from the forward output `y`."""
    _backward(_as3(y, axis), _as3(dy, axis), _out3(dx, axis, "log_softmax_backward_cpu"), True, accumulate)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import softmax as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
