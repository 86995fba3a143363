"""Depthwise 2-D convolution kernels: NHWC input, Keras kernel layout (KH, KW, C, M) for M =
depth_multiplier, output channel ``c * M + m``, strides, dilation, bias, forward and backward.

Each input channel is convolved with its own M filters, so there is no contraction over channels to hand
to BLAS: the CPU variants are direct Numba loops with the (channel, multiplier) loop innermost, over
contiguous memory; depth_multiplier 1 (the MobileNet case) has its own loops whose channel loop is a
plain contiguous multiply-add that LLVM vectorises. Padding is "valid", "same" (TensorFlow's split of the dilated window) or explicit
((top, bottom), (left, right)) pads, as for `conv2d`. CUDA variants live in `kernels/gpu/depthwise_conv2d.py`
(imported on first use). All functions write into caller-provided arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernels._conv_geometry import check_window_padding, pair, window_geometry
from kernels._jit import cpu_jit, store

__all__ = ["DepthwiseGeometry", "depthwise_geometry", "depthwise_conv2d_forward_cpu",
           "depthwise_conv2d_backward_cpu", "depthwise_conv2d_forward_cuda", "depthwise_conv2d_backward_cuda"]


class DepthwiseGeometry(NamedTuple):
    """Every size of one depthwise call."""

    oh: int
    ow: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int


def depthwise_geometry(x_shape, kernel_shape, strides=(1, 1), padding="valid", dilation=(1, 1),
                       who="depthwise_conv2d") -> DepthwiseGeometry:
    """Validate shapes and arguments; return output size, strides, dilation and top/left pads.

    Raises:
        ValueError: naming `who`, when a shape or argument is invalid.
    """
    if len(x_shape) != 4 or len(kernel_shape) != 4:
        raise ValueError(f"{who} expects an NHWC input and a (kh, kw, channels, depth_multiplier) kernel, "
                         f"received shapes {tuple(x_shape)} and {tuple(kernel_shape)}.")
    if int(kernel_shape[2]) != int(x_shape[3]):
        raise ValueError(f"{who}: the input has {x_shape[3]} channels (shape {tuple(x_shape)}) but the kernel "
                         f"{tuple(kernel_shape)} expects {kernel_shape[2]}.")
    sh, sw = pair(strides, who, "strides")
    dh, dw = pair(dilation, who, "dilation_rate")
    window = ((int(kernel_shape[0]) - 1) * dh + 1, (int(kernel_shape[1]) - 1) * dw + 1)
    padding = check_window_padding(padding, who)
    oh, ow, pt, _, pl, _ = window_geometry(int(x_shape[1]), int(x_shape[2]), window, (sh, sw), padding)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{who}: the {window[0]}x{window[1]} (dilated) window does not fit the "
                         f"{x_shape[1]}x{x_shape[2]} input with padding={padding!r}; use padding='same'.")
    return DepthwiseGeometry(oh, ow, sh, sw, dh, dw, pt, pl)


@cpu_jit
def _forward(x, k, bias, has_bias, sh, sw, dh, dw, pt, pl, out):
    n_, h, w, c = x.shape
    kh, kw, _, dm = k.shape
    _, oh, ow, co = out.shape
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                dst = out[n, i, j]
                for o in range(co):
                    dst[o] = bias[o] if has_bias else 0.0
                for a in range(kh):
                    ih = i * sh + a * dh - pt
                    if ih < 0 or ih >= h:
                        continue
                    for b in range(kw):
                        iw = j * sw + b * dw - pl
                        if iw < 0 or iw >= w:
                            continue
                        src = x[n, ih, iw]
                        kab = k[a, b]
                        for ch in range(c):
                            v = src[ch]
                            for m in range(dm):
                                dst[ch * dm + m] += v * kab[ch, m]


@cpu_jit
def _forward_m1(x, k1, bias, has_bias, sh, sw, dh, dw, pt, pl, out):
    # depth_multiplier 1: k1 is (KH, KW, C); the channel loops are contiguous and vectorise
    n_, h, w, c = x.shape
    kh, kw, _ = k1.shape
    _, oh, ow, _ = out.shape
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                dst = out[n, i, j]
                for ch in range(c):
                    dst[ch] = bias[ch] if has_bias else 0.0
                for a in range(kh):
                    ih = i * sh + a * dh - pt
                    if ih < 0 or ih >= h:
                        continue
                    for b in range(kw):
                        iw = j * sw + b * dw - pl
                        if iw < 0 or iw >= w:
                            continue
                        src = x[n, ih, iw]
                        kr = k1[a, b]
                        for ch in range(c):
                            dst[ch] += src[ch] * kr[ch]


@cpu_jit
def _backward_m1(x, k1, dy, sh, sw, dh, dw, pt, pl, want_dx, dx, want_dk, dk1):
    # depth_multiplier 1 (k1, dk1: (KH, KW, C)); accumulates into dx and the float64 dk1, through a
    # per-sample scratch of x's dtype (one sample's sums stay short; the mixed-precision update did not
    # vectorise)
    n_, h, w, c = x.shape
    kh, kw, _ = k1.shape
    _, oh, ow, _ = dy.shape
    part = np.zeros((kh, kw, c), x.dtype)
    for n in range(n_):
        if want_dk:
            part[...] = 0.0
        for i in range(oh):
            for j in range(ow):
                g = dy[n, i, j]
                for a in range(kh):
                    ih = i * sh + a * dh - pt
                    if ih < 0 or ih >= h:
                        continue
                    for b in range(kw):
                        iw = j * sw + b * dw - pl
                        if iw < 0 or iw >= w:
                            continue
                        if want_dx:
                            dst = dx[n, ih, iw]
                            kr = k1[a, b]
                            for ch in range(c):
                                dst[ch] += g[ch] * kr[ch]
                        if want_dk:
                            src = x[n, ih, iw]
                            dkr = part[a, b]
                            for ch in range(c):
                                dkr[ch] += src[ch] * g[ch]
        if want_dk:
            for a in range(kh):
                for b in range(kw):
                    for ch in range(c):
                        dk1[a, b, ch] += part[a, b, ch]


@cpu_jit
def _backward(x, k, dy, sh, sw, dh, dw, pt, pl, want_dx, dx, want_dk, dk):
    # dx (x's dtype) and dk (float64) are accumulated into; the caller zeroes them for overwrite.
    n_, h, w, c = x.shape
    kh, kw, _, dm = k.shape
    _, oh, ow, _ = dy.shape
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                g = dy[n, i, j]
                for a in range(kh):
                    ih = i * sh + a * dh - pt
                    if ih < 0 or ih >= h:
                        continue
                    for b in range(kw):
                        iw = j * sw + b * dw - pl
                        if iw < 0 or iw >= w:
                            continue
                        src = x[n, ih, iw]
                        kab = k[a, b]
                        for ch in range(c):
                            acc = 0.0
                            for m in range(dm):
                                gv = g[ch * dm + m]
                                acc += gv * kab[ch, m]
                                if want_dk:
                                    dk[a, b, ch, m] += src[ch] * gv
                            if want_dx:
                                dx[n, ih, iw, ch] += acc


def _check_buffer(name, arr, shape, dtype, who):
    if arr is None:
        return
    if tuple(arr.shape) != tuple(shape) or arr.dtype != dtype or not arr.flags.c_contiguous:
        raise ValueError(f"{who}: {name} must be a C-contiguous {np.dtype(dtype)} array of shape {tuple(shape)}, "
                         f"received {arr.dtype} {tuple(arr.shape)}.")


def depthwise_conv2d_forward_cpu(x, kernel, bias, out, strides=(1, 1), padding="valid", dilation=(1, 1)) -> None:
    """out = depthwise_conv2d(x, kernel) + bias on the CPU.

    Args:
        x: (N, H, W, C) input.
        kernel: (KH, KW, C, M) weights.
        bias: (C*M,) or None.
        out: (N, OH, OW, C*M) C-contiguous output of x's dtype, written.
        strides, dilation: ints or pairs.
        padding: "valid", "same" or explicit ((top, bottom), (left, right)).
    """
    who = "depthwise_conv2d_forward_cpu"
    g = depthwise_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    x = np.ascontiguousarray(x)
    co = kernel.shape[2] * kernel.shape[3]
    _check_buffer("out", out, (x.shape[0], g.oh, g.ow, co), x.dtype, who)
    b = np.zeros(1, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    k = np.ascontiguousarray(kernel, x.dtype)
    if k.shape[3] == 1:
        _forward_m1(x, k.reshape(k.shape[:3]), b, bias is not None, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, out)
    else:
        _forward(x, k, b, bias is not None, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, out)


def depthwise_conv2d_backward_cpu(x, kernel, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                  strides=(1, 1), padding="valid", dilation=(1, 1), accumulate_x=False,
                                  accumulate_kernel=False, accumulate_bias=False) -> None:
    """Gradients of `depthwise_conv2d_forward_cpu` (None where one is not wanted); ``accumulate_*`` add
    into the buffer instead of overwriting it."""
    who = "depthwise_conv2d_backward_cpu"
    g = depthwise_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    x = np.ascontiguousarray(x)
    dt = x.dtype
    co = kernel.shape[2] * kernel.shape[3]
    gy = np.ascontiguousarray(grad_out, dt)
    if gy.shape != (x.shape[0], g.oh, g.ow, co):
        raise ValueError(f"{who}: grad_out must have shape {(x.shape[0], g.oh, g.ow, co)}, received {gy.shape}.")
    _check_buffer("grad_x", grad_x, x.shape, dt, who)
    _check_buffer("grad_kernel", grad_kernel, kernel.shape, dt, who)
    _check_buffer("grad_bias", grad_bias, (co,), dt, who)
    if grad_x is not None and not accumulate_x:
        grad_x[...] = 0.0
    dk = np.zeros(kernel.shape, np.float64)
    k = np.ascontiguousarray(kernel, dt)
    gx = grad_x if grad_x is not None else np.zeros((1, 1, 1, 1), dt)
    if k.shape[3] == 1:  # one pass per gradient: measured 2x faster than both in one loop nest
        for want_dx, want_dk in ((grad_x is not None, False), (False, grad_kernel is not None)):
            if want_dx or want_dk:
                _backward_m1(x, k.reshape(k.shape[:3]), gy, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, want_dx, gx, want_dk,
                             dk.reshape(dk.shape[:3]))
    else:
        _backward(x, k, gy, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, grad_x is not None, gx, grad_kernel is not None, dk)
    if grad_kernel is not None:
        store(grad_kernel, dk.astype(dt), accumulate_kernel)
    if grad_bias is not None:
        store(grad_bias, gy.sum(axis=(0, 1, 2), dtype=np.float64).astype(dt), accumulate_bias)


def depthwise_conv2d_forward_cuda(x, kernel, bias, out, strides=(1, 1), padding="valid", dilation=(1, 1)) -> None:
    """The CUDA variant of `depthwise_conv2d_forward_cpu` on numba device arrays (same arguments)."""
    from kernels.gpu import depthwise_conv2d as _gpu

    g = depthwise_geometry(x.shape, kernel.shape, strides, padding, dilation, "depthwise_conv2d_forward_cuda")
    _gpu.forward(g, x, kernel, bias, out)


def depthwise_conv2d_backward_cuda(x, kernel, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                   strides=(1, 1), padding="valid", dilation=(1, 1), accumulate_x=False,
                                   accumulate_kernel=False, accumulate_bias=False) -> None:
    """The CUDA variant of `depthwise_conv2d_backward_cpu` on numba device arrays (same arguments)."""
    from kernels.gpu import depthwise_conv2d as _gpu

    g = depthwise_geometry(x.shape, kernel.shape, strides, padding, dilation, "depthwise_conv2d_backward_cuda")
    _gpu.backward(g, x, kernel, grad_out, grad_x, grad_kernel, grad_bias, accumulate_x, accumulate_kernel,
                  accumulate_bias)
