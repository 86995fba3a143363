"""Rounding error of the Winograd convolutions against a float64 reference, forward and both gradients.

F(4x4, 3x3) with the points 0, +-1, +-2 had 5-7e-6 of the output's largest magnitude for error on MNIST's
conv2 (TensorFlow's float32 convolution: 7e-7), its input gradient 4e-6 (TensorFlow 4e-7) and, summed
over the batch in float32, its kernel gradient 1.5-3e-5 (TensorFlow 8e-7): enough to move a gradient
penalty (keras.io's WGAN-GP) visibly off tf.keras within a few steps. The bounds here are about 2x what
the kernels now reach (points 0, +-5/8, +-3/2; the kernel gradient summed in float64 every few chunks):
16 samples of MNIST's conv2 1.3e-6 / 1.5e-6 / 1.8e-6 (forward / grad input / grad kernel), where the old
points had 5.2e-6 / 4.4e-6 / 1.5e-5.
"""

import numpy as np
import pytest

from kernels import _conv_winograd4 as _wg4
from kernels import conv2d as K
from kernels.conv2d import conv2d_backward_reference, conv2d_reference


def _errors(algorithm, n=16, h=26, c=32, co=64, padding="valid", seed=0):
    """(forward, grad input, grad kernel) error: the largest absolute error over the largest magnitude."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, h, c)).astype(np.float32)
    lim = np.sqrt(6 / (9 * c + 9 * co))  # glorot_uniform
    k = rng.uniform(-lim, lim, (3, 3, c, co)).astype(np.float32)
    want = conv2d_reference(x, k, None, (1, 1), padding)
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx, dk, _ = conv2d_backward_reference(x, k, None, gy, (1, 1), padding)
    out = np.empty(want.shape, np.float32)
    K.conv2d_forward_cpu(x, k, None, out, (1, 1), padding, algorithm=algorithm)
    gx, gk = np.empty_like(x), np.empty_like(k)
    K.conv2d_backward_cpu(x, k, out, gy, gx, gk, None, (1, 1), padding, algorithm=algorithm)
    return [float(np.abs(got - ref).max() / np.abs(ref).max()) for got, ref in ((out, want), (gx, dx), (gk, dk))]


def test_transform_matrices_compute_the_correlation():
    rng = np.random.default_rng(1)
    d, g = rng.standard_normal((6, 10)), rng.standard_normal((3, 10))
    got = _wg4.A_T @ ((_wg4.G @ g) * (_wg4.B_T @ d))
    want = np.stack([(d[j:j + 3] * g).sum(0) for j in range(4)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


def test_winograd4_error_stays_near_tensorflows():
    # MNIST's conv2 at 16 samples (12 backward chunks: the kernel gradient's float32 sums show)
    fwd, dx, dk = _errors("winograd4")
    assert fwd < 2.5e-6, f"forward error {fwd:.2e}"
    assert dx < 3e-6, f"grad input error {dx:.2e}"
    assert dk < 3.5e-6, f"grad kernel error {dk:.2e}"


@pytest.mark.parametrize("algorithm", ["winograd", "winograd4"])
def test_winograd_error_with_same_padding(algorithm):
    fwd, dx, dk = _errors(algorithm, n=4, h=15, c=64, co=64, padding="same", seed=2)
    bound = 1e-6 if algorithm == "winograd" else 2.5e-6
    assert fwd < bound and dx < bound, f"{algorithm}: forward {fwd:.2e}, grad input {dx:.2e}"
    assert dk < 2e-6, f"{algorithm}: grad kernel {dk:.2e}"
