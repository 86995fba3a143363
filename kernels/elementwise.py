"""Element-wise kernels: binary ops with NumPy broadcasting, unary math, comparisons and casts.

On the CPU these are NumPy ufuncs with ``out=`` (SIMD loops that a scalar Numba loop does not beat).
Backward reduces the broadcast gradient back to each operand's shape (`sum_to_shape`). Gradient
conventions follow TensorFlow: maximum sends the gradient to `a` where ``a >= b``, minimum where
``a <= b``; clip passes it on the closed interval; abs uses sign(x) (0 at 0).
"""

from __future__ import annotations

import numpy as np

ADD, SUBTRACT, MULTIPLY, DIVIDE, MAXIMUM, MINIMUM, POWER = range(7)
BINARY = {"add": ADD, "subtract": SUBTRACT, "multiply": MULTIPLY, "divide": DIVIDE, "maximum": MAXIMUM,
          "minimum": MINIMUM, "power": POWER}
_BINARY_UFUNC = {ADD: np.add, SUBTRACT: np.subtract, MULTIPLY: np.multiply, DIVIDE: np.divide,
                 MAXIMUM: np.maximum, MINIMUM: np.minimum, POWER: np.power}

(NEGATIVE, SQUARE, SQRT, EXP, LOG, ABS, SIGN, RECIPROCAL, LOG1P, EXPM1, SIN, COS, FLOOR, CEIL, ROUND,
 RSQRT, CLIP, IDENTITY, STOP_GRADIENT) = range(19)
UNARY = {"negative": NEGATIVE, "square": SQUARE, "sqrt": SQRT, "exp": EXP, "log": LOG, "abs": ABS,
         "sign": SIGN, "reciprocal": RECIPROCAL, "log1p": LOG1P, "expm1": EXPM1, "sin": SIN, "cos": COS,
         "floor": FLOOR, "ceil": CEIL, "round": ROUND, "rsqrt": RSQRT, "clip": CLIP, "identity": IDENTITY,
         "stop_gradient": STOP_GRADIENT}
_UNARY_UFUNC = {NEGATIVE: np.negative, SQUARE: np.square, SQRT: np.sqrt, EXP: np.exp, LOG: np.log,
                ABS: np.abs, SIGN: np.sign, RECIPROCAL: np.reciprocal, LOG1P: np.log1p, EXPM1: np.expm1,
                SIN: np.sin, COS: np.cos, FLOOR: np.floor, CEIL: np.ceil, ROUND: np.rint}
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
    """``y = a (op) b`` with broadcasting; `y` has the broadcast shape."""
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


def unary_forward_cpu(code: int, x: np.ndarray, y: np.ndarray, lo: float = 0.0, hi: float = 0.0) -> None:
    """``y = f(x)`` for a `UNARY` code (`lo`/`hi` are clip's bounds)."""
    if code == CLIP:
        np.clip(x, lo, hi, out=y)
    elif code in (IDENTITY, STOP_GRADIENT):
        np.copyto(y, x)
    elif code == RSQRT:
        np.sqrt(x, out=y)
        np.reciprocal(y, out=y)
    else:
        _UNARY_UFUNC[code](x, out=y)


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
        g = dy * 0.5 / y
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
        g = -0.5 * dy * y * y * y
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
