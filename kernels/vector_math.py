"""Branch-free float64 `exp`, `erf` and `log1p01` that LLVM vectorises inside the CPU kernels' Numba loops
(GELU, SiLU, ELU, SELU, softplus).

`math.exp` and `math.erf` in a Numba loop are calls of the C library, one value at a time: 5 and 16-19 ns
a value on the 2-core AMD EPYC here, so a GELU layer ran at 19 ns a value forward, where TensorFlow's
vectorised float32 kernels take a few. These two are arithmetic only (no call, no branch: selects), so
a loop over float32 values that uses them runs four float64 lanes per AVX2 instruction: the GELU loop
measured 5-6 ns a value against 19 (`tests/kernels/test_vector_math.py` checks that it vectorises).
Inline them into a kernel compiled with ``error_model="numpy"`` (`kernels._jit.cpu_jit`): Python's error
model checks each division and the loop stays scalar.

Accuracy, against the C library's functions (the test checks both on dense grids):

- `exp`: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor series to r^13 (Estrin's scheme), times 2^n
  made from n's bits; 2 units in the last place of a float64 at most. x is clamped to [-708, 709]: no
  overflow to inf and no denormals (e^-708 where the C library gives a denormal or 0; e^709 for inf).
  NaN gives NaN (both functions).
- `log1p01`: log(1 + e) on [0, 1] only, as 2 atanh(e / (2 + e)) by its series (relative error < 2e-14):
  no cancellation for small e, where log(1 + e) would lose e's digits.
- `erf`: for |x| < 1 its Taylor series, 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)) to n = 12; for
  1 <= |x| < 10, 1 - erfc with erfc(t) = e^(-t*t) g(t) and g a degree-11 polynomial in
  s(u), u = 1 / (1 + t/2), fitted when this module is imported to the C library's erfc on 2000 Chebyshev
  nodes; +-1 beyond. Absolute error below 1e-11.

The values feed float32 results, whose unit in the last place is 6e-8 of the value: GELU computed with
these rounds to the C library's float32 on all but a few values in a million, and those by one unit.
CUDA device code keeps `math` (kernels/gpu: libdevice vectorises across threads).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numpy.polynomial import chebyshev

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 in two parts: n * _LN2_HI is exact for the n that occur
_LN2_LO = 1.9082149292705877e-10
_EXP_TAYLOR = np.array([1.0 / math.factorial(k) for k in range(14)])  # global arrays: constants in the code
_ERF_TAYLOR = np.array([2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                        for n in range(13)])
_ATANH_SERIES = np.array([1.0 / (2 * k + 1) for k in range(13)])  # atanh(s) / s in powers of s^2
_TAIL_END = 10.0
_U_LO, _U_HI = 1.0 / (1.0 + 0.5 * _TAIL_END), 1.0 / 1.5


def _tail_polynomial(degree: int = 11, nodes: int = 2000) -> np.ndarray:
    """Power-series coefficients of g(t) = erfc(t) e^(t*t) on [1, _TAIL_END] in s = (2u - (U_HI + U_LO)) /
    (U_HI - U_LO), u = 1 / (1 + t/2): a Chebyshev least-squares fit on Chebyshev nodes, then converted."""
    k = np.arange(nodes)
    s = np.cos(np.pi * (k + 0.5) / nodes)
    u = s * (_U_HI - _U_LO) / 2 + (_U_HI + _U_LO) / 2
    t = (1.0 / u - 1.0) / 0.5
    g = np.array([math.erfc(v) * math.exp(v * v) for v in t])
    return chebyshev.cheb2poly(chebyshev.chebfit(s, g, degree))


_ERFC_TAIL = _tail_polynomial()


@intrinsic
def _bits_as_float64(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 `bits`."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


_FLAGS = dict(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")


@njit(**_FLAGS)
def _poly13(z, c):
    """c[0] + c[1] z + ... + c[12] z^12 by Estrin's scheme (independent products: a short chain)."""
    z2 = z * z
    z4 = z2 * z2
    lo = ((c[0] + c[1] * z) + (c[2] + c[3] * z) * z2) + ((c[4] + c[5] * z) + (c[6] + c[7] * z) * z2) * z4
    return lo + (((c[8] + c[9] * z) + (c[10] + c[11] * z) * z2) + c[12] * z4) * (z4 * z4)


@njit(**_FLAGS)
def _poly12(z, c):
    """c[0] + ... + c[11] z^11 by Estrin's scheme."""
    z2 = z * z
    z4 = z2 * z2
    lo = ((c[0] + c[1] * z) + (c[2] + c[3] * z) * z2) + ((c[4] + c[5] * z) + (c[6] + c[7] * z) * z2) * z4
    return lo + ((c[8] + c[9] * z) + (c[10] + c[11] * z) * z2) * (z4 * z4)


@njit(**_FLAGS)
def exp(x):
    """e^x of a float64, x clamped to [-708, 709] (see the module docstring)."""
    c = min(max(x, -708.0), 709.0)
    n = math.floor(c * _LOG2E + 0.5)
    r = (c - n * _LN2_HI) - n * _LN2_LO
    k = _EXP_TAYLOR
    r2 = r * r
    r4 = r2 * r2
    lo = ((k[0] + k[1] * r) + (k[2] + k[3] * r) * r2) + ((k[4] + k[5] * r) + (k[6] + k[7] * r) * r2) * r4
    hi = ((k[8] + k[9] * r) + (k[10] + k[11] * r) * r2) + (k[12] + k[13] * r) * r4
    e = (lo + hi * (r4 * r4)) * _bits_as_float64((np.int64(n) + 1023) << 52)
    return e if x == x else x  # NaN stays NaN (the clamp would make it a number)


@njit(**_FLAGS)
def log1p01(e):
    """log(1 + e) for e in [0, 1] (softplus's log1p(e^-|x|)): 2 atanh(s) with s = e / (2 + e) <= 1/3,
    by its series in s^2 to s^25 (relative error below 2e-14). NaN stays NaN."""
    s = e / (2.0 + e)
    return 2.0 * s * _poly13(s * s, _ATANH_SERIES)


@njit(**_FLAGS)
def erf(x):
    """erf(x) of a float64 (see the module docstring); both pieces are computed and one selected."""
    a = abs(x)
    small = x * _poly13(x * x, _ERF_TAYLOR)
    t = min(max(a, 1.0), _TAIL_END)
    s = (2.0 / (1.0 + 0.5 * t) - (_U_HI + _U_LO)) / (_U_HI - _U_LO)
    big = 1.0 - exp(-t * t) * _poly12(s, _ERFC_TAIL)
    big = big if a < _TAIL_END else 1.0
    big = big if x > 0 else -big
    r = small if a < 1.0 else big
    return r if x == x else x  # NaN stays NaN
