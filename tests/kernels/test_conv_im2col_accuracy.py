"""Rounding error of the im2col + GEMM convolution's long reductions against a float64 reference.

The vector GEMM (`_conv_simd`, taken on AVX-512 hosts) chained every product of a reduction onto C in one
float32 accumulator per element: the kernel gradient, a reduction over the batch's output pixels (21632 for
MNIST's first layer at 32 samples), had 3.3e-6 of its largest magnitude for error, about 10x TensorFlow's
float32 Conv2DBackpropFilter (3-4e-7) and NumPy's OpenBLAS on the same chunks. Each block of KC products is
now summed from zero and added to C (as OpenBLAS does): 3.5e-7. The tests force the vector GEMM on, so they
check it on any x86 host (without AVX-512 its 16-float vectors run split, slower, with the same sums).

Across the chunks of the im2col backward the kernel gradient was then still one float32 sum (BLAS's too):
for a batch of 32x32 images with a deep im2col, 3x the float64-folded sums' error (last test).
"""

import numpy as np
import pytest

from kernels import _conv_simd as S
from kernels import conv1d as K1
from kernels import conv2d as K
from kernels._conv_family_reference import conv1d_backward_reference


def _rel_max(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("trans_a, m, n, k, calls", [(True, 16, 32, 32768, 1), (True, 16, 32, 8192, 4),
                                                     (False, 32, 64, 8192, 1)])
def test_vector_gemm_long_reduction_error(trans_a, m, n, k, calls):
    # one call over k products, or `calls` calls accumulating into C (as a chunked kernel gradient does)
    rng = np.random.default_rng(m + k)
    a = rng.standard_normal((calls * k, m) if trans_a else (m, calls * k)).astype(np.float32)
    b = rng.standard_normal((calls * k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    for i in range(calls):
        ai = a[i * k:(i + 1) * k] if trans_a else np.ascontiguousarray(a[:, i * k:(i + 1) * k])
        S.simd_gemm(trans_a, m, n, k, ai, m if trans_a else k, b[i * k:(i + 1) * k], n, i > 0, c, n)
    want = (a.T if trans_a else a).astype(np.float64) @ b.astype(np.float64)
    err = _rel_max(c, want)
    assert err < 1.2e-6, f"error {err:.2e} (blocks summed from zero: 3-4e-7; one float32 chain: 2-5e-6)"


def _conv2d_dk_error(n, h, c, co, kk, stride, padding, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, h, c)).astype(np.float32)
    lim = np.sqrt(6 / (kk * kk * (c + co)))  # glorot_uniform
    k = rng.uniform(-lim, lim, (kk, kk, c, co)).astype(np.float32)
    g = K.conv_geometry(x.shape, k.shape, (stride, stride), padding)
    gy = rng.standard_normal((n, g.oh, g.ow, co)).astype(np.float32)
    _, want, _ = K.conv2d_backward_reference(x, k, None, gy, (stride, stride), padding)
    gk = np.empty_like(k)
    K.conv2d_backward_cpu(x, k, None, gy, None, gk, None, (stride, stride), padding, algorithm="gemm")
    return _rel_max(gk, want)


@pytest.mark.parametrize("stride, padding", [(1, "valid"), (2, "same")])
def test_im2col_kernel_gradient_error_with_the_vector_gemm(monkeypatch, stride, padding):
    # MNIST's first layer (1 -> 32, 3x3) at 32 samples: TensorFlow 3-4e-7, the old single chain 1.1-3.3e-6
    monkeypatch.setattr(S, "ENABLED", True)
    err = _conv2d_dk_error(32, 28, 1, 32, 3, stride, padding)
    assert err < 1e-6, f"grad kernel error {err:.2e}"


def test_conv1d_kernel_gradient_error_with_the_vector_gemm(monkeypatch):
    # a Conv1D shares the im2col backward: 64 sequences of 128 steps, 32 -> 64 channels, 5 taps (TensorFlow
    # 3e-7, the old single chain 4e-6)
    monkeypatch.setattr(S, "ENABLED", True)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 128, 32)).astype(np.float32)
    lim = np.sqrt(6 / (5 * 96))
    k = rng.uniform(-lim, lim, (5, 32, 64)).astype(np.float32)
    gy = rng.standard_normal((64, 124, 64)).astype(np.float32)
    _, want = conv1d_backward_reference(x, k, gy)[:2]
    gk = np.empty_like(k)
    K1.conv1d_backward_cpu(x, k, None, gy, None, gk, None)
    err = _rel_max(gk, want)
    assert err < 1e-6, f"grad kernel error {err:.2e}"


def _dk64_same(x, gy, kk):
    """The kernel gradient of a stride-1 'same' convolution (odd kk) in float64: one GEMM per tap."""
    p = kk // 2
    xp = np.pad(x.astype(np.float64), ((0, 0), (p, p), (p, p), (0, 0)))
    n, oh, ow, co = gy.shape
    g = gy.astype(np.float64).reshape(-1, co)
    out = np.empty((kk, kk, x.shape[3], co))
    for a in range(kk):
        for b in range(kk):
            out[a, b] = xp[:, a:a + oh, b:b + ow].reshape(-1, x.shape[3]).T @ g
    return out


@pytest.mark.parametrize("simd", [False, True])
def test_im2col_kernel_gradient_sums_the_chunks_in_float64(monkeypatch, simd):
    # 32 samples of 32x32x64 -> 32, 5x5 "same", after a ReLU: 32768 output pixels in about 200 chunks of
    # 160 (an im2col depth of 1600). Every chunk's product added to one float32 sum: 5.9-6.1e-7 (BLAS and
    # the vector GEMM alike); folded into a float64 total every DK_FOLD_ROWS pixels: 1.75e-7.
    monkeypatch.setattr(S, "ENABLED", simd)
    rng = np.random.default_rng(11)
    x = np.maximum(rng.standard_normal((32, 32, 32, 64)), 0.0).astype(np.float32)
    lim = np.sqrt(6 / (25 * 96))
    k = rng.uniform(-lim, lim, (5, 5, 64, 32)).astype(np.float32)
    gy = rng.standard_normal((32, 32, 32, 32)).astype(np.float32)
    gk = np.empty_like(k)
    K.conv2d_backward_cpu(x, k, None, gy, None, gk, None, padding="same", algorithm="gemm")
    err = _rel_max(gk, _dk64_same(x, gy, 5))
    assert err < 3e-7, f"grad kernel error {err:.2e}"
