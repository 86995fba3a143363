"""The phase-gather input gradient (`kernels._conv_phase`, chosen by `conv2d.choose_dx_algorithm`) against
the float64 references: conv2d's grad input and Conv2DTranspose's forward, strides 1-3 (a stride larger
than the kernel leaves a phase without taps), 4x4 and 5x5 kernels, "same", "valid" and explicit pads, odd
sizes, batch 1, ReLU, accumulation, many chunks and float64."""

import numpy as np
import pytest

from kernels import _conv_choice as C
from kernels import _conv_family_reference as R
from kernels import conv2d as K
from kernels import conv_transpose2d as CT

RULE_CHANNELS = K.PHASE_DX_MIN_CHANNELS


@pytest.fixture(autouse=True)
def _small_phase_layers(monkeypatch):
    monkeypatch.setattr(C, "PHASE_DX_MIN_CHANNELS", 16)  # the phase path on small test layers


# (n, h, w, c_in, kh, kw, c_out, strides, padding); c_in >= c_out so that the rule picks "phase"
PHASE = [
    (2, 8, 8, 16, 4, 4, 8, (2, 2), "same"),  # DCGAN's discriminator step, even size
    (1, 9, 7, 16, 4, 4, 16, (2, 2), "same"),  # batch 1, odd sizes
    (2, 11, 10, 17, 5, 5, 3, (1, 1), "same"),  # the generator's last layer: 5x5 stride 1 to 3 channels
    (1, 7, 9, 20, 5, 3, 6, (2, 3), "same"),
    (2, 12, 12, 16, 3, 3, 8, (2, 2), "valid"),
    (2, 10, 10, 16, 2, 2, 4, (3, 3), "valid"),  # stride 3 > kernel 2: the phases with no tap are zero
    (2, 9, 9, 16, 4, 4, 4, (2, 2), ((2, 1), (0, 3))),  # explicit, asymmetric pads
    (1, 5, 5, 16, 5, 5, 16, (2, 2), "same"),  # kernel larger than the image
]


def _data(geometry, dtype=np.float32, seed=0):
    n, h, w, c, kh, kw, co, strides, padding = geometry
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(dtype)
    k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(dtype)
    g = K.conv_geometry(x.shape, k.shape, strides, padding)
    gy = rng.standard_normal((n, g.oh, g.ow, co)).astype(dtype)
    return x, k, gy, g


def _close(got, want, what, rtol=1e-5):
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("geometry", PHASE)
@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_grad_input_matches_reference(geometry, activation):
    x, k, gy, g = _data(geometry)
    assert K.choose_dx_algorithm(g) == "phase"
    strides, padding = geometry[7], geometry[8]
    out = np.empty(gy.shape, np.float32)
    K.conv2d_forward_cpu(x, k, None, out, strides, padding, activation)
    dx, dk, db = K.conv2d_backward_reference(x, k, None, gy, strides, padding, activation)
    gx, gk, gb = np.full_like(x, np.nan), np.full_like(k, np.nan), np.full(k.shape[-1], np.nan, np.float32)
    K.conv2d_backward_cpu(x, k, out, gy, gx, gk, gb, strides, padding, activation)
    _close(gx, dx, f"grad_x {geometry} {activation}")
    _close(gk, dk, f"grad_kernel {geometry} {activation}")
    _close(gb, db, f"grad_bias {geometry} {activation}")


@pytest.mark.parametrize("geometry", [PHASE[0], PHASE[5]])
def test_grad_input_accumulates(geometry):
    x, k, gy, _ = _data(geometry, seed=1)
    strides, padding = geometry[7], geometry[8]
    dx = K.conv2d_backward_reference(x, k, None, gy, strides, padding)[0]
    gx = np.ones_like(x)
    K.conv2d_backward_cpu(x, k, None, gy, gx, None, None, strides, padding, accumulate_x=True)
    _close(gx - 1.0, dx, f"accumulated grad_x {geometry}", rtol=3e-5)


def test_many_chunks_and_the_col2im_path_agree(monkeypatch):
    geometry = (3, 9, 11, 16, 4, 4, 24, (2, 2), "same")  # C_in < C_out: the rule keeps col2im
    x, k, gy, g = _data(geometry, seed=2)
    assert K.choose_dx_algorithm(g) == "col2im"
    want = K.conv2d_backward_reference(x, k, None, gy, (2, 2), "same")[0]
    col2im = np.full_like(x, np.nan)
    K.conv2d_backward_cpu(x, k, None, gy, col2im, None, None, (2, 2), "same")
    monkeypatch.setattr(K, "PHASE_CHUNK_BYTES", 1)  # one input row of a phase per GEMM
    monkeypatch.setattr(K, "choose_dx_algorithm", lambda g: "phase")
    phase = np.full_like(x, np.nan)
    K.conv2d_backward_cpu(x, k, None, gy, phase, None, None, (2, 2), "same")
    _close(col2im, want, "col2im")
    _close(phase, want, "phase, one line per chunk")


def test_float64():
    x, k, gy, _ = _data(PHASE[1], np.float64, seed=3)
    want = K.conv2d_backward_reference(x, k, None, gy, (2, 2), "same")[0]
    gx = np.empty_like(x)
    K.conv2d_backward_cpu(x, k, None, gy, gx, None, None, (2, 2), "same")
    np.testing.assert_allclose(gx, want, rtol=1e-12, atol=1e-12)


# (input shape, kernel (kh, kw, filters, in_channels), stride, padding): the generator's layers, small
TRANSPOSE = [((2, 4, 4, 16), (4, 4, 32, 16), 2, "same"),
             ((1, 3, 5, 32), (4, 4, 64, 32), 2, "same"),  # batch 1, odd and unequal sizes
             ((2, 5, 5, 8), (5, 5, 32, 8), 1, "same"),
             ((2, 3, 3, 4), (3, 3, 16, 4), 2, "valid")]


@pytest.mark.parametrize("xs,ks,stride,padding", TRANSPOSE)
def test_conv_transpose_forward_matches_reference(xs, ks, stride, padding):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(xs).astype(np.float32)
    k = (rng.standard_normal(ks) / np.sqrt(ks[0] * ks[1] * ks[3])).astype(np.float32)
    b = rng.standard_normal(ks[2]).astype(np.float32)
    want = R.conv2d_transpose_reference(x, k, b, (stride, stride), padding)
    out = np.full(want.shape, np.nan, np.float32)
    g = CT.transpose_geometry(x.shape, k.shape, out.shape, stride, padding)
    assert K.choose_dx_algorithm(g) == "phase"
    CT.conv2d_transpose_forward_cpu(x, k, b, out, stride, padding, "sigmoid")
    _close(out, 1.0 / (1.0 + np.exp(-want)), f"conv2d_transpose {xs} {ks} {stride} {padding}")


def test_rule(monkeypatch):
    monkeypatch.setattr(C, "PHASE_DX_MIN_CHANNELS", RULE_CHANNELS)

    def g(c, co, k=4, s=2):
        return K.conv_geometry((32, 32, 32, c), (k, k, c, co), s, "same")

    assert K.choose_dx_algorithm(g(512, 256)) == "phase"
    assert K.choose_dx_algorithm(g(128, 128)) == "phase"
    assert K.choose_dx_algorithm(g(512, 3, 5, 1)) == "phase"
    assert K.choose_dx_algorithm(g(64, 128)) == "col2im"
    assert K.choose_dx_algorithm(g(64, 64, 3, 2)) == "col2im"
    assert K.choose_dx_algorithm(g(32, 32, 5, 1)) == "col2im"
    assert K.choose_dx_algorithm(g(3, 3)) == "col2im"
    # stride 1: one phase gathers KH*KW*C_out values per input pixel, so it needs 4x fewer output channels
    assert K.choose_dx_algorithm(g(128, 128, 3, 1)) == "col2im"
    assert K.choose_dx_algorithm(g(512, 256, 3, 1)) == "col2im"
    assert K.choose_dx_algorithm(g(512, 128, 3, 1)) == "phase"
    # ... and not for a 1x1 kernel, nor few pixels against a large kernel (its reorder per call)
    assert K.choose_dx_algorithm(g(512, 128, 1, 1)) == "col2im"
    assert K.choose_dx_algorithm(K.conv_geometry((32, 3, 3, 2048), (3, 3, 2048, 512))) == "col2im"
