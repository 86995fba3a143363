"""kernels.conv3d on the CPU against the float64 references of kernels/_conv3d_reference.py: convolution
(strides, same/valid, dilations, fused activations with and without a saved pre-activation, overwrite
and accumulate) and max/average pooling (ties included), forward and backward."""

import numpy as np
import pytest

from kernels import _conv3d_reference as R
from kernels import conv3d as C3
from kernels import reference as REF

RNG = np.random.default_rng(3)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run_backward(fn, shapes, accumulate):
    start = 1.0 if accumulate else np.nan
    bufs = [np.full(s, start, np.float32) for s in shapes]
    fn(bufs, accumulate)
    return [b - 1.0 if accumulate else b for b in bufs]


CONV = [((2, 5, 6, 7, 3), (3, 3, 2, 3, 4), (1, 1, 1), "valid", (1, 1, 1)),
        ((2, 5, 6, 7, 3), (3, 2, 3, 3, 4), (2, 2, 1), "same", (1, 1, 1)),
        ((1, 7, 4, 5, 2), (2, 3, 3, 2, 5), (1, 2, 2), "same", (2, 1, 1)),
        ((3, 4, 5, 4, 1), (1, 1, 1, 1, 2), (3, 1, 2), "valid", (1, 1, 1)),
        ((2, 5, 7, 8, 2), (2, 3, 2, 2, 3), (1, 1, 1), "same", (2, 2, 3)),
        ((1, 6, 7, 6, 2), (3, 2, 3, 2, 2), (1, 1, 1), "valid", (1, 3, 2))]


@pytest.mark.parametrize("xs,ks,strides,padding,dilation", CONV)
@pytest.mark.parametrize("accumulate", [False, True])
def test_conv3d_matches_reference(xs, ks, strides, padding, dilation, accumulate):
    x, k, b = rand(*xs), rand(*ks), rand(ks[4])
    want = R.conv3d_reference(x, k, b, strides, padding, dilation)
    out = np.full(want.shape, np.nan, np.float32)
    C3.conv3d_forward_cpu(x, k, b, out, strides, padding, dilation)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    gy = rand(*want.shape)
    got = run_backward(lambda g, acc: C3.conv3d_backward_cpu(x, k, out, gy, *g, strides, padding, dilation,
                                                             accumulate_x=acc, accumulate_kernel=acc,
                                                             accumulate_bias=acc),
                       [x.shape, k.shape, b.shape], accumulate)
    for g, w in zip(got, R.conv3d_backward_reference(x, k, gy, strides, padding, dilation), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act", ["relu", "gelu", "tanh"])
def test_conv3d_fused_activation(act):
    x, k, b = rand(2, 4, 5, 5, 2), rand(2, 3, 3, 2, 3), rand(3)
    z = R.conv3d_reference(x, k, b, (1, 1, 1), "same")
    out = np.empty(z.shape, np.float32)
    pre = np.empty(z.shape, np.float32) if C3._dil._conv.needs_pre_activation(act) else None
    C3.conv3d_forward_cpu(x, k, b, out, 1, "same", 1, act, pre)
    np.testing.assert_allclose(out, REF.activation(act, z), rtol=1e-4, atol=1e-5)
    gy = rand(*z.shape)
    gx, gk, gb = np.empty(x.shape, np.float32), np.empty(k.shape, np.float32), np.empty(3, np.float32)
    C3.conv3d_backward_cpu(x, k, out, gy, gx, gk, gb, 1, "same", 1, act, pre)
    dz = REF.activation_grad(act, z, gy)
    for g, w in zip((gx, gk, gb), R.conv3d_backward_reference(x, k, dz, (1, 1, 1), "same"), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)


def test_conv3d_reference_backward_is_the_adjoint():
    x, k = rand(2, 5, 4, 4, 2), rand(3, 2, 2, 2, 3)
    y = R.conv3d_reference(x, k, None, (2, 1, 2), "same", (1, 1, 1))
    gy = rand(*y.shape)
    gx, gk, _ = R.conv3d_backward_reference(x, k, gy, (2, 1, 2), "same")
    assert np.isclose((y * gy).sum(), (gx * x).sum())
    assert np.isclose((y * gy).sum(), (gk * k).sum())


def test_conv3d_rejects_a_kernel_that_does_not_fit():
    out = np.empty((1, 1, 1, 1, 1), np.float32)
    with pytest.raises(ValueError, match="does not fit"):
        C3.conv3d_forward_cpu(rand(1, 2, 5, 5, 1), rand(3, 3, 3, 1, 1), None, out, 1, "valid")
    with pytest.raises(ValueError, match="channels"):
        C3.conv3d_forward_cpu(rand(1, 4, 5, 5, 2), rand(3, 3, 3, 1, 1), None, out, 1, "valid")


POOL = [((2, 4, 6, 6, 3), (2, 2, 2), (2, 2, 2), "valid"),
        ((2, 5, 7, 6, 2), (3, 2, 3), (2, 1, 2), "same"),
        ((1, 3, 5, 4, 2), (2, 3, 2), (1, 2, 1), "valid")]


@pytest.mark.parametrize("xs,size,strides,padding", POOL)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("accumulate", [False, True])
def test_pool3d_matches_reference(xs, size, strides, padding, mode, accumulate):
    x = rand(*xs)
    if mode == "max":  # ties: the first maximum in (d, h, w) order wins, as in TensorFlow
        x = np.round(x * 2) / 2
    want, _ = R.pool3d_reference(x, size, strides, padding, mode)
    out = np.full(want.shape, np.nan, np.float32)
    n, d, _, _, c = xs
    mid = np.empty((n, d, want.shape[2], want.shape[3], c), np.float32)
    arg = (np.empty(mid.shape, np.int32), np.empty(out.shape, np.int32)) if mode == "max" else None
    C3.pool3d_forward_cpu(x, out, mid, size, strides, padding, mode, arg)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    gy = rand(*want.shape)
    (gx,) = run_backward(lambda g, acc: C3.pool3d_backward_cpu(x, out, gy, g[0], mid, size, strides, padding, mode,
                                                               arg, acc), [x.shape], accumulate)
    np.testing.assert_allclose(gx, R.pool3d_backward_reference(x, gy, size, strides, padding, mode),
                               rtol=1e-5, atol=1e-5)


TRANSPOSE = [((2, 3, 4, 3, 2), (3, 3, 2, 4, 2), (1, 1, 1), "valid", (2, 5, 6, 4, 4)),
             ((2, 3, 4, 3, 2), (2, 3, 3, 3, 2), (2, 2, 1), "same", (2, 6, 8, 3, 3)),
             ((1, 2, 3, 3, 3), (3, 2, 3, 2, 3), (2, 3, 2), "valid", (1, 5, 8, 8, 2)),
             ((1, 2, 3, 3, 3), (3, 3, 3, 2, 3), (2, 2, 2), "same", (1, 4, 6, 5, 2))]  # output_padding


@pytest.mark.parametrize("xs,ks,strides,padding,out_shape", TRANSPOSE)
@pytest.mark.parametrize("accumulate", [False, True])
def test_conv3d_transpose_matches_reference(xs, ks, strides, padding, out_shape, accumulate):
    x, k, b = rand(*xs), rand(*ks), rand(ks[3])
    want = R.conv3d_transpose_reference(x, k, b, out_shape, strides, padding)
    out = np.full(out_shape, np.nan, np.float32)
    C3.conv3d_transpose_forward_cpu(x, k, b, out, strides, padding)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    gy = rand(*out_shape)
    got = run_backward(lambda g, acc: C3.conv3d_transpose_backward_cpu(x, k, gy, *g, strides, padding, acc, acc, acc),
                       [x.shape, k.shape, b.shape], accumulate)
    for g, w in zip(got, R.conv3d_transpose_backward_reference(x, k, gy, strides, padding), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
