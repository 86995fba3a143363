"""The CPU loops that apply an activation over arrays, and its derivative: element-wise (the Activation
layer, a convolution's fused activation) and fused with a bias over a GEMM's rows (Dense).

Each hot activation has a forward and a backward function of its own, compiled by Numba the first time
that activation runs. Inside a loop the code is then a constant: no branch per value, so LLVM vectorises
it (a loop that branches on the code per value cost 5x more). The other activations share one loop
that branches per value (`_forward_any`, `_backward_any`). Before, one function held every activation's
loop, and each first call compiled them all: a Dense(relu)'s first forward and backward took 26 s of
compilation with a cold cache, against about 2 s now.

All loops take 2-D (rows, cols) arrays; element-wise callers pass (1, n) views. Forward:
``dst = act(src + b)``, b None for no bias, and with ``keep_src`` src keeps the biased pre-activation.
Backward: ``dx (+)= dy * act'(x, y)``, and when ``db`` is given (Dense) ``db[j] = sum_i dx[i, j]`` in
float64 in the same pass. `_forward`/`_backward` are the loop templates, inlined into each function
with that activation's scalar function; b None and db None are compiled as separate specialisations.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._jit import cpu_jit, flat_in, flat_out
from kernels.activations import (
    _NUMPY_FORWARD,
    ELU,
    GELU,
    LEAKY_RELU,
    LINEAR,
    RELU,
    RELU6,
    SELU,
    SELU_ALPHA,
    SELU_SCALE,
    SIGMOID,
    SILU,
    SOFTPLUS,
    TANH,
    Activation,
    _grad,
    _value,
    elu_value,
    gelu_grad,
    gelu_value,
    numpy_forward_inplace,
    silu_grad,
    silu_value,
    softplus_grad,
    softplus_value,
)

_inline = njit(inline="always")


@_inline
def _forward(src, b, dst, keep_src, fn, p0, p1, p2):
    rows, cols = src.shape
    if b is None:
        for i in range(rows):
            for j in range(cols):
                dst[i, j] = fn(src[i, j], p0, p1, p2)
    elif keep_src:
        for i in range(rows):
            for j in range(cols):
                v = src[i, j] + b[j]
                src[i, j] = v
                dst[i, j] = fn(v, p0, p1, p2)
    else:
        for i in range(rows):
            for j in range(cols):
                dst[i, j] = fn(src[i, j] + b[j], p0, p1, p2)


@_inline
def _backward(dy, x, y, dx, db, accumulate, fn, p0, p1, p2):
    # fn(dy, x, y, ...) is dy * act'(x, y)
    rows, cols = dy.shape
    if db is not None:
        for j in range(cols):
            db[j] = 0.0
        for i in range(rows):
            for j in range(cols):
                g = fn(dy[i, j], x[i, j], y[i, j], p0, p1, p2)
                dx[i, j] = g
                db[j] += g
    elif accumulate:
        for i in range(rows):
            for j in range(cols):
                dx[i, j] += fn(dy[i, j], x[i, j], y[i, j], p0, p1, p2)
    else:
        for i in range(rows):
            for j in range(cols):
                dx[i, j] = fn(dy[i, j], x[i, j], y[i, j], p0, p1, p2)


# Scalar functions: value(v, p0, p1, p2) and dy * derivative(dy, x, y, p0, p1, p2). The *32 ones use
# `vector_math` (see activations.gelu_value, ...) and serve float32 outputs only; float64 keeps the C
# library's functions through `_value`/`_grad`. The one-line ones repeat `_act_value`/`_act_grad`'s
# branch for their code: inlining those whole functions cost 3.5 s of compilation per loop (every
# branch is typed), and test_activation_loops checks each against them, special values included.
@_inline
def _v_linear(v, p0, p1, p2):
    return v


@_inline
def _v_relu_plain(v, p0, p1, p2):
    return v if v > 0 else 0


@_inline
def _v_relu(v, p0, p1, p2):  # negative_slope p0, max_value p1, threshold p2
    return min(v, p1) if v > p2 else (p0 * (v - p2) if p0 != 0.0 else 0.0)


@_inline
def _v_leaky(v, p0, p1, p2):
    return v if v > 0 else p0 * v


@_inline
def _v_relu6(v, p0, p1, p2):
    return min(max(v, 0.0), 6.0)


@_inline
def _v_gelu32(v, p0, p1, p2):
    return gelu_value(v)


@_inline
def _v_silu32(v, p0, p1, p2):
    return silu_value(v)


@_inline
def _v_softplus32(v, p0, p1, p2):
    return softplus_value(v)


@_inline
def _v_elu32(v, p0, p1, p2):
    return elu_value(v, p0)


@_inline
def _v_selu32(v, p0, p1, p2):
    return SELU_SCALE * elu_value(v, SELU_ALPHA)


@_inline
def _g_relu_plain(d, x, y, p0, p1, p2):  # dy * 0 where x <= 0: NaN for a NaN dy, as TensorFlow's ReluGrad
    return d * (1.0 if x > 0 else 0.0)


@_inline
def _g_relu_fused(d, x, y, p0, p1, p2):  # 0 where x <= 0 whatever dy holds, as the convolutions' fused ReLU
    return d if x > 0 else 0


@_inline
def _g_relu(d, x, y, p0, p1, p2):
    return d * ((1.0 if x <= p1 else 0.0) if x > p2 else p0)


@_inline
def _g_leaky(d, x, y, p0, p1, p2):
    return d * (1.0 if y > 0 else p0)


@_inline
def _g_relu6(d, x, y, p0, p1, p2):
    return d * (1.0 if 0.0 < y < 6.0 else 0.0)


@_inline
def _g_sigmoid(d, x, y, p0, p1, p2):
    return d * (y * (1.0 - y))


@_inline
def _g_tanh(d, x, y, p0, p1, p2):
    return d * (1.0 - y * y)


@_inline
def _g_elu(d, x, y, p0, p1, p2):
    return d * (1.0 if y > 0 else y + p0)


@_inline
def _g_selu(d, x, y, p0, p1, p2):
    return d * (SELU_SCALE if y >= 0 else y + SELU_SCALE * SELU_ALPHA)


@_inline
def _g_gelu32(d, x, y, p0, p1, p2):
    return d * gelu_grad(x)


@_inline
def _g_silu32(d, x, y, p0, p1, p2):
    return d * silu_grad(x)


@_inline
def _g_softplus32(d, x, y, p0, p1, p2):  # from the output: fused ops keep no pre-activation for softplus
    return d * softplus_grad(y)


# One compiled function per activation and direction.
@cpu_jit
def _f_linear(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_linear, p0, p1, p2)


@cpu_jit
def _f_relu_plain(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_relu_plain, p0, p1, p2)


@cpu_jit
def _f_relu(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_relu, p0, p1, p2)


@cpu_jit
def _f_leaky(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_leaky, p0, p1, p2)


@cpu_jit
def _f_relu6(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_relu6, p0, p1, p2)


@cpu_jit
def _f_gelu32(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_gelu32, p0, p1, p2)


@cpu_jit
def _f_silu32(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_silu32, p0, p1, p2)


@cpu_jit
def _f_softplus32(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_softplus32, p0, p1, p2)


@cpu_jit
def _f_elu32(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_elu32, p0, p1, p2)


@cpu_jit
def _f_selu32(src, b, dst, keep_src, p0, p1, p2):
    _forward(src, b, dst, keep_src, _v_selu32, p0, p1, p2)


@cpu_jit
def _b_relu_plain(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_relu_plain, p0, p1, p2)


@cpu_jit
def _b_relu_fused(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_relu_fused, p0, p1, p2)


@cpu_jit
def _b_relu(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_relu, p0, p1, p2)


@cpu_jit
def _b_leaky(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_leaky, p0, p1, p2)


@cpu_jit
def _b_relu6(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_relu6, p0, p1, p2)


@cpu_jit
def _b_sigmoid(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_sigmoid, p0, p1, p2)


@cpu_jit
def _b_tanh(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_tanh, p0, p1, p2)


@cpu_jit
def _b_elu(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_elu, p0, p1, p2)


@cpu_jit
def _b_selu(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_selu, p0, p1, p2)


@cpu_jit
def _b_gelu32(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_gelu32, p0, p1, p2)


@cpu_jit
def _b_silu32(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_silu32, p0, p1, p2)


@cpu_jit
def _b_softplus32(dy, x, y, dx, db, accumulate, p0, p1, p2):
    _backward(dy, x, y, dx, db, accumulate, _g_softplus32, p0, p1, p2)


@cpu_jit
def _forward_any(src, b, dst, keep_src, code, p0, p1, p2):
    rows, cols = src.shape
    for i in range(rows):
        for j in range(cols):
            v = src[i, j] if b is None else src[i, j] + b[j]
            if keep_src:
                src[i, j] = v
            dst[i, j] = _value(code, v, p0, p1, p2)


@cpu_jit
def _backward_any(dy, x, y, dx, db, accumulate, code, p0, p1, p2):
    rows, cols = dy.shape
    if db is not None:
        for j in range(cols):
            db[j] = 0.0
    for i in range(rows):
        for j in range(cols):
            g = dy[i, j] * _grad(code, x[i, j], y[i, j], p0, p1, p2)
            if db is not None:
                dx[i, j] = g
                db[j] += g
            elif accumulate:
                dx[i, j] += g
            else:
                dx[i, j] = g


_FORWARD = {LINEAR: _f_linear, RELU: _f_relu, LEAKY_RELU: _f_leaky, RELU6: _f_relu6}
_FORWARD_F32 = {GELU: _f_gelu32, SILU: _f_silu32, SOFTPLUS: _f_softplus32, ELU: _f_elu32, SELU: _f_selu32}
_BACKWARD = {RELU: _b_relu, LEAKY_RELU: _b_leaky, RELU6: _b_relu6, SIGMOID: _b_sigmoid, TANH: _b_tanh, ELU: _b_elu,
             SELU: _b_selu}
_BACKWARD_F32 = {GELU: _b_gelu32, SILU: _b_silu32, SOFTPLUS: _b_softplus32}


def _plain_relu(act: Activation) -> bool:
    return act.code == RELU and act.p0 == 0.0 and act.p2 == 0.0 and act.p1 == np.inf


def forward(src: np.ndarray, b: np.ndarray | None, dst: np.ndarray, keep_src: bool, act: Activation) -> None:
    """``dst = act(src + b)`` over 2-D arrays (b None: no bias); with keep_src, src becomes src + b."""
    if _plain_relu(act):
        fn = _f_relu_plain
    elif dst.dtype == np.float32 and act.code in _FORWARD_F32:
        fn = _FORWARD_F32[act.code]
    else:
        fn = _FORWARD.get(act.code)
    if fn is None:
        _forward_any(src, b, dst, keep_src, act.code, act.p0, act.p1, act.p2)
    else:
        fn(src, b, dst, keep_src, act.p0, act.p1, act.p2)


def backward(dy: np.ndarray, x: np.ndarray, y: np.ndarray, dx: np.ndarray, db: np.ndarray | None,
             accumulate: bool, act: Activation) -> None:
    """``dx (+)= dy * act'(x, y)`` over 2-D arrays; with db (float64, Dense's bias gradient), dx is
    overwritten and db gets its column sums. A fused ReLU (with db) gives 0 where x <= 0 even for a NaN or
    inf dy, as the convolutions' fused ReLU backward (`_conv_cpu.grad_rows`, Winograd's `grad_transform`);
    TensorFlow's ReluGrad and the element-wise loop multiply (NaN). Changing that means changing them all
    together, the CUDA kernels included."""
    if _plain_relu(act):
        fn = _b_relu_plain if db is None else _b_relu_fused
    elif dx.dtype == np.float32 and act.code in _BACKWARD_F32:
        fn = _BACKWARD_F32[act.code]
    else:
        fn = _BACKWARD.get(act.code)
    if fn is None:
        _backward_any(dy, x, y, dx, db, accumulate, act.code, act.p0, act.p1, act.p2)
    else:
        fn(dy, x, y, dx, db, accumulate, act.p0, act.p1, act.p2)


def activation_forward_cpu(x: np.ndarray, y: np.ndarray, act: Activation) -> None:
    """``y = act(x)`` element-wise; `y` is a preallocated array of x's shape (may be `x` itself)."""
    yf = flat_out(y, "activation_forward_cpu")
    if act.code == LINEAR:
        if y is not x:
            np.copyto(y, x)
    elif act.code in _NUMPY_FORWARD:
        if y is not x:
            np.copyto(y, x)
        numpy_forward_inplace(yf, act.code)
    else:
        forward(flat_in(x).reshape(1, -1), None, yf.reshape(1, -1), False, act)


def activation_backward_cpu(x: np.ndarray, y: np.ndarray, dy: np.ndarray, dx: np.ndarray, act: Activation,
                            accumulate: bool = False) -> None:
    """``dx (+)= dy * act'(x)``, reading the forward input `x` and output `y`."""
    dxf = flat_out(dx, "activation_backward_cpu").reshape(1, -1)
    backward(flat_in(dy).reshape(1, -1), flat_in(x).reshape(1, -1), flat_in(y).reshape(1, -1), dxf, None,
             accumulate, act)
