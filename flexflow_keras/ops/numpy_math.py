"""Keras 3's element-wise math in `keras.ops`: trigonometric and hyperbolic functions and their inverses,
erf/erfinv, cbrt, exp2, hypot, logaddexp, fmod, trunc, sinc and the predicates (isinf, signbit, isclose, ...).

Each function composes graph ops (so it runs eagerly, records symbolically, trains and is seen by a
GradientTape; its gradient is that of the composition) except arctan, erf and erfinv, which are unary
kernels of their own (`kernels.elementwise`). The compositions keep the gradient finite where the function's
is: a branch `where` does not take computes on safe values (``sinc`` at 0, ``divide_no_nan``), and odd
functions are ``s * f(s * x)`` with ``s = +-1`` (not ``sign(x)``, whose zero would zero the gradient at 0).
Result dtypes follow Keras (`dtype_rules`): ints and Python numbers give float32, float64 stays float64.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_extra as X
from flexflow_keras.ops.dtype_rules import dtype_of, operands

__all__ = ["tan", "sinh", "cosh", "arctan", "arcsin", "arccos", "arctan2", "arcsinh", "arccosh", "arctanh",
           "erf", "erfinv", "cbrt", "exp2", "deg2rad", "rad2deg", "hypot", "logaddexp", "trunc", "fabs",
           "signbit", "heaviside", "sinc", "fmod", "nan_to_num", "divide_no_nan", "isinf", "isneginf",
           "isposinf", "isclose", "allclose", "logical_xor", "round"]


def _float(x):
    """x as a float tensor (ints, bools and Python numbers: float32)."""
    return operands(x, floating=True)[2][0]


def _pos_neg(x):
    """+1 where x >= 0, -1 where x < 0 (a constant to the gradient)."""
    return F.subtract(1.0, F.multiply(F.cast(F.less(x, 0), dtype_of(x)), 2.0))


def _odd(f, x):
    """``f`` extended to negative x as an odd function: ``s * f(s * x)``, f's derivative at 0 kept."""
    s = _pos_neg(x)
    return F.multiply(s, f(F.multiply(s, x)))


def _big(x) -> float:
    """Where x**2 is near overflow for x's dtype (float32: 1e4 keeps the asymptotic forms exact)."""
    return 1e8 if dtype_of(x) == "float64" else 1e4


# --- trigonometric and hyperbolic -----------------------------------------------------------------------------
def tan(x):
    """Element-wise tangent: ``sin(x) / cos(x)``."""
    x = _float(x)
    return F.divide(F.sin(x), F.cos(x))


def sinh(x):
    """Element-wise hyperbolic sine: ``(expm1(x) - expm1(-x)) / 2`` (exact near 0)."""
    x = _float(x)
    return F.multiply(F.subtract(F.expm1(x), F.expm1(F.negative(x))), 0.5)


def cosh(x):
    """Element-wise hyperbolic cosine: ``(exp(x) + exp(-x)) / 2``."""
    x = _float(x)
    return F.multiply(F.add(F.exp(x), F.exp(F.negative(x))), 0.5)


def arctan(x):
    """Element-wise inverse tangent (a kernel of its own)."""
    return F._unary("arctan", _float(x))


def arcsin(x):
    """Element-wise inverse sine: ``arctan(x / sqrt((1 - x)(1 + x)))``; NaN outside [-1, 1]."""
    x = _float(x)
    return arctan(F.divide(x, F.sqrt(F.multiply(F.subtract(1.0, x), F.add(x, 1.0)))))


def arccos(x):
    """Element-wise inverse cosine: ``2 arctan(sqrt((1 - x) / (1 + x)))`` (exact near 1); NaN outside [-1, 1]."""
    x = _float(x)
    return F.multiply(arctan(F.sqrt(F.divide(F.subtract(1.0, x), F.add(x, 1.0)))), 2.0)


def arctan2(x1, x2):
    """The angle of the point (x2, x1), in [-pi, pi]: ``arctan(x1 / x2)`` (+-pi for x2 < 0) where |x2| >= |x1|,
    ``+-pi/2 - arctan(x2 / x1)`` elsewhere, so each arctan's argument is in [-1, 1] and the gradient is right
    on the axes too; signed zeros and infinities give NumPy's and TensorFlow's angles."""
    _, _, (y, x) = operands(x1, x2, floating=True)
    inf_x, inf_y = isinf(x), isinf(y)
    any_inf = F.logical_or(inf_x, inf_y)  # against an infinity a finite value is a (signed) zero
    x = F.where(any_inf, F.where(inf_x, F.sign(x), F.multiply(x, 0.0)), x)
    y = F.where(any_inf, F.where(inf_y, F.sign(y), F.multiply(y, 0.0)), y)
    steep = F.greater(F.abs(y), F.abs(x))
    near_x = F.add(arctan(F.divide(y, F.where(F.logical_or(steep, F.equal(x, 0)), 1.0, x))),
                   F.where(signbit(x), F.where(signbit(y), -np.pi, np.pi), 0.0))
    near_y = F.subtract(F.where(signbit(y), -np.pi / 2, np.pi / 2), arctan(F.divide(x, F.where(steep, y, 1.0))))
    return F.where(steep, near_y, near_x)


def arcsinh(x):
    """Element-wise inverse hyperbolic sine (``log1p(a + a^2 / (1 + sqrt(1 + a^2)))``, ``log(2a)`` for large a)."""
    x = _float(x)
    big = _big(x)

    def f(a):  # a >= 0
        small = F.minimum(a, big)
        near = F.log1p(F.add(small, F.divide(F.square(small), F.add(F.sqrt(F.add(F.square(small), 1.0)), 1.0))))
        return F.where(F.greater(a, big), F.log(F.multiply(F.maximum(a, big), 2.0)), near)

    return _odd(f, x)


def arccosh(x):
    """Element-wise inverse hyperbolic cosine (``log1p(t + sqrt(t (t + 2)))`` with t = x - 1); NaN below 1."""
    x = _float(x)
    big = _big(x)
    t = F.subtract(F.minimum(x, big), 1.0)
    near = F.log1p(F.add(t, F.sqrt(F.multiply(t, F.add(t, 2.0)))))
    return F.where(F.greater(x, big), F.log(F.multiply(F.maximum(x, big), 2.0)), near)


def arctanh(x):
    """Element-wise inverse hyperbolic tangent: ``log1p(2a / (1 - a)) / 2`` for a = |x| (well conditioned),
    odd; NaN outside [-1, 1]."""
    return _odd(lambda a: F.multiply(F.log1p(F.divide(F.multiply(a, 2.0), F.subtract(1.0, a))), 0.5), _float(x))


# --- special functions and powers ---------------------------------------------------------------------------
def erf(x):
    """The error function, element-wise (a kernel of its own)."""
    return F._unary("erf", _float(x))


def erfinv(x):
    """The inverse error function, element-wise: +-inf at +-1, NaN outside [-1, 1] (a kernel of its own)."""
    return F._unary("erfinv", _float(x))


def cbrt(x):
    """Element-wise real cube root."""
    return _odd(lambda a: F.power(a, 1.0 / 3.0), _float(x))


def exp2(x):
    """``2 ** x``, element-wise."""
    return F.power(2.0, _float(x))


def deg2rad(x):
    """Degrees to radians."""
    return F.multiply(_float(x), np.pi / 180.0)


def rad2deg(x):
    """Radians to degrees."""
    return F.multiply(_float(x), 180.0 / np.pi)


def hypot(x1, x2):
    """``sqrt(x1^2 + x2^2)`` without overflow (Keras' form: ``max * sqrt(1 + (min / max)^2)``)."""
    _, _, (a, b) = operands(x1, x2, floating=True)
    a, b = F.abs(a), F.abs(b)
    hi, lo = F.maximum(a, b), F.minimum(a, b)
    return F.multiply(hi, F.sqrt(F.add(F.square(divide_no_nan(lo, hi)), 1.0)))


def logaddexp(x1, x2):
    """``log(exp(x1) + exp(x2))`` computed stably (NaN where x1 - x2 is NaN: inf - inf gives x1 + x2)."""
    _, _, (a, b) = operands(x1, x2, floating=True)
    delta = F.subtract(a, b)
    stable = F.add(F.maximum(a, b), F.log1p(F.exp(F.negative(F.abs(delta)))))
    return F.where(X.isnan(delta), F.add(a, b), stable)


def fmod(x1, x2):
    """The remainder of ``x1 / x2`` with the sign of x1 (C's fmod); integers stay integers."""
    _, dtype, (a, b) = operands(x1, x2)
    if dtype == "bool":
        dtype, a, b = "int32", F.cast(a, "int32"), F.cast(b, "int32")
    compute = dtype if np.dtype(dtype).kind == "f" else "float64"  # exact for integers below 2**53
    a, b = F.cast(a, compute) if compute != dtype else a, F.cast(b, compute) if compute != dtype else b
    aa, ab = F.abs(a), F.abs(b)
    out = F.multiply(F.sign(a), F.subtract(aa, F.multiply(F.floor(F.divide(aa, ab)), ab)))
    return out if compute == dtype else F.cast(out, dtype)


def trunc(x):
    """Round toward zero (integers and bools unchanged)."""
    if dtype_of(x) == "bool" or np.dtype(dtype_of(x)).kind in "iu":
        return F._tensor(x, F._symbolic(x))
    x = _float(x)
    return F.where(F.less(x, 0), F.ceil(x), F.floor(x))


def fabs(x):
    """Absolute value as a float."""
    return F.abs(_float(x))


def signbit(x):
    """Whether the sign bit is set (True for -0.0; False for NaN of either sign when symbolic)."""
    if not F._symbolic(x):
        return np.signbit(np.asarray(x))
    x = F._tensor(x, True)
    kind = np.dtype(dtype_of(x)).kind
    if kind == "b":
        return F.not_equal(x, x)
    if kind in "iu":
        return F.less(x, 0)
    return F.logical_or(F.less(x, 0), F.logical_and(F.equal(x, 0), F.less(F.reciprocal(x), 0)))


def heaviside(x1, x2):
    """0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0."""
    _, _, (a, b) = operands(x1, x2, floating=True)
    return F.where(F.less(a, 0), 0.0, F.where(F.greater(a, 0), 1.0, b))


def sinc(x):
    """``sin(pi x) / (pi x)``, 1 at 0 (with gradient 0 there)."""
    x = _float(x)
    zero = F.equal(x, 0)
    px = F.multiply(F.where(zero, 1.0, x), np.pi)
    return F.where(zero, 1.0, F.divide(F.sin(px), px))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN -> `nan`, +inf -> `posinf` (default the dtype's max), -inf -> `neginf` (its min); ints unchanged."""
    dtype = dtype_of(x)
    t = F._tensor(x, F._symbolic(x))
    if np.dtype(dtype).kind != "f":
        return t
    info = np.finfo(dtype)
    nan, hi, lo = (np.asarray(v, dtype) for v in (nan, info.max if posinf is None else posinf,
                                                   info.min if neginf is None else neginf))
    t = F.where(X.isnan(t), nan, t)
    t = F.where(F.equal(t, np.inf), hi, t)
    return F.where(F.equal(t, -np.inf), lo, t)


def divide_no_nan(x1, x2):
    """``x1 / x2``, 0 where x2 is 0 (with no gradient through that division)."""
    _, _, (a, b) = operands(x1, x2, floating=True)
    zero = F.equal(b, 0)
    return F.where(zero, 0.0, F.divide(a, F.where(zero, 1.0, b)))


# --- predicates ---------------------------------------------------------------------------------------------------
def isinf(x):
    """Where x is +inf or -inf (bool)."""
    return F.equal(F.abs(x), np.inf)


def isneginf(x):
    """Where x is -inf (bool)."""
    return F.equal(x, -np.inf)


def isposinf(x):
    """Where x is +inf (bool)."""
    return F.equal(x, np.inf)


def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|x1 - x2| <= atol + rtol * |x2|`` for floats (NaNs equal when `equal_nan`), ``x1 == x2`` otherwise."""
    _, dtype, (a, b) = operands(x1, x2)
    if np.dtype(dtype).kind != "f":
        return F.equal(a, b)
    close = F.less_equal(F.abs(F.subtract(a, b)), F.add(F.multiply(F.abs(b), float(rtol)), float(atol)))
    if equal_nan:
        close = F.logical_or(close, F.logical_and(X.isnan(a), X.isnan(b)))
    return close


def allclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether `isclose` holds everywhere (a 0-d bool)."""
    return X.all(isclose(x1, x2, rtol, atol, equal_nan))


def logical_xor(x1, x2):
    """Element-wise exclusive or of the truth values (bool)."""
    return F.not_equal(F.not_equal(x1, 0), F.not_equal(x2, 0))


def round(x, decimals=0):  # noqa: A001 - the Keras ops name
    """Half-to-even rounding at `decimals` places, as Keras 3 on TensorFlow computes it: ``round(x * f) / f``
    with ``f = 10**decimals`` in x's float dtype. Integers (and bools) are their own rounding for
    ``decimals >= 0``; for negative `decimals` they round through float32 and come back in their dtype."""
    decimals = int(decimals)
    if decimals == 0 and np.dtype(dtype_of(x)).kind not in "iub":
        return F.round(x)
    dtype = dtype_of(x)
    if np.dtype(dtype).kind in "iub":
        if decimals >= 0:
            return F.cast(x, dtype)
        y = F.cast(x, "float32")
    else:
        y = x
    factor = 10.0 ** decimals
    return F.cast(F.divide(F.round(F.multiply(y, factor)), factor), dtype)
