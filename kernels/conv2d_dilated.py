"""Dilated (atrous) 2-D convolution kernels: `conv2d` with ``dilation != (1, 1)``, forward and backward, with
the bias and an elementwise activation fused in, on the CPU and CUDA.

A dilated convolution is computed exactly without zero-stuffing the kernel (a 3x3 kernel at rate 18 stays
3x3, not 37x37), by TensorFlow's space-to-batch method. Output row ``i`` reads padded input rows
``i + a * d`` (stride 1: TensorFlow allows no stride with a dilation), so the outputs of one residue
``r = i % d`` read only the padded rows of that residue, and do so as an undilated 'valid' convolution:

    out[:, r::dh, s::dw, :] = conv2d_valid(x_pad[:, r::dh, s::dw, :], kernel)     for r < dh, s < dw

Every residue's output is rounded up to ``OHS = ceil(OH / dh)`` rows (and ``OWS = ceil(OW / dw)`` columns)
so the dh * dw sub-grids have equal shapes ``(OHS + KH - 1, OWS + KW - 1)`` and are stacked along the
batch: one gather (``G[(r * dw + s) * N + n, j, l] = x_pad[n, r + dh * j, s + dw * l]``, zero outside the
input), one call of the `kernels.conv2d` kernels on the ``(dh * dw * N, ...)`` stack (im2col + GEMM or
Winograd, the fused bias / activation and the pre-activation they keep), and one scatter back. The extra
rows/columns rounding adds (fewer than d per side) are computed and dropped in the forward and carry a
zero gradient in the backward. The sub-grids partition the padded input, so the grad input is a scatter
(not a sum) of the stack's grad input; input rows no window reads get zero, as in `kernels.conv2d`.

Padding is "valid", "same" (TensorFlow's split of the dilated window's padding) or explicit ((top,
bottom), (left, right)) pads, so a spatial tile runs on its halo'd input slice with its local pads.
Scratch stacks are per-thread workspaces of `kernels.conv2d` (freed by its `release_workspaces`). The
CUDA gather and scatter are in `kernels.gpu.conv2d_dilated`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernels import activations as _acts
from kernels import conv2d as _conv
from kernels._conv_geometry import check_window_padding, pair, window_geometry
from kernels._jit import cpu_jit

__all__ = ["DilatedGeometry", "dilated_geometry", "stack_algorithm", "conv2d_dilated_forward_cpu",
           "conv2d_dilated_backward_cpu", "conv2d_dilated_forward_cuda", "conv2d_dilated_backward_cuda"]


class DilatedGeometry(NamedTuple):
    """Every size of one dilated convolution call, and of its stack of sub-grids."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    co: int
    dh: int
    dw: int
    oh: int
    ow: int
    pt: int
    pl: int

    @property
    def ohs(self) -> int:
        """Output rows per sub-grid (OH rounded up to a multiple of dh, over dh)."""
        return -(-self.oh // self.dh)

    @property
    def ows(self) -> int:
        """Output columns per sub-grid."""
        return -(-self.ow // self.dw)

    @property
    def stack_x(self) -> tuple[int, int, int, int]:
        """Shape of the stacked input sub-grids: (dh * dw * N, OHS + KH - 1, OWS + KW - 1, C)."""
        return self.dh * self.dw * self.n, self.ohs + self.kh - 1, self.ows + self.kw - 1, self.c

    @property
    def stack_y(self) -> tuple[int, int, int, int]:
        """Shape of the stacked output sub-grids: (dh * dw * N, OHS, OWS, C_out)."""
        return self.dh * self.dw * self.n, self.ohs, self.ows, self.co

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return self.n, self.oh, self.ow, self.co


def dilated_geometry(x_shape, kernel_shape, strides=(1, 1), padding="valid", dilation=(1, 1),
                     who: str = "conv2d_dilated") -> DilatedGeometry:
    """Validate shapes and arguments of a dilated convolution and return its sizes.

    Raises:
        ValueError: naming `who`, when a shape or argument is invalid, or strides and dilation both
            differ from 1.
    """
    n, h, w, c, kh, kw, co = _conv.check_shapes(x_shape, kernel_shape, who)
    dh, dw = pair(dilation, who, "dilation")
    sh, sw = pair(strides, who, "strides")
    if (sh, sw) != (1, 1) and (dh, dw) != (1, 1):
        raise ValueError(f"{who}: strides={(sh, sw)} with dilation={(dh, dw)}: a dilated convolution takes "
                         f"strides (1, 1), as in TensorFlow; use strides=1, or dilation=1 with the strides.")
    padding = check_window_padding(padding, who)
    window = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    oh, ow, pt, _, pl, _ = window_geometry(h, w, window, (1, 1), padding)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{who}: the {kh}x{kw} kernel dilated by {(dh, dw)} spans {window[0]}x{window[1]}, "
                         f"which does not fit the {h}x{w} input with padding={padding!r}; use padding='same', "
                         f"a smaller dilation or a larger input.")
    return DilatedGeometry(n, h, w, c, kh, kw, co, dh, dw, oh, ow, pt, pl)


def stack_algorithm(g: DilatedGeometry, pass_: str = "forward") -> str:
    """The `kernels.conv2d` CPU algorithm for the stack of sub-grids (what "auto" runs).

    The stack is deep (dh * dw * N samples) and its images small (OHS x OWS outputs, 2-6 a side for the
    rates of DeepLab's ASPP), where F(2x2, 3x3) Winograd (which conv2d's rule once picked there) works its
    backward in chunks of two samples. Measured on the stacks (one thread, Xeon with AVX-512, the same pixel count
    per row, forward / backward ms, gemm vs F(2x2) vs F(4x4)): 32->64 channels, OHS 2: 10.9 / 23.4 vs
    21.1 / 97.5 vs 19.4 / 37.4; OHS 3: 10.8 / 22.1 vs 22.9 / 78.1 vs 10.1 / 18.9; OHS 4: 10.5 / 22.4 vs
    13.1 / 45.3 vs 5.8 / 11.3; OHS 5: 10.2 / 21.5 vs 15.4 / 46.5 vs 11.0 / 21.6; 128->128, OHS 2: 20.7 /
    45.0 vs 14.1 / 117.8 vs 29.4 / 59.8; OHS 3: 20.5 / 47.9 vs 22.8 / 90.4 vs 13.4 / 28.8; OHS 5: 20.3 /
    46.5 vs 17.9 / 55.0 vs 17.7 / 36.9. So: F(4x4, 3x3) for 3x3 kernels with at least
    WINOGRAD4_MIN_CHANNELS channels and sub-grids of at least 3 outputs a side (conv2d's rule already
    picks it from 6), with as many output pixels in the stack as conv2d's rule asks (WINOGRAD_MIN_PIXELS),
    else conv2d's rule (im2col + GEMM).
    """
    stack = _conv.conv_geometry(g.stack_x, (g.kh, g.kw, g.c, g.co))
    if ((g.kh, g.kw) == (3, 3) and min(g.c, g.co) >= _conv.WINOGRAD4_MIN_CHANNELS and min(g.ohs, g.ows) >= 3
            and stack.n * g.ohs * g.ows >= _conv.WINOGRAD_MIN_PIXELS):
        return "winograd4"
    return _conv.choose_cpu_algorithm(stack, pass_)


# --- CPU: the gather into sub-grids and the scatter back (one nogil Numba pass each) ----------------------
@cpu_jit
def _gather(src, dh, dw, off_h, off_w, dst):
    """dst[(r * dw + s) * N + n, j, l] = src[n, r + dh * j - off_h, s + dw * l - off_w] (zero outside src)."""
    n_, h, w, c = src.shape
    _, hs, ws, _ = dst.shape
    for r in range(dh):
        for s in range(dw):
            for n in range(n_):
                b = (r * dw + s) * n_ + n
                for j in range(hs):
                    i = r + dh * j - off_h
                    inside = 0 <= i < h
                    for col in range(ws):
                        k = s + dw * col - off_w
                        if inside and 0 <= k < w:
                            for ch in range(c):
                                dst[b, j, col, ch] = src[n, i, k, ch]
                        else:
                            for ch in range(c):
                                dst[b, j, col, ch] = 0


@cpu_jit
def _scatter(src, dh, dw, off_h, off_w, accumulate, dst):
    """The adjoint of `_gather` over dst's elements: dst[n, i, k] (+)= src[(r * dw + s) * N + n, j, l] where
    i + off_h = r + dh * j and k + off_w = s + dw * l; zero (or unchanged) where j or l lies past src."""
    n_, h, w, c = dst.shape
    _, hs, ws, _ = src.shape
    for n in range(n_):
        for i in range(h):
            r, j = (i + off_h) % dh, (i + off_h) // dh
            for k in range(w):
                s, col = (k + off_w) % dw, (k + off_w) // dw
                if j < hs and col < ws:
                    b = (r * dw + s) * n_ + n
                    if accumulate:
                        for ch in range(c):
                            dst[n, i, k, ch] += src[b, j, col, ch]
                    else:
                        for ch in range(c):
                            dst[n, i, k, ch] = src[b, j, col, ch]
                elif not accumulate:
                    for ch in range(c):
                        dst[n, i, k, ch] = 0


def _stack(name: str, src, g: DilatedGeometry, shape, offsets=(0, 0)):
    """`src` gathered into a (per-thread) stack of sub-grids of `shape`."""
    dst = _conv._workspace(name, shape, src.dtype)
    _gather(np.ascontiguousarray(src), g.dh, g.dw, offsets[0], offsets[1], dst)
    return dst


def conv2d_dilated_forward_cpu(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                               pre_activation=None, dilation=(1, 1), algorithm: str = "auto") -> None:
    """out = activation(conv2d(x, kernel, dilation) + bias) on the CPU: kernel tap (a, b) reads the input
    at offset (a * dilation[0], b * dilation[1]) of its window.

    Args:
        x: (N, H, W, C_in) input.
        kernel: (KH, KW, C_in, C_out) weights (undilated).
        bias: (C_out,) or None.
        out: (N, OH, OW, C_out) C-contiguous output of x's dtype, written; OH and OW are those of the
            dilated window (KH - 1) * dh + 1 by (KW - 1) * dw + 1.
        strides: (1, 1) when any dilation is above 1 (TensorFlow's rule), else any (then this is
            `conv2d_forward_cpu`).
        padding: "valid", "same" (TensorFlow's split of the dilated window's padding) or explicit
            ((top, bottom), (left, right)) pads.
        activation, pre_activation: as for `conv2d_forward_cpu`.
        dilation: int or pair of positive ints.
        algorithm: the `kernels.conv2d` algorithm of the undilated convolution of the sub-grid stack:
            "auto" (`stack_algorithm`), "gemm", "direct", "winograd" or "winograd4".

    Example:
        >>> x, k = np.ones((2, 9, 9, 4), np.float32), np.ones((3, 3, 4, 8), np.float32)
        >>> out = np.empty((2, 9, 9, 8), np.float32)
        >>> conv2d_dilated_forward_cpu(x, k, None, out, padding="same", dilation=6)  # taps 6 pixels apart
    """
    who = "conv2d_dilated_forward_cpu"
    g = dilated_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    if (g.dh, g.dw) == (1, 1):
        _conv.conv2d_forward_cpu(x, kernel, bias, out, strides, padding, activation, pre_activation, algorithm)
        return
    act = _conv.fused_activation(activation)
    dt = np.asarray(x).dtype
    _conv._check_out("out", out, g.out_shape, dt, who)
    _conv._check_pre(pre_activation, act, g.out_shape, dt, who)
    xs = _stack("dil_x", x, g, g.stack_x, (g.pt, g.pl))
    ys = _conv._workspace("dil_y", g.stack_y, dt)
    pres = None if pre_activation is None else _conv._workspace("dil_pre", g.stack_y, dt)
    algo = stack_algorithm(g, "forward") if algorithm == "auto" else algorithm
    _conv.conv2d_forward_cpu(xs, kernel, bias, ys, (1, 1), "valid", act, pres, algo)
    _scatter(ys, g.dh, g.dw, 0, 0, False, out)
    if pre_activation is not None:
        _scatter(pres, g.dh, g.dw, 0, 0, False, pre_activation)


def conv2d_dilated_backward_cpu(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                strides=(1, 1), padding="valid", activation=None, pre_activation=None,
                                accumulate_x=False, accumulate_kernel=False, accumulate_bias=False,
                                dilation=(1, 1), algorithm: str = "auto") -> None:
    """Gradients of `conv2d_dilated_forward_cpu` on the CPU (arguments as for `conv2d_backward_cpu`, plus
    `dilation`); `accumulate_*` add into the buffer instead of overwriting it."""
    who = "conv2d_dilated_backward_cpu"
    g = dilated_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    if (g.dh, g.dw) == (1, 1):
        _conv.conv2d_backward_cpu(x, kernel, out, grad_out, grad_x, grad_kernel, grad_bias, strides, padding,
                                  activation, pre_activation, accumulate_x, accumulate_kernel, accumulate_bias,
                                  algorithm)
        return
    act = _conv.fused_activation(activation)
    dt = np.asarray(x).dtype
    if tuple(grad_out.shape) != g.out_shape:
        raise ValueError(f"{who}: grad_out must have shape {g.out_shape}, received {tuple(grad_out.shape)}.")
    _conv._check_out("grad_x", grad_x, x.shape, dt, who)
    if act.code != _acts.LINEAR and (out is None or tuple(out.shape) != g.out_shape):
        raise ValueError(f"{who}: out (the forward output) must have shape {g.out_shape}, received "
                         f"{None if out is None else tuple(out.shape)}.")
    needs_pre = not _acts.grad_from_output(act)
    if needs_pre:
        _conv._check_pre(pre_activation, act, g.out_shape, dt, who)
    xs = _stack("dil_x", x, g, g.stack_x, (g.pt, g.pl))
    dys = _stack("dil_dy", np.asarray(grad_out, dt), g, g.stack_y)
    ys = _stack("dil_y", np.asarray(out, dt), g, g.stack_y) if act.code != _acts.LINEAR else None
    pres = _stack("dil_pre", pre_activation, g, g.stack_y) if needs_pre else None
    dxs = _conv._workspace("dil_dx", g.stack_x, dt) if grad_x is not None else None
    algo = stack_algorithm(g, "backward") if algorithm == "auto" else algorithm
    _conv.conv2d_backward_cpu(xs, kernel, ys, dys, dxs, grad_kernel, grad_bias, (1, 1), "valid", act, pres,
                              False, accumulate_kernel, accumulate_bias, algo)
    if grad_x is not None:
        _scatter(dxs, g.dh, g.dw, g.pt, g.pl, accumulate_x, grad_x)


def conv2d_dilated_forward_cuda(x, kernel, bias, out, strides=(1, 1), padding="valid", activation=None,
                                pre_activation=None, dilation=(1, 1)) -> None:
    """The CUDA variant of `conv2d_dilated_forward_cpu` on numba float32 device arrays (same arguments)."""
    who = "conv2d_dilated_forward_cuda"
    g = dilated_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    if (g.dh, g.dw) == (1, 1):
        _conv.conv2d_forward_cuda(x, kernel, bias, out, strides, padding, activation, pre_activation)
        return
    from kernels.gpu import conv2d_dilated as _gpu

    act = _conv.fused_activation(activation)
    _check_device_shape(who, "out", out, g.out_shape)
    if pre_activation is None and not _acts.grad_from_output(act):
        raise ValueError(f"{who}: the gradient of activation {act} needs the pre-activation; pass a "
                         f"pre_activation buffer shaped like out.")
    xs = _gpu.gather(x, g.dh, g.dw, g.pt, g.pl, g.stack_x)
    ys = _gpu.stack(out, "y", g.stack_y, out.dtype)
    pres = None if pre_activation is None else _gpu.stack(pre_activation, "pre", g.stack_y, out.dtype)
    _conv.conv2d_forward_cuda(xs, kernel, bias, ys, (1, 1), "valid", act, pres)
    _gpu.scatter(ys, g.dh, g.dw, 0, 0, False, out)
    if pre_activation is not None:
        _gpu.scatter(pres, g.dh, g.dw, 0, 0, False, pre_activation)


def conv2d_dilated_backward_cuda(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                 strides=(1, 1), padding="valid", activation=None, pre_activation=None,
                                 accumulate_x=False, accumulate_kernel=False, accumulate_bias=False,
                                 dilation=(1, 1)) -> None:
    """The CUDA variant of `conv2d_dilated_backward_cpu` on numba float32 device arrays (same arguments)."""
    who = "conv2d_dilated_backward_cuda"
    g = dilated_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    if (g.dh, g.dw) == (1, 1):
        _conv.conv2d_backward_cuda(x, kernel, out, grad_out, grad_x, grad_kernel, grad_bias, strides, padding,
                                   activation, pre_activation, accumulate_x, accumulate_kernel, accumulate_bias)
        return
    from kernels.gpu import conv2d_dilated as _gpu

    act = _conv.fused_activation(activation)
    _check_device_shape(who, "grad_out", grad_out, g.out_shape)
    needs_pre = not _acts.grad_from_output(act)
    if needs_pre and pre_activation is None:
        raise ValueError(f"{who}: the gradient of activation {act} needs the forward's pre_activation buffer.")
    xs = _gpu.gather(x, g.dh, g.dw, g.pt, g.pl, g.stack_x)
    dys = _gpu.gather(grad_out, g.dh, g.dw, 0, 0, g.stack_y)
    # a linear activation reads no forward output (the CUDA backward only wants an array there)
    ys = _gpu.gather(out, g.dh, g.dw, 0, 0, g.stack_y) if act.code != _acts.LINEAR else dys
    pres = _gpu.gather(pre_activation, g.dh, g.dw, 0, 0, g.stack_y) if needs_pre else None
    dxs = _gpu.stack(grad_x, "dx", g.stack_x, x.dtype) if grad_x is not None else None
    _conv.conv2d_backward_cuda(xs, kernel, ys, dys, dxs, grad_kernel, grad_bias, (1, 1), "valid", act, pres,
                               False, accumulate_kernel, accumulate_bias)
    if grad_x is not None:
        _gpu.scatter(dxs, g.dh, g.dw, g.pt, g.pl, accumulate_x, grad_x)


def _check_device_shape(who: str, name: str, arr, shape) -> None:
    if arr is None or tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{who}: {name} must have shape {tuple(shape)}, received "
                         f"{None if arr is None else tuple(arr.shape)}.")
