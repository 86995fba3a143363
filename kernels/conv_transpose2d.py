"""Transposed 2-D convolution kernels (Keras' Conv2DTranspose): NHWC input (N, H, W, C), Keras kernel
layout (KH, KW, F, C), output (N, OH, OW, F), bias and an element-wise activation applied in place
(the pre-activation kept in a caller buffer for activations whose gradient needs it, as `conv2d`).

No new arithmetic: the forward of a transposed convolution is the input-gradient of the ordinary
convolution that maps (OH, OW, F) to (H, W, C) with the same kernel, strides and padding, and its backward
is that convolution's forward (grad input) and its kernel-gradient with the roles of image and gradient
swapped (grad kernel; for deep ones per stride phase, `_conv_taps`). Both run on the `conv2d` kernels (im2col + sgemm or Winograd on the CPU,
`_conv_cuda` on the GPU), so they inherit their speed and their padding rules: "valid", "same"
(TensorFlow's split, computed from the *output* size OH, as tf.nn.conv2d_transpose does) or explicit pads.
"""

from __future__ import annotations

import numpy as np

from kernels import _conv_simd as _simd
from kernels import _conv_taps as _taps
from kernels import activation_loops as _act_loops
from kernels import activations as _acts
from kernels import conv2d as _conv
from kernels._jit import store

__all__ = ["transpose_output_length", "transpose_geometry", "conv2d_transpose_forward_cpu", "conv2d_transpose_backward_cpu",
           "conv2d_transpose_forward_cuda", "conv2d_transpose_backward_cuda"]

_LINEAR = _acts.resolve_activation("linear")
# From this im2col depth (KH*KW*F) of the convolution whose input gradient this one is, the kernel gradient
# runs per stride phase (`_conv_taps.kernel_grad`: a GEMM reducing over ~680 pixels into each phase's
# (C x taps*F) block) instead of im2col + GEMM, whose chunks hold one 32-pixel output line at that depth
# and re-read the whole (8192 x 256) gradient per line. DCGAN's 32x32x256 -> 64x64x512 (4x4, stride 2, 32
# samples, one thread, ms, five alternating runs, loaded 2-core machine): 3275 -> 2600 median (2772 ->
# 2215 best); 16x16x128 -> 32x32x256 (depth 4096) stayed faster on im2col, 204 against 214. Same sums in
# the same order: the results are equal.
PHASE_DK_MIN_DEPTH = 8192


def transpose_output_length(size: int, window: int, stride: int, padding: str, output_padding=None) -> int:
    """Keras' output length of a transposed convolution along one dim ("valid" or "same"; output_padding
    None: the smallest length whose convolution gives back `size`, as Keras)."""
    if padding == "valid":
        extra = max(stride - window, 0) if output_padding is None else output_padding
        return (size - 1) * stride + window + extra
    if output_padding is None:
        return size * stride
    return (size - 1) * stride + window % 2 + output_padding


def transpose_geometry(x_shape, kernel_shape, out_shape, strides=(1, 1), padding="valid",
                       who="conv2d_transpose") -> _conv.ConvGeometry:
    """The geometry of the ordinary convolution whose input-gradient this transposed one is (its input is
    `out_shape`, its output `x_shape`).

    Raises:
        ValueError: naming `who`, when the three shapes do not fit together.
    """
    if len(x_shape) != 4 or len(out_shape) != 4 or len(kernel_shape) != 4:
        raise ValueError(f"{who} expects NHWC input and output and a (kh, kw, filters, in_channels) kernel, "
                         f"received {tuple(x_shape)}, {tuple(out_shape)} and {tuple(kernel_shape)}.")
    g = _conv.conv_geometry(out_shape, (kernel_shape[0], kernel_shape[1], kernel_shape[2], kernel_shape[3]),
                            strides, padding, who)
    if (g.n, g.oh, g.ow, g.co) != tuple(int(s) for s in x_shape):
        raise ValueError(f"{who}: an output of shape {tuple(out_shape)} does not come from an input of shape "
                         f"{tuple(x_shape)} with kernel {tuple(kernel_shape)}, strides {strides} and padding "
                         f"{padding!r} (the convolution back would give {(g.n, g.oh, g.ow, g.co)}); check "
                         f"output_padding (it must be smaller than the stride).")
    return g


def _act(activation) -> _acts.Activation:
    return _conv.fused_activation(activation)


def _check_pre(act, pre, who: str) -> None:
    if pre is None and not _acts.grad_from_output(act):
        raise ValueError(f"{who}: the gradient of activation {act} needs the pre-activation; pass a "
                         f"pre_activation buffer shaped like out (see kernels.conv2d.needs_pre_activation).")


def conv2d_transpose_forward_cpu(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                                 pre_activation=None) -> None:
    """out = activation(conv2d_transpose(x, kernel) + bias) on the CPU.

    Args:
        x: (N, H, W, C) input.
        kernel: (KH, KW, F, C) weights (Keras' Conv2DTranspose layout).
        bias: (F,) or None.
        out: (N, OH, OW, F) C-contiguous output of x's dtype, written; its shape sets OH and OW.
        strides: int or pair.
        padding: "valid", "same" or explicit ((top, bottom), (left, right)) pads of the output.
        activation: None, a `kernels.activations` name, or an Activation.
        pre_activation: buffer shaped like `out` receiving the value before the activation; required when
            `kernels.conv2d.needs_pre_activation(activation)`.
    """
    act = _act(activation)
    _check_pre(act, pre_activation, "conv2d_transpose_forward_cpu")
    transpose_geometry(x.shape, kernel.shape, out.shape, strides, padding, "conv2d_transpose_forward_cpu")
    # `out` stands in for the convolution's input only for its shape: with no kernel gradient asked the
    # convolution's backward never reads it.
    _conv.conv2d_backward_cpu(out, kernel, None, x, grad_x=out, strides=strides, padding=padding)
    if bias is not None:
        out += np.asarray(bias, out.dtype)
    if act.code != _acts.LINEAR:
        if pre_activation is not None:
            np.copyto(pre_activation, out)
        _act_loops.activation_forward_cpu(out, out, act)


def conv2d_transpose_backward_cpu(x, kernel, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                  strides=(1, 1), padding="valid", accumulate_x=False, accumulate_kernel=False,
                                  accumulate_bias=False, activation=None, out=None, pre_activation=None) -> None:
    """Gradients of `conv2d_transpose_forward_cpu` (None where one is not wanted); ``accumulate_*`` add into
    the buffer instead of overwriting it. With an activation, `out` (the forward output) and, where its
    gradient needs it, `pre_activation` are read."""
    who = "conv2d_transpose_backward_cpu"
    x = np.ascontiguousarray(x)
    grad_out = np.ascontiguousarray(grad_out, x.dtype)
    g = transpose_geometry(x.shape, kernel.shape, grad_out.shape, strides, padding, who)
    act = _act(activation)
    if act.code != _acts.LINEAR:
        _check_pre(act, pre_activation, who)
        z = out if _acts.grad_from_output(act) else pre_activation
        dz = np.empty_like(grad_out)
        _act_loops.activation_backward_cpu(z, out, grad_out, dz, act)
        grad_out = dz
    if grad_x is not None:
        target = np.empty_like(grad_x) if accumulate_x else grad_x
        _conv.conv2d_forward_cpu(grad_out, kernel, None, target, strides, padding)
        if accumulate_x:
            grad_x += target
    if grad_kernel is not None and g.kh * g.kw * g.c >= PHASE_DK_MIN_DEPTH and x.dtype == kernel.dtype:
        grad = _taps.kernel_grad(g, grad_out, x, _simd.flag(), _conv._workspace)
        if accumulate_kernel:
            grad_kernel += grad
        else:
            grad_kernel[...] = grad
    elif grad_kernel is not None:
        _conv.conv2d_backward_cpu(grad_out, kernel, None, x, grad_kernel=grad_kernel, strides=strides,
                                  padding=padding, accumulate_kernel=accumulate_kernel)
    if grad_bias is not None:
        store(grad_bias, grad_out.sum(axis=(0, 1, 2), dtype=np.float64).astype(grad_bias.dtype), accumulate_bias)


def conv2d_transpose_forward_cuda(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                                  pre_activation=None) -> None:
    """The CUDA variant of `conv2d_transpose_forward_cpu` on numba float32 device arrays."""
    from kernels import _conv_cuda
    from kernels.gpu.activations import activation_forward_cuda
    from kernels.gpu.channel_ops import add_bias_cuda, copy_cuda

    act = _act(activation)
    _check_pre(act, pre_activation, "conv2d_transpose_forward_cuda")
    g = transpose_geometry(x.shape, kernel.shape, out.shape, strides, padding, "conv2d_transpose_forward_cuda")
    _conv_cuda.backward(g, None, kernel, None, None, x, out, None, None, _LINEAR, False, False, False)
    if bias is not None:
        add_bias_cuda(out, bias)
    if act.code != _acts.LINEAR:
        if pre_activation is not None:
            copy_cuda(pre_activation, out)
        activation_forward_cuda(out, out, act)


def conv2d_transpose_backward_cuda(x, kernel, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                   strides=(1, 1), padding="valid", accumulate_x=False, accumulate_kernel=False,
                                   accumulate_bias=False, activation=None, out=None, pre_activation=None) -> None:
    """The CUDA variant of `conv2d_transpose_backward_cpu` on numba float32 device arrays."""
    from kernels import _conv_cuda
    from kernels.gpu import empty
    from kernels.gpu.activations import activation_backward_cuda
    from kernels.gpu.channel_ops import add_into_cuda, bias_grad_cuda

    who = "conv2d_transpose_backward_cuda"
    g = transpose_geometry(x.shape, kernel.shape, grad_out.shape, strides, padding, who)
    act = _act(activation)
    if act.code != _acts.LINEAR:
        _check_pre(act, pre_activation, who)
        dz = empty(grad_out.shape, grad_out.dtype)
        activation_backward_cuda(out if _acts.grad_from_output(act) else pre_activation, out, grad_out, dz, act)
        grad_out = dz
    if grad_x is not None:
        target = empty(grad_x.shape, grad_x.dtype) if accumulate_x else grad_x
        _conv.conv2d_forward_cuda(grad_out, kernel, None, target, strides, padding)
        if accumulate_x:
            add_into_cuda(grad_x, target)
    if grad_kernel is not None:
        _conv_cuda.backward(g, grad_out, kernel, None, None, x, None, grad_kernel, None, _LINEAR, False,
                            accumulate_kernel, False)
    if grad_bias is not None:
        bias_grad_cuda(grad_out, grad_bias, accumulate_bias)
