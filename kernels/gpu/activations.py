"""CUDA twins of `kernels.activations`: element-wise forward and backward over flat arrays."""

from __future__ import annotations

from numba import cuda

from kernels.activations import Activation, _act_grad, _act_value
from kernels.gpu import flat, launch
from kernels.gpu.scalar_source import device_function

act_value = device_function(_act_value)
act_grad = device_function(_act_grad)


@cuda.jit
def _forward(x, y, code, p0, p1, p2):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = act_value(code, x[i], p0, p1, p2)


@cuda.jit
def _backward(x, y, dy, dx, code, p0, p1, p2, accumulate):
    i = cuda.grid(1)
    if i < x.size:
        g = dy[i] * act_grad(code, x[i], y[i], p0, p1, p2)
        if accumulate:
            dx[i] += g
        else:
            dx[i] = g


def activation_forward_cuda(x, y, act: Activation) -> None:
    """``y = act(x)`` on device arrays of one shape."""
    launch(_forward, x.size, flat(x), flat(y), act.code, act.p0, act.p1, act.p2)


def activation_backward_cuda(x, y, dy, dx, act: Activation, accumulate: bool = False) -> None:
    """``dx (+)= dy * act'(x)`` on device arrays."""
    launch(_backward, x.size, flat(x), flat(y), flat(dy), flat(dx), act.code, act.p0, act.p1, act.p2,
           accumulate)
