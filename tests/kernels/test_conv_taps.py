"""Convolutions with few output channels (`kernels._conv_taps`: forward by tap products, kernel gradient from
the gathered output gradient) against the float64 references: 5x5 stride 1 "same" (a DCGAN generator's
last layer), 4x4 stride 2, strides (2, 3), explicit pads, a kernel larger than the image, odd sizes,
batch 1, fused and separate activations, accumulation and float64."""

import numpy as np
import pytest

from kernels import _conv_taps as T
from kernels import conv2d as K

MIN_DEPTH = T.DK_MIN_DEPTH


@pytest.fixture(autouse=True)
def _small_taps_layers(monkeypatch):
    monkeypatch.setattr(T, "DK_MIN_DEPTH", 1)  # the kernel gradient by taps on small test layers


# (n, h, w, c_in, kh, kw, c_out, strides, padding, activation); all chosen by use_taps (the forward: stride 1)
TAPS = [
    (2, 11, 10, 16, 5, 5, 3, (1, 1), "same", "sigmoid"),
    (1, 8, 8, 16, 4, 4, 1, (2, 2), "same", "relu"),
    (2, 9, 7, 32, 3, 3, 2, (2, 2), "valid", "linear"),
    (1, 7, 9, 96, 5, 3, 3, (2, 3), "same", "relu"),
    (2, 9, 9, 16, 4, 4, 4, (1, 1), ((2, 1), (0, 3)), "linear"),
    (1, 3, 3, 16, 5, 5, 2, (1, 1), "same", "tanh"),  # kernel larger than the image
]


def _data(geometry, dtype=np.float32, seed=0):
    n, h, w, c, kh, kw, co = geometry[:7]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(dtype)
    k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(dtype)
    b = rng.standard_normal(co).astype(dtype)
    return x, k, b


def _close(got, want, what, rtol=1e-5):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * float(np.abs(want).max()), err_msg=what)


@pytest.mark.parametrize("geometry", TAPS)
def test_forward_and_gradients_match_reference(geometry):
    strides, padding, activation = geometry[7:]
    x, k, b = _data(geometry)
    g = K.conv_geometry(x.shape, k.shape, strides, padding)
    assert T.use_taps(g, "kernel_grad")
    assert T.use_taps(g, "forward") == (strides == (1, 1))
    want = K.conv2d_reference(x, k, b, strides, padding, activation)
    out = np.full(want.shape, np.nan, np.float32)
    K.conv2d_forward_cpu(x, k, b, out, strides, padding, activation)
    _close(out, want, f"forward {geometry}")
    gy = np.random.default_rng(1).standard_normal(want.shape).astype(np.float32)
    dx, dk, db = K.conv2d_backward_reference(x, k, b, gy, strides, padding, activation)
    gx, gk, gb = np.full_like(x, np.nan), np.full_like(k, np.nan), np.full_like(b, np.nan)
    K.conv2d_backward_cpu(x, k, out, gy, gx, gk, gb, strides, padding, activation)
    _close(gx, dx, f"grad_x {geometry}")
    _close(gk, dk, f"grad_kernel {geometry}")
    _close(gb, db, f"grad_bias {geometry}")


def test_kernel_gradient_accumulates_and_alone():
    x, k, _ = _data(TAPS[1], seed=2)
    gy = np.random.default_rng(3).standard_normal((1, 4, 4, 1)).astype(np.float32)
    dk = K.conv2d_backward_reference(x, k, None, gy, (2, 2), "same")[1]
    gk = np.ones_like(k)
    K.conv2d_backward_cpu(x, k, None, gy, None, gk, None, (2, 2), "same", accumulate_kernel=True)
    _close(gk - 1.0, dk, "accumulated grad_kernel", rtol=3e-5)


def test_float64():
    x, k, b = _data(TAPS[0], np.float64, seed=4)
    want = K.conv2d_reference(x, k, b, (1, 1), "same", "linear")
    out = np.empty(want.shape)
    K.conv2d_forward_cpu(x, k, b, out, 1, "same")
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    gy = np.random.default_rng(5).standard_normal(want.shape)
    gk = np.empty_like(k)
    K.conv2d_backward_cpu(x, k, None, gy, None, gk, None, 1, "same")
    np.testing.assert_allclose(gk, K.conv2d_backward_reference(x, k, b, gy, (1, 1), "same")[1], rtol=1e-12,
                               atol=1e-12)


def test_rule(monkeypatch):
    monkeypatch.setattr(T, "DK_MIN_DEPTH", MIN_DEPTH)

    def use(c, co, k=3, s=1):
        g = K.conv_geometry((32, 64, 64, c), (k, k, c, co), s, "same")
        return T.use_taps(g, "forward"), T.use_taps(g, "kernel_grad")

    assert use(512, 3, 5) == (True, True)  # DCGAN's last layer
    assert use(32, 1) == (True, False)  # im2col depth 288: its kernel gradient stays on im2col
    assert use(128, 8, 3, 2) == (False, False)  # strided forward: the taps would be 4x the work
    assert use(256, 4, 5, 2) == (False, True)
    assert use(47, 3, 7, 2) == (False, False)  # the tap products would exceed a quarter of im2col's values
    assert use(512, 16, 5) == (False, False)
    assert use(3, 64, 3, 2) == (False, False)


@pytest.mark.parametrize("geometry", [TAPS[0], TAPS[3]])
def test_kernel_gradient_in_one_line_chunks(monkeypatch, geometry):
    monkeypatch.setattr(T, "DK_CHUNK_BYTES", 1)  # one input row of a phase per GEMM
    strides, padding = geometry[7:9]
    x, k, _ = _data(geometry, seed=6)
    g = K.conv_geometry(x.shape, k.shape, strides, padding)
    gy = np.random.default_rng(7).standard_normal((g.n, g.oh, g.ow, g.co)).astype(np.float32)
    gk = np.full_like(k, np.nan)
    K.conv2d_backward_cpu(x, k, None, gy, None, gk, None, strides, padding)
    _close(gk, K.conv2d_backward_reference(x, k, None, gy, strides, padding)[1], f"grad_kernel {geometry}")
