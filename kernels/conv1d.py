"""1-D convolution kernels (Keras' Conv1D): (N, W, C) input, Keras kernel layout (K, C, CO), strides,
dilation, padding "valid", "same" or "causal", bias and a fused activation.

A 1-D convolution is the `conv2d` kernel on the (N, 1, W, C) view of its input with a (1, K, C, CO) view of
its kernel: no copy, the same im2col + sgemm / CUDA paths. "causal" is explicit left padding of the
dilated window minus one. A dilation above 1 with stride 1 (WaveNet's and TCNs' stacks of rates 1, 2, 4,
..., 512) runs the dilated 2-D kernels (`kernels.conv2d_dilated`: the taps stay K, the sub-grids of the
width are stacked along the batch), so rate 512 costs what rate 1 does. With a stride too (which Keras 3
refuses, and tf.keras 2 accepted) it runs the conv2d kernels on the dilated kernel (zeros between taps,
(K - 1) * d + 1 wide), whose gradient is read back at every d-th tap: exact, at d times the multiplies.
"""

from __future__ import annotations

import numpy as np

from kernels import conv2d as _conv
from kernels import conv2d_dilated as _dil
from kernels._jit import store

__all__ = ["conv1d_padding", "conv1d_output_length", "conv1d_forward_cpu", "conv1d_backward_cpu",
           "conv1d_forward_cuda", "conv1d_backward_cuda"]

PADDINGS = ("valid", "same", "causal")


def conv1d_padding(padding, taps: int, dilation: int):
    """The conv2d kernels' padding for a 1-D padding: "valid" / "same" as they are, "causal" as explicit
    left pads, explicit (left, right) pads (a tile of a split op) as ((0, 0), (left, right))."""
    if padding == "causal":
        return (0, 0), ((taps - 1) * dilation, 0)
    if isinstance(padding, str):
        return padding
    return (0, 0), (int(padding[0]), int(padding[1]))


def conv1d_output_length(width: int, taps: int, stride: int, padding: str, dilation: int = 1) -> int:
    """Output steps of a 1-D convolution (<= 0 when the window does not fit)."""
    from kernels._conv_geometry import out_size

    window = (taps - 1) * dilation + 1
    if padding == "causal":
        return out_size(width, window, stride, (window - 1, 0))
    return out_size(width, window, stride, padding)


def _view4(a):
    return a.reshape(a.shape[0], 1, a.shape[1], a.shape[2])


def _opt4(a):
    return None if a is None else _view4(a)


def _subgrids(stride: int, dilation: int) -> bool:
    """Whether the dilated 2-D kernels run this convolution (a dilation, no stride)."""
    return dilation > 1 and stride == 1


def _taps4(kernel, dtype):
    """The (1, K, C, CO) view of a (K, C, CO) kernel."""
    return np.ascontiguousarray(kernel, dtype).reshape(1, *kernel.shape)


def _dilated_cpu(kernel, dilation: int, dtype):
    k = np.asarray(kernel, dtype)
    taps, c, co = k.shape
    if dilation == 1:
        return np.ascontiguousarray(k).reshape(1, taps, c, co)
    kd = np.zeros((1, (taps - 1) * dilation + 1, c, co), dtype)
    kd[0, ::dilation] = k
    return kd


def conv1d_forward_cpu(x, kernel, bias, out, stride=1, padding="valid", dilation=1, activation=None,
                       pre_activation=None) -> None:
    """out = activation(conv1d(x, kernel) + bias) on the CPU.

    Args:
        x: (N, W, C) input.
        kernel: (K, C, CO) weights.
        bias: (CO,) or None.
        out: (N, OW, CO) C-contiguous output of x's dtype, written.
        stride, dilation: positive ints.
        padding: "valid", "same", "causal" or explicit (left, right) pads.
        activation, pre_activation: as for `conv2d_forward_cpu`.
    """
    x = np.ascontiguousarray(x)
    pre = None if pre_activation is None else _view4(pre_activation)
    pad = conv1d_padding(padding, kernel.shape[0], dilation)
    if _subgrids(stride, dilation):
        _dil.conv2d_dilated_forward_cpu(_view4(x), _taps4(kernel, x.dtype), bias, _view4(out), (1, 1), pad,
                                        activation, pre, dilation=(1, dilation))
        return
    k4 = _dilated_cpu(kernel, dilation, x.dtype)
    _conv.conv2d_forward_cpu(_view4(x), k4, bias, _view4(out), (1, stride), pad, activation, pre_activation=pre)


def conv1d_backward_cpu(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None, stride=1,
                        padding="valid", dilation=1, activation=None, pre_activation=None, accumulate_x=False,
                        accumulate_kernel=False, accumulate_bias=False) -> None:
    """Gradients of `conv1d_forward_cpu` (arguments as for `conv2d_backward_cpu`, in 1-D shapes)."""
    x = np.ascontiguousarray(x)
    if _subgrids(stride, dilation):
        _dil.conv2d_dilated_backward_cpu(
            _view4(x), _taps4(kernel, x.dtype), _opt4(out), _view4(np.ascontiguousarray(grad_out)), _opt4(grad_x),
            None if grad_kernel is None else grad_kernel.reshape(1, *grad_kernel.shape), grad_bias, (1, 1),
            conv1d_padding(padding, kernel.shape[0], dilation), activation, _opt4(pre_activation), accumulate_x,
            accumulate_kernel, accumulate_bias, dilation=(1, dilation))
        return
    k4 = _dilated_cpu(kernel, dilation, x.dtype)
    gk4 = None
    if grad_kernel is not None:
        gk4 = grad_kernel.reshape(k4.shape) if dilation == 1 else np.empty(k4.shape, x.dtype)
    _conv.conv2d_backward_cpu(_view4(x), k4, _opt4(out), _view4(np.ascontiguousarray(grad_out)), _opt4(grad_x), gk4,
                              grad_bias, (1, stride), conv1d_padding(padding, kernel.shape[0], dilation),
                              activation, _opt4(pre_activation), accumulate_x,
                              accumulate_kernel and dilation == 1, accumulate_bias)
    if grad_kernel is not None and dilation != 1:
        store(grad_kernel, gk4[0, ::dilation], accumulate_kernel)


def conv1d_forward_cuda(x, kernel, bias, out, stride=1, padding="valid", dilation=1, activation=None,
                        pre_activation=None) -> None:
    """The CUDA variant of `conv1d_forward_cpu` on numba float32 device arrays."""
    from kernels.gpu import conv1d as _gpu

    pre = None if pre_activation is None else _view4(pre_activation)
    if _subgrids(stride, dilation):
        _dil.conv2d_dilated_forward_cuda(_view4(x), _gpu.dilated(kernel, 1), bias, _view4(out), (1, 1),
                                         conv1d_padding(padding, kernel.shape[0], dilation), activation, pre,
                                         dilation=(1, dilation))
        return
    k4 = _gpu.dilated(kernel, dilation)
    _conv.conv2d_forward_cuda(_view4(x), k4, bias, _view4(out), (1, stride),
                              conv1d_padding(padding, kernel.shape[0], dilation), activation, pre_activation=pre)


def conv1d_backward_cuda(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None, stride=1,
                         padding="valid", dilation=1, activation=None, pre_activation=None, accumulate_x=False,
                         accumulate_kernel=False, accumulate_bias=False) -> None:
    """The CUDA variant of `conv1d_backward_cpu` on numba float32 device arrays."""
    from kernels.gpu import conv1d as _gpu
    from kernels.gpu import empty, reshaped

    if _subgrids(stride, dilation):
        _dil.conv2d_dilated_backward_cuda(
            _view4(x), _gpu.dilated(kernel, 1), _opt4(out), _view4(grad_out), _opt4(grad_x),
            None if grad_kernel is None else reshaped(grad_kernel, 1, *grad_kernel.shape), grad_bias, (1, 1),
            conv1d_padding(padding, kernel.shape[0], dilation), activation, _opt4(pre_activation), accumulate_x,
            accumulate_kernel, accumulate_bias, dilation=(1, dilation))
        return
    k4 = _gpu.dilated(kernel, dilation)
    gk4 = None
    if grad_kernel is not None:
        gk4 = grad_kernel.reshape(k4.shape) if dilation == 1 else empty(k4.shape, k4.dtype)
    _conv.conv2d_backward_cuda(_view4(x), k4, _opt4(out), _view4(grad_out), _opt4(grad_x), gk4, grad_bias,
                               (1, stride), conv1d_padding(padding, kernel.shape[0], dilation), activation,
                               _opt4(pre_activation), accumulate_x, accumulate_kernel and dilation == 1,
                               accumulate_bias)
    if grad_kernel is not None and dilation != 1:
        _gpu.undilate(gk4, grad_kernel, dilation, accumulate_kernel)
