"""The activation table and the activations' scalar functions.

An activation is named by an `Activation` value: an integer code and three float parameters.
`act_value`/`act_grad` are plain scalar functions compiled twice: by Numba for the CPU loops and as
CUDA device functions in `kernels.gpu.activations`. `act_grad(code, x, y, ...)` is dy/dx given the input
`x` and output `y`; for the codes in `FROM_OUTPUT` it reads only `y`, so a fused Dense can run its
backward without keeping the pre-activation. The CPU loops over arrays, element-wise
(`activation_forward_cpu`/`activation_backward_cpu`, reached from here too) and fused with a bias, are
in `kernels.activation_loops`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from kernels import vector_math
from kernels._jit import cpu_jit

LINEAR, RELU, LEAKY_RELU, RELU6, ELU, SELU, GELU, GELU_TANH, SIGMOID, HARD_SIGMOID = range(10)
TANH, SOFTPLUS, SOFTSIGN, SILU, EXPONENTIAL, HARD_SILU, MISH, LOG_SIGMOID, HARD_TANH, CELU = range(10, 20)
TANH_SHRINK, SQUAREPLUS, SOFT_SHRINK, HARD_SHRINK, SPARSE_PLUS, SPARSE_SIGMOID, THRESHOLD = range(20, 27)

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805
_SQRT_2_OVER_PI = 0.7978845608028654
_INV_SQRT_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


class Activation(NamedTuple):
    """An activation as the kernels take it: a code from this module and its parameters."""

    code: int
    p0: float = 0.0
    p1: float = 0.0
    p2: float = 0.0


# name -> (code, ((param, default), ...)); parameters map to p0, p1, p2 in order.
_TABLE: dict[str, tuple[int, tuple[tuple[str, float | None], ...]]] = {
    "linear": (LINEAR, ()),
    "relu": (RELU, (("negative_slope", 0.0), ("max_value", None), ("threshold", 0.0))),
    "leaky_relu": (LEAKY_RELU, (("negative_slope", 0.2),)),
    "relu6": (RELU6, ()),
    "elu": (ELU, (("alpha", 1.0),)),
    "selu": (SELU, ()),
    "gelu": (GELU, (("approximate", False),)),
    "sigmoid": (SIGMOID, ()),
    "hard_sigmoid": (HARD_SIGMOID, ()),
    "tanh": (TANH, ()),
    "softplus": (SOFTPLUS, ()),
    "softsign": (SOFTSIGN, ()),
    "silu": (SILU, ()),
    "swish": (SILU, ()),
    "exponential": (EXPONENTIAL, ()),
    "hard_silu": (HARD_SILU, ()),
    "hard_swish": (HARD_SILU, ()),
    "mish": (MISH, ()),
    "log_sigmoid": (LOG_SIGMOID, ()),
    "hard_tanh": (HARD_TANH, ()),
    "celu": (CELU, (("alpha", 1.0),)),
    "tanh_shrink": (TANH_SHRINK, ()),
    "squareplus": (SQUAREPLUS, (("b", 4.0),)),
    "soft_shrink": (SOFT_SHRINK, (("threshold", 0.5),)),
    "hard_shrink": (HARD_SHRINK, (("threshold", 0.5),)),
    "sparse_plus": (SPARSE_PLUS, ()),
    "sparse_sigmoid": (SPARSE_SIGMOID, ()),
    "threshold": (THRESHOLD, (("threshold", None), ("default_value", None))),
}
ACTIVATION_NAMES = tuple(sorted(_TABLE))

# (sparse_sigmoid's derivative reads its input: `_act_grad`)
_FROM_OUTPUT = frozenset({LINEAR, RELU6, SELU, SIGMOID, HARD_SIGMOID, TANH, SOFTPLUS, SOFTSIGN,
                          EXPONENTIAL, HARD_TANH})


def resolve_activation(name: str, **params) -> Activation:
    """The `Activation` for a Keras activation name and its keyword parameters.

    Args:
        name: a Keras 3 activation name (``"relu"``, ``"gelu"``, ``"swish"``, ...).
        **params: that activation's parameters (``negative_slope``, ``max_value``, ``alpha``, ...).

    Raises:
        ValueError: for an unknown name or parameter, naming the valid ones.
    """
    if name not in _TABLE:
        raise ValueError(f"Unknown activation '{name}'. Valid names: {', '.join(ACTIVATION_NAMES)}.")
    code, spec = _TABLE[name]
    known = {p for p, _ in spec}
    extra = set(params) - known
    if extra:
        raise ValueError(f"Activation '{name}' takes parameters {sorted(known) or 'none'}, received "
                         f"unknown {sorted(extra)}.")
    values = []
    for pname, default in spec:
        v = params.get(pname, default)
        if v is None and pname == "max_value":
            v = math.inf
        if v is None:
            raise ValueError(f"Activation '{name}' needs the parameter '{pname}'.")
        values.append(float(v))
    if code == GELU:
        return Activation(GELU_TANH if values[0] else GELU)
    if code == RELU and values[0] == 0.0 and values[2] == 0.0 and values[1] == 6.0:
        return Activation(RELU6)
    return Activation(code, *values)


def grad_from_output(act: Activation) -> bool:
    """Whether `act_grad` needs only the output (so a fused op need not keep the pre-activation)."""
    if act.code in _FROM_OUTPUT:
        return True
    if act.code == RELU:
        return act.p0 == 0.0 and act.p2 == 0.0 and act.p1 == math.inf
    if act.code in (LEAKY_RELU, ELU):
        return act.p0 > 0.0
    return False


def _act_value(code, x, p0, p1, p2):
    if code == LINEAR:
        return x
    if code == RELU:
        return min(x, p1) if x > p2 else (p0 * (x - p2) if p0 != 0.0 else 0.0)
    if code == LEAKY_RELU:
        return x if x > 0 else p0 * x
    if code == RELU6:
        return min(max(x, 0.0), 6.0)
    if code == ELU:
        return x if x > 0 else p0 * math.expm1(x)
    if code == SELU:
        return SELU_SCALE * x if x > 0 else SELU_SCALE * SELU_ALPHA * math.expm1(x)
    if code == GELU:
        return 0.5 * x * (1.0 + math.erf(x * _INV_SQRT_2))
    if code == GELU_TANH:
        return 0.5 * x * (1.0 + math.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    if code == SIGMOID:
        e = math.exp(-abs(x))
        return 1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e)
    if code == HARD_SIGMOID:
        return min(max(x + 3.0, 0.0), 6.0) / 6.0
    if code == TANH:
        return math.tanh(x)
    if code == SOFTPLUS:
        return max(x, 0.0) + math.log1p(math.exp(-abs(x)))
    if code == SOFTSIGN:
        return x / (1.0 + abs(x))
    if code == SILU:
        e = math.exp(-abs(x))
        return x / (1.0 + e) if x >= 0 else x * e / (1.0 + e)
    if code == EXPONENTIAL:
        return math.exp(x)
    if code == HARD_SILU:
        return x * min(max(x + 3.0, 0.0), 6.0) / 6.0
    if code == MISH:
        return x * math.tanh(max(x, 0.0) + math.log1p(math.exp(-abs(x))))
    if code == LOG_SIGMOID:
        return min(x, 0.0) - math.log1p(math.exp(-abs(x)))
    if code == HARD_TANH:
        return min(max(x, -1.0), 1.0)
    if code == CELU:
        return max(x, 0.0) + p0 * math.expm1(min(x, 0.0) / p0)
    if code == TANH_SHRINK:
        return x - math.tanh(x)
    if code == SQUAREPLUS:
        return 0.5 * (x + math.sqrt(x * x + p0))
    if code == SOFT_SHRINK:
        return x - p0 if x > p0 else (x + p0 if x < -p0 else 0.0)
    if code == HARD_SHRINK:
        return x if abs(x) > p0 else 0.0
    if code == SPARSE_PLUS:
        return 0.0 if x <= -1.0 else (0.25 * (x + 1.0) * (x + 1.0) if x < 1.0 else x)
    if code == SPARSE_SIGMOID:
        return 0.0 if x <= -1.0 else (1.0 if x >= 1.0 else 0.5 * (x + 1.0))
    return x if x > p0 else p1  # THRESHOLD


def _act_grad(code, x, y, p0, p1, p2):
    if code == LINEAR:
        return 1.0
    if code == RELU:
        return (1.0 if x <= p1 else 0.0) if x > p2 else p0
    if code == LEAKY_RELU:
        return 1.0 if y > 0 else p0
    if code == RELU6:
        return 1.0 if 0.0 < y < 6.0 else 0.0
    if code == ELU:
        return 1.0 if y > 0 else y + p0
    if code == SELU:  # TensorFlow's SeluGrad: the linear branch for outputs >= 0 (x = 0 and -0.0 included)
        return SELU_SCALE if y >= 0 else y + SELU_SCALE * SELU_ALPHA
    if code == GELU:
        return 0.5 * (1.0 + math.erf(x * _INV_SQRT_2)) + x * _INV_SQRT_2PI * math.exp(-0.5 * x * x)
    if code == GELU_TANH:
        t = math.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 0.134145 * x * x)
    if code == SIGMOID:
        return y * (1.0 - y)
    if code == HARD_SIGMOID:
        return 1.0 / 6.0 if 0.0 < y < 1.0 else 0.0
    if code == TANH:
        return 1.0 - y * y
    if code == SOFTPLUS:
        return -math.expm1(-y)
    if code == SOFTSIGN:
        return (1.0 - abs(y)) * (1.0 - abs(y))
    if code == SILU:
        e = math.exp(-abs(x))
        s = 1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e)
        return s * (1.0 + x * (1.0 - s))
    if code == EXPONENTIAL:
        return y
    if code == HARD_SILU:
        return 0.0 if x < -3.0 else (1.0 if x > 3.0 else (2.0 * x + 3.0) / 6.0)
    if code == MISH:
        e = math.exp(-abs(x))
        t = math.tanh(max(x, 0.0) + math.log1p(e))
        return t + x * (1.0 - t * t) * (1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e))
    if code == LOG_SIGMOID:
        e = math.exp(-abs(x))
        return e / (1.0 + e) if x >= 0 else 1.0 / (1.0 + e)
    if code == HARD_TANH:
        return 1.0 if -1.0 < y < 1.0 else 0.0
    if code == CELU:
        return 1.0 if x > 0 else math.exp(x / p0)
    if code == TANH_SHRINK:
        t = math.tanh(x)
        return t * t
    if code == SQUAREPLUS:
        return 0.5 * (1.0 + x / math.sqrt(x * x + p0))
    if code == SOFT_SHRINK or code == HARD_SHRINK:
        return 1.0 if abs(x) > p0 else 0.0
    if code == SPARSE_PLUS:
        return 0.0 if x <= -1.0 else (0.5 * (x + 1.0) if x < 1.0 else 1.0)
    if code == SPARSE_SIGMOID:
        return 0.5 if -1.0 < x < 1.0 else 0.0
    return 1.0 if x > p0 else 0.0  # THRESHOLD


act_value = cpu_jit(_act_value)
act_grad = cpu_jit(_act_grad)
# Inlined copies for the loops below: a constant code folds the dispatch away and lets LLVM vectorise.
_value = njit(inline="always")(_act_value)
_grad = njit(inline="always")(_act_grad)
# The plain sources, compiled again as CUDA device functions (they call nothing but `math`).
SCALAR_SOURCES = (_act_value, _act_grad)


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def gelu_value(x):
    """GELU as `_act_value` computes it, with `vector_math.erf`: the CPU loops' GELU into float32 outputs,
    which LLVM vectorises (19 -> 5-6 ns a value; the same float32 results but a few in a million, by one
    unit). Float64 outputs keep the C library's erf (this one is within 1e-11, not float64's 1e-16)."""
    v = np.float64(x)
    return 0.5 * v * (1.0 + vector_math.erf(v * _INV_SQRT_2))


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def gelu_grad(x):
    """GELU's derivative as `_act_grad` computes it, with `vector_math`."""
    v = np.float64(x)
    # vector_math.exp clamps at e^-708, so beyond |x| = 38 (where the C library's e^(-x*x/2) is 0 or a
    # denormal that adds nothing) the density is 0: x * 0 then keeps NaN at +-inf, as act_grad and TensorFlow
    pdf = vector_math.exp(-0.5 * v * v) if abs(v) < 38.0 else 0.0
    return 0.5 * (1.0 + vector_math.erf(v * _INV_SQRT_2)) + v * _INV_SQRT_2PI * pdf

@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def silu_value(x):
    """SiLU (swish) with `vector_math.exp`, for the CPU loops into float32 outputs (13 ns a value with the
    C library's exp; `_act_value`'s form for float64 outputs)."""
    v = np.float64(x)
    # below -708 vector_math.exp clamps; x * 0 keeps the C library's sign of zero and NaN at -inf
    return v / (1.0 + vector_math.exp(-v)) if v > -708.0 else v * 0.0


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def silu_grad(x):
    """SiLU's derivative s (1 + x (1 - s)), s = sigmoid(x), with `vector_math.exp`."""
    v = np.float64(x)
    s = 1.0 / (1.0 + vector_math.exp(-v)) if v > -708.0 else 0.0
    return s * (1.0 + v * (1.0 - s))


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def elu_value(x, alpha):
    """ELU with `vector_math.exp` for float32 outputs: alpha (e^x - 1) below 0, where e^x - 1 is taken
    from its Taylor terms x + x^2/2 for |x| < 1e-5 (the subtraction would lose x's digits there)."""
    v = np.float64(x)
    em1 = vector_math.exp(v) - 1.0
    em1 = v * (1.0 + 0.5 * v) if abs(v) < 1e-5 else em1  # keeps -0.0 as expm1 does
    return v if v > 0.0 else alpha * em1


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def softplus_value(x):
    """softplus max(x, 0) + log1p(e^-|x|) with `vector_math` (21 ns a value with the C library)."""
    v = np.float64(x)
    return max(v, 0.0) + vector_math.log1p01(vector_math.exp(-abs(v)))


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def softplus_grad(y):
    """softplus' derivative from its output y, -expm1(-y) as `_act_grad` (softplus is in _FROM_OUTPUT: the
    fused ops keep no pre-activation), with `vector_math.exp`; below y = 1e-5 from expm1's Taylor terms
    y - y^2/2, where 1 - e^-y would lose y's digits."""
    v = np.float64(y)
    return 1.0 - vector_math.exp(-v) if v > 1e-5 else v * (1.0 - 0.5 * v)


# Transcendental activations whose NumPy ufuncs (SIMD float32) beat a scalar Numba loop (measured: tanh
# on 64x512 float32 85 us with NumPy vs 590 us in Numba; sigmoid 60 us vs 315 us).
_NUMPY_FORWARD = frozenset({SIGMOID, TANH, EXPONENTIAL})


def numpy_forward_inplace(y: np.ndarray, code: int) -> None:
    """Apply one of the `_NUMPY_FORWARD` activations to `y` in place with NumPy ufuncs."""
    if code == TANH:
        np.tanh(y, out=y)
    elif code == EXPONENTIAL:
        np.exp(y, out=y)
    else:
        with np.errstate(over="ignore"):
            np.negative(y, out=y)
            np.exp(y, out=y)
            y += 1
            np.reciprocal(y, out=y)


def __getattr__(name: str):
    if name in ("activation_forward_cpu", "activation_backward_cpu"):  # their loops import this module
        from kernels import activation_loops

        return getattr(activation_loops, name)
    if name in ("activation_forward_cuda", "activation_backward_cuda"):
        from kernels.gpu import activations as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
