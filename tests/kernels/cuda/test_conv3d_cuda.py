"""The CUDA twins of tests/kernels/test_conv3d.py on tiny shapes (run under NUMBA_ENABLE_CUDASIM=1 by
tests/kernels/test_kernels_cuda_sim.py, or on a GPU): conv3d and pool3d against the float64 references,
forward and backward, overwrite and accumulate."""

import numpy as np
import pytest

from kernels import _conv3d_reference as R
from kernels import conv3d as C3

RNG = np.random.default_rng(4)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def dev(a):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(a))


@pytest.mark.parametrize("strides,padding,dilation,act,accumulate", [((1, 2, 1), "same", (2, 1, 1), "relu", False),
                                                                    ((2, 1, 1), "valid", (1, 1, 1), "gelu", True),
                                                                    ((1, 1, 1), "same", (1, 2, 2), "tanh", True)])
def test_conv3d_cuda(strides, padding, dilation, act, accumulate):
    x, k, b = rand(2, 5, 4, 3, 2), rand(2, 2, 2, 2, 3), rand(3)
    want_z = R.conv3d_reference(x, k, b, strides, padding, dilation)
    out_h = np.empty(want_z.shape, np.float32)
    pre_h = np.empty(want_z.shape, np.float32) if act == "gelu" else None
    C3.conv3d_forward_cpu(x, k, b, out_h, strides, padding, dilation, act, pre_h)
    out = dev(np.full(want_z.shape, np.nan, np.float32))
    pre = None if pre_h is None else dev(np.full(want_z.shape, np.nan, np.float32))
    C3.conv3d_forward_cuda(dev(x), dev(k), dev(b), out, strides, padding, dilation, act, pre)
    np.testing.assert_allclose(out.copy_to_host(), out_h, rtol=1e-5, atol=1e-5)
    gy = rand(*want_z.shape)
    start = 1.0 if accumulate else np.nan
    host = [np.full(s, start, np.float32) for s in (x.shape, k.shape, b.shape)]
    C3.conv3d_backward_cpu(x, k, out_h, gy, *host, strides, padding, dilation, act, pre_h, accumulate, accumulate,
                           accumulate)
    bufs = [dev(np.full(s, start, np.float32)) for s in (x.shape, k.shape, b.shape)]
    C3.conv3d_backward_cuda(dev(x), dev(k), out, dev(gy), *bufs, strides, padding, dilation, act, pre, accumulate,
                            accumulate, accumulate)
    for d, h in zip(bufs, host, strict=True):
        np.testing.assert_allclose(d.copy_to_host(), h, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,padding,accumulate", [("max", "same", False), ("avg", "valid", True)])
def test_pool3d_cuda(mode, padding, accumulate):
    x = np.round(rand(2, 5, 5, 4, 2) * 2) / 2
    size, strides = (2, 3, 2), (2, 2, 1)
    want, _ = R.pool3d_reference(x, size, strides, padding, mode)
    mid_shape = (2, 5, want.shape[2], want.shape[3], 2)
    out, mid = dev(np.full(want.shape, np.nan, np.float32)), dev(np.empty(mid_shape, np.float32))
    arg = (dev(np.zeros(mid_shape, np.int32)), dev(np.zeros(want.shape, np.int32))) if mode == "max" else None
    C3.pool3d_forward_cuda(dev(x), out, mid, size, strides, padding, mode, arg)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-6)
    gy = rand(*want.shape)
    gx = dev(np.full(x.shape, 1.0 if accumulate else np.nan, np.float32))
    C3.pool3d_backward_cuda(dev(x), out, dev(gy), gx, mid, size, strides, padding, mode, arg, accumulate)
    np.testing.assert_allclose(gx.copy_to_host() - (1.0 if accumulate else 0.0),
                               R.pool3d_backward_reference(x, gy, size, strides, padding, mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("strides,padding,out_shape,accumulate", [((2, 1, 2), "same", (2, 6, 3, 4, 3), False),
                                                                  ((1, 2, 1), "valid", (2, 4, 7, 3, 3), True)])
def test_conv3d_transpose_cuda(strides, padding, out_shape, accumulate):
    x, k, b = rand(2, 3, 3, 2, 2), rand(2, 3, 2, 3, 2), rand(3)
    want = R.conv3d_transpose_reference(x, k, b, out_shape, strides, padding)
    out = dev(np.full(out_shape, np.nan, np.float32))
    C3.conv3d_transpose_forward_cuda(dev(x), dev(k), dev(b), out, strides, padding)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-5)
    gy = rand(*out_shape)
    start = 1.0 if accumulate else np.nan
    bufs = [dev(np.full(s, start, np.float32)) for s in (x.shape, k.shape, b.shape)]
    C3.conv3d_transpose_backward_cuda(dev(x), dev(k), dev(gy), *bufs, strides, padding, accumulate, accumulate,
                                      accumulate)
    for d, w in zip(bufs, R.conv3d_transpose_backward_reference(x, k, gy, strides, padding), strict=True):
        np.testing.assert_allclose(d.copy_to_host() - (1.0 if accumulate else 0.0), w, rtol=1e-4, atol=1e-4)
