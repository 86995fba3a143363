"""CUDA twins of `kernels.activations`: element-wise forward and backward over flat arrays."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.activations import Activation, _act_grad, _act_value
from kernels.gpu import flat, launch, per_dtype
from kernels.gpu.scalar_source import device_function

_PLAIN = (cuda.jit(device=True)(_act_value), cuda.jit(device=True)(_act_grad))
_FLOAT32 = (device_function(_act_value), device_function(_act_grad))


def scalar_functions(dtype):
    """(value, gradient) device functions for data of `dtype`: float32 data gets the versions with
    float32 constants (no f64 instructions), float64 data the exact constants."""
    return _FLOAT32 if np.dtype(str(dtype)) == np.float32 else _PLAIN


def _build(dt):
    value, grad = scalar_functions(dt)

    @cuda.jit
    def forward(x, y, code, p0, p1, p2):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = value(code, x[i], p0, p1, p2)

    @cuda.jit
    def backward(x, y, dy, dx, code, p0, p1, p2, accumulate):
        i = cuda.grid(1)
        if i < x.size:
            g = dy[i] * grad(code, x[i], y[i], p0, p1, p2)
            if accumulate:
                dx[i] += g
            else:
                dx[i] = g

    return forward, backward


def _kernels(dtype):
    return per_dtype("activation", dtype, _build)


def cuda_kernels() -> dict[str, object]:
    """The per-dtype kernels (see kernels.gpu.signatures)."""
    return {f"{name}[{dt}]": k for dt in ("float32", "float64")
            for name, k in zip(("forward", "backward"), _kernels(dt), strict=True)}


def activation_forward_cuda(x, y, act: Activation) -> None:
    """``y = act(x)`` on device arrays of one shape."""
    launch(_kernels(x.dtype)[0], x.size, flat(x), flat(y), act.code, act.p0, act.p1, act.p2)


def activation_backward_cuda(x, y, dy, dx, act: Activation, accumulate: bool = False) -> None:
    """``dx (+)= dy * act'(x)`` on device arrays."""
    launch(_kernels(x.dtype)[1], x.size, flat(x), flat(y), flat(dy), flat(dx), act.code, act.p0, act.p1, act.p2,
           accumulate)
