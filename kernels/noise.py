"""Training-time noise kernels: Gaussian noise (additive, GaussianNoise; multiplicative, GaussianDropout),
alpha dropout (AlphaDropout) and the activity penalty's gradient (ActivityRegularization).

The Gaussian draws are counter-based like `kernels.dropout`'s mask: element ``e`` of global sample ``s``
gets ``N(0, 1)`` from two SplitMix64-hashed uniforms of ``(key, s, 2e)`` and ``(key, s, 2e + 1)`` (Box-
Muller), so a data-parallel split draws the same numbers as the whole batch. Alpha dropout reuses the
dropout mask (`kernels.dropout.dropout_mask_cpu`) and applies SELU's affine correction. Multiplicative
noise keeps its per-element factor for backward; additive noise needs nothing.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit, store
from kernels.dropout import dropout_mask_cpu

# SELU's constants (Klambauer et al.), as Keras' AlphaDropout
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _normal(key, s, e, ftype):
    # Box-Muller on two hashed uniforms in (0, 1]; the hash is SplitMix64's finaliser twice, written
    # out (this source is also compiled as a CUDA device function, which cannot call CPU helpers).
    # ftype: the float type to draw in (np.float64 on the CPU and for float64 CUDA data; the CUDA kernel
    # passes its array's dtype, so a float32 draw has no f64 instructions). Every constant below is cast
    # to ftype, so a float64 draw is bit-for-bit the former `float(...)`/literal arithmetic.
    u1 = ftype(1)
    u2 = ftype(1)
    for j in range(2):
        z = key ^ np.uint64(s)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = (z ^ (z >> np.uint64(31))) + np.uint64(2 * e + j)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        u = (ftype(z >> np.uint64(11)) + ftype(1)) * ftype(1.0 / 9007199254740992.0)
        if j == 0:
            u1 = u
        else:
            u2 = u
    return math.sqrt(ftype(-2) * math.log(u1)) * math.cos(ftype(2.0 * math.pi) * u2)


SCALAR_SOURCES = (_normal,)
_normal_jit = cpu_jit(_normal)


@cpu_jit
def _gaussian(x, y, factor, key, offset, stddev, multiplicative):
    rows, m = x.shape
    k = np.uint64(key)
    for r in range(rows):
        for e in range(m):
            n = stddev * _normal_jit(k, offset + r, e, np.float64)
            if multiplicative:
                factor[r, e] = 1.0 + n
                y[r, e] = x[r, e] * (1.0 + n)
            else:
                y[r, e] = x[r, e] + n


def gaussian_noise_forward_cpu(x: np.ndarray, y: np.ndarray, factor: np.ndarray | None, stddev: float, key: int,
                               batch_offset: int = 0) -> None:
    """``y = x + stddev * N(0, 1)`` (factor None) or ``y = x * (1 + stddev * N(0, 1))`` (factor: a
    preallocated buffer of x's shape that receives the multiplier, for backward).

    Args:
        x: (B, ...) input shard. y: preallocated output. stddev: the noise's standard deviation.
        key: `kernels.dropout.dropout_key(...)`. batch_offset: global index of this shard's first sample.
    """
    rows = x.shape[0]
    x2 = np.ascontiguousarray(x).reshape(rows, -1)
    f2 = factor.reshape(rows, -1) if factor is not None else np.empty((1, 1), x.dtype)
    _gaussian(x2, y.reshape(rows, -1), f2, np.uint64(key), int(batch_offset), float(stddev), factor is not None)


def gaussian_noise_backward_cpu(dy: np.ndarray, factor: np.ndarray | None, dx: np.ndarray,
                                accumulate: bool = False) -> None:
    """``dx (+)= dy`` (additive noise) or ``dx (+)= dy * factor`` (multiplicative)."""
    store(dx, dy if factor is None else dy * factor, accumulate)


def alpha_dropout_coefficients(rate: float) -> tuple[float, float, float]:
    """(a, b, alpha_p): kept values become ``a * x + b``, dropped ones ``a * alpha_p + b``."""
    alpha_p = -SELU_ALPHA * SELU_SCALE
    a = ((1.0 - rate) * (1.0 + rate * alpha_p ** 2)) ** -0.5
    return a, -a * alpha_p * rate, alpha_p


def alpha_dropout_forward_cpu(x: np.ndarray, y: np.ndarray, mask: np.ndarray, rate: float, key: int,
                              batch_offset: int = 0) -> None:
    """Fill `mask` (uint8, the per-sample noise shape, dims equal to x's or 1) with dropout's keep bits
    and write ``y = a * (x if kept else alpha_p) + b`` (see `alpha_dropout_coefficients`)."""
    dropout_mask_cpu(mask, rate, key, batch_offset)
    a, b, alpha_p = alpha_dropout_coefficients(rate)
    np.copyto(y, np.where(mask.astype(bool), a * x + b, a * alpha_p + b), casting="same_kind")


def alpha_dropout_backward_cpu(dy: np.ndarray, mask: np.ndarray, dx: np.ndarray, rate: float,
                               accumulate: bool = False) -> None:
    """``dx (+)= a * dy`` where kept, 0 where dropped."""
    a = alpha_dropout_coefficients(rate)[0]
    store(dx, dy * mask * dy.dtype.type(a), accumulate)


def activity_penalty_backward_cpu(x: np.ndarray, dy: np.ndarray, dx: np.ndarray, l1: float, l2: float,
                                  batch: int, accumulate: bool = False) -> None:
    """``dx (+)= dy + (l1 * sign(x) + 2 * l2 * x) / batch``: the identity's gradient plus that of the
    penalty ``(l1 * sum|x| + l2 * sum x^2) / batch`` (Keras 3 divides by the batch size)."""
    t = dx.dtype.type
    store(dx, dy + np.sign(x) * t(l1 / batch) + x * t(2.0 * l2 / batch), accumulate)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import noise as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
