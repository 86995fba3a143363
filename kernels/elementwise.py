"""Element-wise kernels: binary ops with NumPy broadcasting, unary math, comparisons and casts.

On the CPU these are NumPy ufuncs with ``out=`` (SIMD loops that a scalar Numba loop does not beat).
Backward reduces the broadcast gradient back to each operand's shape (`sum_to_shape`). Gradient
conventions follow TensorFlow: maximum sends the gradient to `a` where ``a >= b``, minimum where
``a <= b``; clip passes it on the closed interval; abs uses sign(x) (0 at 0).

`NON_NUMPY_UNARY` holds the unary functions NumPy has no ufunc for (erf, erfinv): the same kernels and
codes, named apart because NumPy cannot be their reference. Their scalar formulas (`erfinv_scalar`) are
compiled by Numba for the CPU loop here and as CUDA device functions in `kernels.gpu.elementwise`.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit, flat_in, flat_out

ADD, SUBTRACT, MULTIPLY, DIVIDE, MAXIMUM, MINIMUM, POWER = range(7)
BINARY = {"add": ADD, "subtract": SUBTRACT, "multiply": MULTIPLY, "divide": DIVIDE, "maximum": MAXIMUM,
          "minimum": MINIMUM, "power": POWER}
_BINARY_UFUNC = {ADD: np.add, SUBTRACT: np.subtract, MULTIPLY: np.multiply, DIVIDE: np.divide,
                 MAXIMUM: np.maximum, MINIMUM: np.minimum, POWER: np.power}

(NEGATIVE, SQUARE, SQRT, EXP, LOG, ABS, SIGN, RECIPROCAL, LOG1P, EXPM1, SIN, COS, FLOOR, CEIL, ROUND,
 RSQRT, CLIP, IDENTITY, STOP_GRADIENT, ARCTAN, ERF, ERFINV) = range(22)
UNARY = {"negative": NEGATIVE, "square": SQUARE, "sqrt": SQRT, "exp": EXP, "log": LOG, "abs": ABS,
         "sign": SIGN, "reciprocal": RECIPROCAL, "log1p": LOG1P, "expm1": EXPM1, "sin": SIN, "cos": COS,
         "floor": FLOOR, "ceil": CEIL, "round": ROUND, "rsqrt": RSQRT, "clip": CLIP, "identity": IDENTITY,
         "stop_gradient": STOP_GRADIENT, "arctan": ARCTAN}
NON_NUMPY_UNARY = {"erf": ERF, "erfinv": ERFINV}
_UNARY_UFUNC = {NEGATIVE: np.negative, SQUARE: np.square, SQRT: np.sqrt, EXP: np.exp, LOG: np.log,
                ABS: np.abs, SIGN: np.sign, RECIPROCAL: np.reciprocal, LOG1P: np.log1p, EXPM1: np.expm1,
                SIN: np.sin, COS: np.cos, FLOOR: np.floor, CEIL: np.ceil, ROUND: np.rint, ARCTAN: np.arctan}
_TWO_OVER_SQRT_PI = 1.1283791670955126
ZERO_GRAD_UNARY = frozenset({SIGN, FLOOR, CEIL, ROUND, STOP_GRADIENT})

COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
           "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
           "logical_and": np.logical_and, "logical_or": np.logical_or}


def sum_to_shape(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a broadcast gradient `g` down to `shape` (NumPy broadcasting rules in reverse)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes).reshape(shape)


def _store(out: np.ndarray, value: np.ndarray, accumulate: bool) -> None:
    value = sum_to_shape(value, out.shape)
    if accumulate:
        out += value
    else:
        np.copyto(out, value, casting="same_kind")


def binary_forward_cpu(code: int, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
    """``y = a (op) b`` with broadcasting; `y` has the broadcast shape. IEEE results for a division by zero
    or an overflow (1/0 inf, 0/0 nan) without NumPy's RuntimeWarnings, as TensorFlow."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        _BINARY_UFUNC[code](a, b, out=y)


def binary_backward_cpu(code: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, dy: np.ndarray,
                        da: np.ndarray | None, db: np.ndarray | None,
                        accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of `binary_forward_cpu` w.r.t. a and b (None: not wanted), reduced to their shapes."""
    if da is not None:
        if code in (ADD, SUBTRACT):
            ga = dy
        elif code == MULTIPLY:
            ga = dy * b
        elif code == DIVIDE:
            ga = dy / b
        elif code == MAXIMUM:
            ga = dy * (a >= b)
        elif code == MINIMUM:
            ga = dy * (a <= b)
        else:
            ga = dy * b * np.power(a, b - 1)
        _store(da, ga, accumulate[0])
    if db is not None:
        if code == ADD:
            gb = dy
        elif code == SUBTRACT:
            gb = -dy
        elif code == MULTIPLY:
            gb = dy * a
        elif code == DIVIDE:
            gb = -dy * y / b
        elif code == MAXIMUM:
            gb = dy * (a < b)
        elif code == MINIMUM:
            gb = dy * (a > b)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = np.where(a > 0, dy * y * np.log(np.where(a > 0, a, 1)), 0)
        _store(db, gb, accumulate[1])


def erfinv_scalar(x):
    """The inverse error function: Giles' single-precision polynomials ("Approximating the erfinv function",
    2010) or, closer to +-1 than float32 resolves, the tail's asymptotic form, refined by two Halley steps on
    erf (through erfc near +-1, where erf - x would cancel); float64 on the CPU, within 1e-15 relative."""
    a = abs(x)
    if not a < 1.0:
        if a == 1.0:
            return x / 0.0  # +-inf (the kernels compile with NumPy's error model)
        return (x - x) / 0.0  # NaN for |x| > 1 and NaN
    w = -math.log((1.0 - a) * (1.0 + a))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
        y = p * a
    elif w < 16.0:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
        y = p * a
    else:  # 1 - a ~ exp(-y^2) / (y sqrt(pi)): solve y^2 = w - log(y sqrt(pi) / 2) by two fixed-point steps
        y = math.sqrt(w)
        y = math.sqrt(w - math.log(0.886226925452758 * y))
        y = math.sqrt(w - math.log(0.886226925452758 * y))
    for _ in range(2):
        r = (1.0 - a) - math.erfc(y) if a > 0.5 else math.erf(y) - a  # erf(y) - a
        y = y - r / (1.1283791670955126 * math.exp(-y * y) + y * r)
    return math.copysign(y, x)


_erfinv_cpu = cpu_jit(erfinv_scalar)


@cpu_jit
def _non_numpy_forward(code, x, y):
    for i in range(x.size):
        v = float(x[i])  # float64 arithmetic, rounded once at the store
        y[i] = math.erf(v) if code == ERF else _erfinv_cpu(v)


def unary_forward_cpu(code: int, x: np.ndarray, y: np.ndarray, lo: float = 0.0, hi: float = 0.0) -> None:
    """``y = f(x)`` for a `UNARY` or `NON_NUMPY_UNARY` code (`lo`/`hi` are clip's bounds). IEEE results at the
    poles and outside the domain (rsqrt(0) inf, log(-1) nan) without NumPy's RuntimeWarnings, as TensorFlow."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        _unary_forward_cpu(code, x, y, lo, hi)


def _unary_forward_cpu(code: int, x: np.ndarray, y: np.ndarray, lo: float, hi: float) -> None:
    if code in (ERF, ERFINV):
        _non_numpy_forward(code, flat_in(x), flat_out(y, "unary_forward_cpu"))
    elif code == CLIP:
        if y.dtype.kind in "iu":  # integer data (ids clipped before an Embedding): NumPy clips in float64
            np.copyto(y, np.clip(x, lo, hi), casting="unsafe")
        else:
            np.clip(x, lo, hi, out=y)
    elif code in (IDENTITY, STOP_GRADIENT):
        np.copyto(y, x)
    elif code == RSQRT:
        np.sqrt(x, out=y)
        np.reciprocal(y, out=y)
    else:
        _UNARY_UFUNC[code](x, out=y)


def _zero_where_no_upstream(dy: np.ndarray, grad) -> np.ndarray:
    """TensorFlow's SqrtGrad and RsqrtGrad give 0 where the upstream gradient is 0, even at x = 0 where
    f' is infinite (Keras' l2 normalize clamps rsqrt(0) with a minimum, whose unpicked side gets dy = 0)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        g = grad()
    return np.where(dy == 0, np.zeros((), g.dtype), g)


def unary_backward_cpu(code: int, x: np.ndarray, y: np.ndarray, dy: np.ndarray, dx: np.ndarray,
                       lo: float = 0.0, hi: float = 0.0, accumulate: bool = False) -> None:
    """``dx (+)= dy * f'(x)`` for `unary_forward_cpu`."""
    if code in ZERO_GRAD_UNARY:
        if not accumulate:
            dx[...] = 0
        return
    if code == NEGATIVE:
        g = -dy
    elif code == SQUARE:
        g = 2 * dy * x
    elif code == SQRT:
        g = _zero_where_no_upstream(dy, lambda: dy * 0.5 / y)
    elif code == EXP:
        g = dy * y
    elif code == LOG:
        g = dy / x
    elif code == ABS:
        g = dy * np.sign(x)
    elif code == RECIPROCAL:
        g = -dy * y * y
    elif code == LOG1P:
        g = dy / (1 + x)
    elif code == EXPM1:
        g = dy * (y + 1)
    elif code == SIN:
        g = dy * np.cos(x)
    elif code == COS:
        g = -dy * np.sin(x)
    elif code == RSQRT:
        g = _zero_where_no_upstream(dy, lambda: -0.5 * dy * y * y * y)
    elif code == ARCTAN:
        g = dy / (1 + x * x)
    elif code == ERF:
        g = dy * _TWO_OVER_SQRT_PI * np.exp(-x * x)
    elif code == ERFINV:
        g = dy / _TWO_OVER_SQRT_PI * np.exp(y * y)
    elif code == CLIP:
        g = dy * ((x >= lo) & (x <= hi))
    else:
        g = dy
    _store(dx, g, accumulate)


def compare_forward_cpu(name: str, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
    """``y = a (cmp) b`` into a bool array (no gradient)."""
    COMPARE[name](a, b, out=y)


def cast_forward_cpu(x: np.ndarray, y: np.ndarray) -> None:
    """``y = x`` converted to y's dtype."""
    np.copyto(y, x, casting="unsafe")


def cast_backward_cpu(dy: np.ndarray, dx: np.ndarray, accumulate: bool = False) -> None:
    """The gradient of a cast is the gradient cast back."""
    if accumulate:
        dx += dy.astype(dx.dtype)
    else:
        np.copyto(dx, dy, casting="unsafe")


def where_forward_cpu(cond: np.ndarray, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
    """``y = cond ? a : b`` with broadcasting."""
    np.copyto(y, np.where(cond, a, b))


def where_backward_cpu(cond: np.ndarray, dy: np.ndarray, da: np.ndarray | None, db: np.ndarray | None,
                       accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of `where_forward_cpu` w.r.t. a and b."""
    if da is not None:
        _store(da, np.where(cond, dy, 0), accumulate[0])
    if db is not None:
        _store(db, np.where(cond, 0, dy), accumulate[1])


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import elementwise as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
