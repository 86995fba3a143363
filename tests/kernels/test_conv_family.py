"""The convolution-family kernels (conv1d, conv2d_transpose, depthwise_conv2d, resize2d, shift_copy) on
the CPU against their float64 references, forward and backward (overwrite and accumulate); the references'
backwards are checked as exact adjoints of their forwards, and one by central differences."""

import numpy as np
import pytest

from kernels import _conv_family_reference as R
from kernels import conv1d as C1
from kernels import conv_transpose2d as CT
from kernels import depthwise_conv2d as DW
from kernels import spatial as SP

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def check_grads(got, want, atol=1e-4):
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


def run_backward(fn, shapes, accumulate):
    """Call `fn(buffers, accumulate)` on buffers of `shapes` starting at 1 (accumulate) or NaN (overwrite);
    return what the kernel added / wrote."""
    start = 1.0 if accumulate else np.nan
    bufs = [np.full(s, start, np.float32) for s in shapes]
    fn(bufs, accumulate)
    return [b - 1.0 if accumulate else b for b in bufs]


CONV1D = [((2, 9, 3), (3, 3, 4), 1, "valid", 1), ((2, 9, 3), (3, 3, 4), 2, "same", 2),
          ((2, 9, 3), (2, 3, 4), 1, "causal", 3), ((1, 6, 2), (3, 2, 2), 3, "causal", 1)]


@pytest.mark.parametrize("xs,ks,stride,padding,dilation", CONV1D)
@pytest.mark.parametrize("accumulate", [False, True])
def test_conv1d(xs, ks, stride, padding, dilation, accumulate):
    x, k, b = rand(*xs), rand(*ks), rand(ks[2])
    want = R.conv1d_reference(x, k, b, stride, padding, dilation)
    assert want.shape[1] == C1.conv1d_output_length(xs[1], ks[0], stride, padding, dilation)
    out = np.full(want.shape, np.nan, np.float32)
    C1.conv1d_forward_cpu(x, k, b, out, stride, padding, dilation)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    gy = rand(*want.shape)
    got = run_backward(lambda g, acc: C1.conv1d_backward_cpu(x, k, out, gy, *g, stride, padding, dilation,
                                                             accumulate_x=acc, accumulate_kernel=acc,
                                                             accumulate_bias=acc),
                       [x.shape, k.shape, b.shape], accumulate)
    check_grads(got, R.conv1d_backward_reference(x, k, gy, stride, padding, dilation))


def test_conv1d_fused_activation_keeps_the_pre_activation():
    x, k, b = rand(2, 7, 3), rand(3, 3, 2), rand(2)
    z = R.conv1d_reference(x, k, b, 1, "same", 2)
    out, pre = np.empty(z.shape, np.float32), np.empty(z.shape, np.float32)
    C1.conv1d_forward_cpu(x, k, b, out, 1, "same", 2, "gelu", pre)
    np.testing.assert_allclose(pre, z, atol=1e-5)
    gy = rand(*z.shape)
    gx, gk = np.empty_like(x), np.empty_like(k)
    C1.conv1d_backward_cpu(x, k, out, gy, gx, gk, None, 1, "same", 2, "gelu", pre)
    eps = 1e-3  # d(gelu)/dz by central differences of the float64 gelu, then the linear backward
    from kernels import reference as ref
    dz = (ref.activation("gelu", z + eps) - ref.activation("gelu", z - eps)) / (2 * eps) * gy
    check_grads([gx, gk], R.conv1d_backward_reference(x, k, dz, 1, "same", 2)[:2], atol=2e-3)


TRANSPOSE = [((2, 4, 5, 3), (3, 3, 2, 3), (2, 2), "valid", None), ((2, 4, 5, 3), (3, 2, 4, 3), (2, 3), "same", (1, 2)),
             ((1, 3, 3, 2), (3, 3, 2, 2), (1, 1), "same", None), ((1, 4, 4, 16), (3, 3, 16, 16), (1, 1), "valid", None),
             ((1, 3, 2, 2), (2, 2, 3, 2), (3, 3), "valid", (2, 1))]


@pytest.mark.parametrize("xs,ks,strides,padding,output_padding", TRANSPOSE)
@pytest.mark.parametrize("accumulate", [False, True])
def test_conv2d_transpose(xs, ks, strides, padding, output_padding, accumulate):
    x, k, b = rand(*xs), rand(*ks), rand(ks[2])
    want = R.conv2d_transpose_reference(x, k, b, strides, padding, output_padding)
    op = (None, None) if output_padding is None else output_padding
    assert want.shape[1:3] == tuple(CT.transpose_output_length(xs[1 + d], ks[d], strides[d], padding, op[d])
                                    for d in range(2))
    out = np.full(want.shape, np.nan, np.float32)
    CT.conv2d_transpose_forward_cpu(x, k, b, out, strides, padding)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    gy = rand(*want.shape)
    got = run_backward(lambda g, acc: CT.conv2d_transpose_backward_cpu(x, k, gy, *g, strides, padding, acc, acc, acc),
                       [x.shape, k.shape, b.shape], accumulate)
    check_grads(got, R.conv2d_transpose_backward_reference(x, k, gy, strides, padding))


def test_conv2d_transpose_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="does not come from an input of shape"):
        CT.conv2d_transpose_forward_cpu(rand(1, 3, 3, 2), rand(3, 3, 2, 2), None, np.empty((1, 9, 9, 2), np.float32),
                                        (2, 2), "same")


DEPTHWISE = [((2, 7, 6, 3), (3, 2, 3, 2), (1, 1), "valid", (1, 1)), ((2, 7, 8, 2), (3, 3, 2, 3), (1, 1), "same", (2, 2)),
             ((1, 6, 7, 4), (3, 3, 4, 1), (2, 3), "same", (1, 1))]


@pytest.mark.parametrize("xs,ks,strides,padding,dilation", DEPTHWISE)
@pytest.mark.parametrize("accumulate", [False, True])
def test_depthwise_conv2d(xs, ks, strides, padding, dilation, accumulate):
    x, k, b = rand(*xs), rand(*ks), rand(ks[2] * ks[3])
    want = R.depthwise_conv2d_reference(x, k, b, strides, padding, dilation)
    out = np.full(want.shape, np.nan, np.float32)
    DW.depthwise_conv2d_forward_cpu(x, k, b, out, strides, padding, dilation)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    gy = rand(*want.shape)
    got = run_backward(lambda g, acc: DW.depthwise_conv2d_backward_cpu(x, k, gy, *g, strides, padding, dilation,
                                                                       acc, acc, acc),
                       [x.shape, k.shape, b.shape], accumulate)
    check_grads(got, R.depthwise_conv2d_backward_reference(x, k, gy, strides, padding, dilation))


@pytest.mark.parametrize("mode", SP.MODES)
@pytest.mark.parametrize("size", [(2, 3), (3, 1)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_resize2d(mode, size, accumulate):
    x = rand(2, 3, 4, 2)
    want = R.resize2d_reference(x, size, mode)
    out = np.full(want.shape, np.nan, np.float32)
    SP.resize2d_forward_cpu(x, out, size, mode)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    gy = rand(*want.shape)
    got = run_backward(lambda g, acc: SP.resize2d_backward_cpu(gy, g[0], size, mode, acc), [x.shape], accumulate)
    check_grads(got, [R.resize2d_backward_reference(gy, x.shape, size, mode)])


def test_bilinear_matrix_matches_half_pixel_centres():
    # 2 -> 4 along one axis: sources -0.25, 0.25, 0.75, 1.25 clamped at the edges
    np.testing.assert_allclose(R.resize_matrix(2, 2, "bilinear"),
                               [[1, 0], [0.75, 0.25], [0.25, 0.75], [0, 1]])


@pytest.mark.parametrize("pad_h,pad_w", [((1, 2), (0, 3)), ((-1, -2), (2, -1)), ((0, 0), (-3, 0))])
@pytest.mark.parametrize("accumulate", [False, True])
def test_shift_copy_pads_and_crops(pad_h, pad_w, accumulate):
    x = rand(2, 5, 6, 3)
    want = R.pad2d_reference(x, pad_h, pad_w)
    out = np.full(want.shape, np.nan, np.float32)
    SP.shift_copy_cpu(x, out, -pad_h[0], -pad_w[0])
    np.testing.assert_array_equal(out, want)
    gy = rand(*want.shape)
    got = run_backward(lambda g, acc: SP.shift_copy_cpu(gy, g[0], pad_h[0], pad_w[0], acc), [x.shape], accumulate)
    check_grads(got, [R.pad2d_backward_reference(gy, pad_h, pad_w)])


def _adjoint_cases():
    x1, k1 = rand(2, 9, 3), rand(3, 3, 4)
    yield ("conv1d", lambda x, k: R.conv1d_reference(x, k, None, 2, "causal", 2),
           lambda x, k, gy: R.conv1d_backward_reference(x, k, gy, 2, "causal", 2)[:2], x1, k1)
    x2, k2 = rand(2, 3, 4, 3), rand(3, 2, 2, 3)
    yield ("conv2d_transpose", lambda x, k: R.conv2d_transpose_reference(x, k, None, (2, 2), "same", (1, 0)),
           lambda x, k, gy: R.conv2d_transpose_backward_reference(x, k, gy, (2, 2), "same")[:2], x2, k2)
    x3, k3 = rand(2, 6, 5, 2), rand(2, 3, 2, 2)
    yield ("depthwise", lambda x, k: R.depthwise_conv2d_reference(x, k, None, (2, 1), "same", (1, 1)),
           lambda x, k, gy: R.depthwise_conv2d_backward_reference(x, k, gy, (2, 1), "same", (1, 1))[:2], x3, k3)


@pytest.mark.parametrize("case", list(_adjoint_cases()), ids=lambda c: c[0])
def test_references_backward_is_the_adjoint(case):
    """The ops are bilinear in (x, kernel): <gy, f(x, k)> = <grad_x, x> = <grad_k, k>."""
    _, fwd, bwd, x, k = case
    gy = RNG.standard_normal(fwd(x, k).shape)
    gx, gk = bwd(x, k, gy)
    inner = float(np.sum(gy * fwd(x, k)))
    np.testing.assert_allclose(np.sum(gx * x), inner, rtol=1e-9)
    np.testing.assert_allclose(np.sum(gk * k), inner, rtol=1e-9)


@pytest.mark.parametrize("mode", SP.MODES)
def test_resize_and_pad_references_are_adjoint(mode):
    x = RNG.standard_normal((1, 3, 4, 2))
    y = R.resize2d_reference(x, (2, 3), mode)
    gy = RNG.standard_normal(y.shape)
    np.testing.assert_allclose(np.sum(gy * y), np.sum(R.resize2d_backward_reference(gy, x.shape, (2, 3), mode) * x))
    p = R.pad2d_reference(x, (1, -1), (-2, 2))
    gp = RNG.standard_normal(p.shape)
    np.testing.assert_allclose(np.sum(gp * p), np.sum(R.pad2d_backward_reference(gp, (1, -1), (-2, 2)) * x))


def test_conv2d_transpose_reference_by_central_differences():
    x, k = RNG.standard_normal((1, 2, 2, 2)), RNG.standard_normal((2, 2, 1, 2))
    gy = RNG.standard_normal(R.conv2d_transpose_reference(x, k, None, (2, 2), "valid").shape)
    gx, _, _ = R.conv2d_transpose_backward_reference(x, k, gy, (2, 2), "valid")
    eps, num = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        num[idx] = np.sum(gy * (R.conv2d_transpose_reference(x + d, k, None, (2, 2), "valid")
                                - R.conv2d_transpose_reference(x - d, k, None, (2, 2), "valid"))) / (2 * eps)
    np.testing.assert_allclose(gx, num, rtol=1e-6, atol=1e-8)
