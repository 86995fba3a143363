"""The CUDA twins of tests/kernels/test_conv_family.py on tiny shapes (run under NUMBA_ENABLE_CUDASIM=1 by
tests/kernels/test_kernels_cuda_sim.py, or on a GPU): conv1d, conv2d_transpose, depthwise_conv2d, resize2d
and shift_copy against the float64 references, forward and backward, overwrite and accumulate."""

import numpy as np
import pytest

from kernels import _conv_family_reference as R
from kernels import conv1d as C1
from kernels import conv_transpose2d as CT
from kernels import depthwise_conv2d as DW
from kernels import spatial as SP

RNG = np.random.default_rng(1)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def dev(a):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(a))


def backward_bufs(shapes, accumulate):
    return [dev(np.full(s, 1.0 if accumulate else np.nan, np.float32)) for s in shapes]


def check(bufs, want, accumulate, atol=1e-4):
    for b, w in zip(bufs, want, strict=True):
        np.testing.assert_allclose(b.copy_to_host() - (1.0 if accumulate else 0.0), w, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("stride,padding,dilation,accumulate", [(1, "causal", 2, False), (2, "same", 1, True)])
def test_conv1d_cuda(stride, padding, dilation, accumulate):
    x, k, b = rand(2, 7, 2), rand(3, 2, 3), rand(3)
    want = R.conv1d_reference(x, k, b, stride, padding, dilation)
    out = dev(np.full(want.shape, np.nan, np.float32))
    C1.conv1d_forward_cuda(dev(x), dev(k), dev(b), out, stride, padding, dilation)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-5)
    gy = rand(*want.shape)
    bufs = backward_bufs([x.shape, k.shape, b.shape], accumulate)
    C1.conv1d_backward_cuda(dev(x), dev(k), out, dev(gy), *bufs, stride, padding, dilation,
                            accumulate_x=accumulate, accumulate_kernel=accumulate, accumulate_bias=accumulate)
    check(bufs, R.conv1d_backward_reference(x, k, gy, stride, padding, dilation), accumulate)


@pytest.mark.parametrize("strides,padding,output_padding,accumulate", [((2, 2), "valid", None, False),
                                                                       ((2, 1), "same", (1, 0), True)])
def test_conv2d_transpose_cuda(strides, padding, output_padding, accumulate):
    x, k, b = rand(2, 3, 3, 2), rand(3, 3, 3, 2), rand(3)
    want = R.conv2d_transpose_reference(x, k, b, strides, padding, output_padding)
    out = dev(np.full(want.shape, np.nan, np.float32))
    CT.conv2d_transpose_forward_cuda(dev(x), dev(k), dev(b), out, strides, padding)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-5)
    gy = rand(*want.shape)
    bufs = backward_bufs([x.shape, k.shape, b.shape], accumulate)
    CT.conv2d_transpose_backward_cuda(dev(x), dev(k), dev(gy), *bufs, strides, padding, accumulate, accumulate,
                                      accumulate)
    check(bufs, R.conv2d_transpose_backward_reference(x, k, gy, strides, padding), accumulate)


@pytest.mark.parametrize("strides,padding,dilation,accumulate", [((1, 1), "same", (2, 1), True),
                                                                 ((2, 1), "valid", (1, 1), False)])
def test_depthwise_conv2d_cuda(strides, padding, dilation, accumulate):
    x, k, b = rand(2, 5, 4, 2), rand(2, 3, 2, 2), rand(4)
    want = R.depthwise_conv2d_reference(x, k, b, strides, padding, dilation)
    out = dev(np.full(want.shape, np.nan, np.float32))
    DW.depthwise_conv2d_forward_cuda(dev(x), dev(k), dev(b), out, strides, padding, dilation)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-5)
    gy = rand(*want.shape)
    bufs = backward_bufs([x.shape, k.shape, b.shape], accumulate)
    DW.depthwise_conv2d_backward_cuda(dev(x), dev(k), dev(gy), *bufs, strides, padding, dilation, accumulate,
                                      accumulate, accumulate)
    check(bufs, R.depthwise_conv2d_backward_reference(x, k, gy, strides, padding, dilation), accumulate)


@pytest.mark.parametrize("mode,accumulate", [("nearest", True), ("bilinear", False)])
def test_resize2d_cuda(mode, accumulate):
    x = rand(1, 2, 3, 2)
    want = R.resize2d_reference(x, (2, 2), mode)
    out = dev(np.full(want.shape, np.nan, np.float32))
    SP.resize2d_forward_cuda(dev(x), out, (2, 2), mode)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-6)
    gy = rand(*want.shape)
    bufs = backward_bufs([x.shape], accumulate)
    SP.resize2d_backward_cuda(dev(gy), bufs[0], (2, 2), mode, accumulate)
    check(bufs, [R.resize2d_backward_reference(gy, x.shape, (2, 2), mode)], accumulate)


@pytest.mark.parametrize("accumulate", [False, True])
def test_shift_copy_cuda(accumulate):
    x = rand(1, 4, 3, 2)
    want = R.pad2d_reference(x, (1, -1), (-1, 2))
    out = dev(np.full(want.shape, np.nan, np.float32))
    SP.shift_copy_cuda(dev(x), out, -1, 1)
    np.testing.assert_array_equal(out.copy_to_host(), want)
    gy = rand(*want.shape)
    bufs = backward_bufs([x.shape], accumulate)
    SP.shift_copy_cuda(dev(gy), bufs[0], 1, -1, accumulate)
    check(bufs, [R.pad2d_backward_reference(gy, (1, -1), (-1, 2))], accumulate)
