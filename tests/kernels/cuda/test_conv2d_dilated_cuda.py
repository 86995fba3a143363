"""The CUDA twin of tests/kernels/test_conv2d_dilated.py on tiny shapes (run under NUMBA_ENABLE_CUDASIM=1 by
tests/kernels/test_kernels_cuda_sim.py, or on a GPU): the device gather into sub-grids, the conv2d CUDA
kernels on the stack and the scatter back, against the float64 reference, forward and backward, overwrite
and accumulate, with the pre-activation kept where the activation's gradient needs it."""

import numpy as np
import pytest

from kernels import conv2d as K
from kernels import conv2d_dilated as D
from kernels._conv_reference import conv2d_backward_reference, conv2d_reference

RNG = np.random.default_rng(5)


def dev(a):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(a))


@pytest.mark.parametrize("shape,kernel,dilation,padding,activation,accumulate", [
    ((2, 5, 7, 3), (3, 3, 3, 4), (2, 3), "same", "relu", False),
    ((1, 7, 5, 2), (2, 3, 2, 3), (3, 1), "valid", "gelu", True),
    ((1, 4, 6, 2), (3, 2, 2, 2), (2, 2), ((1, 2), (2, 0)), "tanh", False),  # a spatial tile's explicit pads
    ((1, 3, 3, 1), (3, 3, 1, 2), (4, 4), "same", None, True),  # the rate spans past the image
])
def test_conv2d_dilated_cuda(shape, kernel, dilation, padding, activation, accumulate):
    x = RNG.standard_normal(shape).astype(np.float32)
    k = (RNG.standard_normal(kernel) / np.sqrt(np.prod(kernel[:3]))).astype(np.float32)
    b = RNG.standard_normal(kernel[-1]).astype(np.float32)
    want = conv2d_reference(x, k, b, (1, 1), padding, activation, dilation)
    out = dev(np.full(want.shape, np.nan, np.float32))
    pre = dev(np.full(want.shape, np.nan, np.float32)) if K.needs_pre_activation(activation) else None
    dx_, dk_ = dev(x), dev(k)
    D.conv2d_dilated_forward_cuda(dx_, dk_, dev(b), out, 1, padding, activation, pre_activation=pre,
                                  dilation=dilation)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-4, atol=1e-5)
    if pre is not None:
        np.testing.assert_allclose(pre.copy_to_host(), conv2d_reference(x, k, b, (1, 1), padding, "linear", dilation),
                                   rtol=1e-4, atol=1e-5)
    gy = RNG.standard_normal(want.shape).astype(np.float32)
    base = 1.0 if accumulate else np.nan
    bufs = [dev(np.full(a.shape, base, np.float32)) for a in (x, k, b)]
    D.conv2d_dilated_backward_cuda(dx_, dk_, out, dev(gy), *bufs, 1, padding, activation, pre_activation=pre,
                                   accumulate_x=accumulate, accumulate_kernel=accumulate,
                                   accumulate_bias=accumulate, dilation=dilation)
    want_grads = conv2d_backward_reference(x, k, b, gy, (1, 1), padding, activation, dilation)
    for got, ref, what in zip(bufs, want_grads, ("grad_x", "grad_kernel", "grad_bias"), strict=True):
        np.testing.assert_allclose(got.copy_to_host() - (1.0 if accumulate else 0.0), ref, rtol=1e-4, atol=1e-5,
                                   err_msg=what)


def test_conv2d_dilated_cuda_refuses_strides():
    x, k = dev(np.zeros((1, 5, 5, 1), np.float32)), dev(np.zeros((3, 3, 1, 1), np.float32))
    with pytest.raises(ValueError, match=r"conv2d_dilated_forward_cuda: strides=\(2, 2\) with dilation=\(2, 2\)"):
        D.conv2d_dilated_forward_cuda(x, k, None, dev(np.zeros((1, 3, 3, 1), np.float32)), 2, "same", dilation=2)
