"""3-D convolution and pooling kernels (NDHWC input, Keras kernel layout (KD, KH, KW, C_in, C_out)),
forward and backward, built on the 2-D kernels.

Convolution folds the depth taps into the channels. The input is gathered into

    xg[n * OD + od, h, w, kd * C + c] = x[n, od * SD + kd * DD - PF, h, w, c]   (zero outside the depth)

and the kernel permuted to (KH, KW, KD * C, C_out); one 2-D convolution (`kernels.conv2d`, through
`kernels.conv2d_dilated` for a height or width dilation: its im2col / Winograd choice, fused bias and
activation, saved pre-activation) over the N * OD slices then computes the
whole output, since it sums over (kh, kw, kd, c) exactly as the 3-D convolution does. The backward runs the
2-D backward on the same gathered input and gathers the gradient back over the taps (no atomics). The
gathered input costs KD times the input's memory; it is one of conv2d's per-thread workspaces on the CPU and a buffer
kept on the input's device array on CUDA.

A transposed convolution (kernel (KD, KH, KW, filters, C_in)) is the input-gradient of the convolution of
its output's shape by the same kernel, so its forward is that convolution's backward and its backward that
convolution's forward (and kernel gradient); the bias is added after, any activation is a separate op.

Pooling is separable: the 2-D pool over (height, width) of every depth slice, then a pool over depth of
that result viewed as (N, D, OH * OW, C) with a (PD, 1) window. Max pooling is separable exactly; average
pooling too, "same" included, since TensorFlow divides by the count of valid elements, a product of the
per-dim counts. The max pooling's gradient goes to every element of a window equal to its maximum, as
TensorFlow's MaxPool3DGrad sends it (its 2-D one picks one; windows of zeros after a ReLU tie often), so
it is a pass of its own over x, the output and its gradient; the average's runs the two 2-D backwards.
"""

from __future__ import annotations

import numpy as np

from kernels import conv2d as _conv2d
from kernels import conv2d_dilated as _dil
from kernels import pool2d as _pool
from kernels._conv_geometry import check_padding, out_size, pads
from kernels._jit import cpu_jit, store

__all__ = ["triple", "conv3d_geometry", "pool3d_geometry", "conv3d_forward_cpu", "conv3d_backward_cpu",
           "conv3d_forward_cuda", "conv3d_backward_cuda", "conv3d_transpose_forward_cpu",
           "conv3d_transpose_backward_cpu", "conv3d_transpose_forward_cuda", "conv3d_transpose_backward_cuda", "pool3d_forward_cpu", "pool3d_backward_cpu",
           "pool3d_forward_cuda", "pool3d_backward_cuda"]


def triple(value, who: str, arg: str) -> tuple[int, int, int]:
    """`value` as three positive ints (an int means the same for the three spatial dims).

    Raises:
        ValueError: naming `who` and `arg` when the value is not one or three positive integers.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        vals = (value,) * 3
    else:
        try:
            vals = tuple(value)
        except TypeError:
            vals = ()
    if len(vals) != 3 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in vals):
        raise ValueError(f"{who} expects {arg} to be a positive int or a tuple of 3 positive ints, received "
                         f"{arg}={value!r}.")
    return tuple(int(v) for v in vals)


def _depth(d: int, window: int, stride: int, padding) -> tuple[int, int]:
    """(output depth, front pad) of a depth `d` under a window (already dilated) and padding."""
    return out_size(d, window, stride, padding), pads(d, window, stride, padding)[0]


def conv3d_geometry(x_shape, kernel_shape, strides, padding, dilation=(1, 1, 1), who="conv3d"):
    """(od, front pad, (oh, ow)) of a 3-D convolution; raises ValueError naming `who` on a bad shape."""
    if len(x_shape) != 5 or len(kernel_shape) != 5:
        raise ValueError(f"{who} expects a 5-D (N, D, H, W, C) input and a 5-D (KD, KH, KW, C, CO) kernel, "
                         f"received {tuple(x_shape)} and {tuple(kernel_shape)}.")
    if x_shape[4] != kernel_shape[3]:
        raise ValueError(f"{who}: the input has {x_shape[4]} channels but the kernel {tuple(kernel_shape)} "
                         f"expects {kernel_shape[3]}.")
    padding = check_padding(padding, who)
    window = (kernel_shape[0] - 1) * dilation[0] + 1
    od, pf = _depth(int(x_shape[1]), window, strides[0], padding)
    oh = out_size(int(x_shape[2]), (kernel_shape[1] - 1) * dilation[1] + 1, strides[1], padding)
    ow = out_size(int(x_shape[3]), (kernel_shape[2] - 1) * dilation[2] + 1, strides[2], padding)
    if min(od, oh, ow) <= 0:
        raise ValueError(f"{who}: the kernel {tuple(kernel_shape[:3])} (dilation {tuple(dilation)}) does not fit "
                         f"the input {tuple(x_shape)} with padding={padding!r}.")
    return od, pf, (oh, ow)


def pool3d_geometry(x_shape, pool_size, strides, padding, who="pool3d"):
    """(od, front pad, back pad, (oh, ow)) of a 3-D pooling."""
    if len(x_shape) != 5:
        raise ValueError(f"{who} expects a 5-D (N, D, H, W, C) input, received {tuple(x_shape)}.")
    padding = check_padding(padding, who)
    od, pf = _depth(int(x_shape[1]), pool_size[0], strides[0], padding)
    pb = pads(int(x_shape[1]), pool_size[0], strides[0], padding)[1]
    oh = out_size(int(x_shape[2]), pool_size[1], strides[1], padding)
    ow = out_size(int(x_shape[3]), pool_size[2], strides[2], padding)
    if min(od, oh, ow) <= 0:
        raise ValueError(f"{who}: the window {tuple(pool_size)} does not fit the input {tuple(x_shape)} with "
                         f"padding={padding!r}.")
    return od, pf, pb, (oh, ow)


# --- the depth gather and its transpose -------------------------------------------------------------------
@cpu_jit
def _gather(x, sd, dd, pf, od_n, xg):
    n_n, d_n, h_n, w_n, c = x.shape
    kd_n = xg.shape[3] // c
    for n in range(n_n):
        for od in range(od_n):
            r = n * od_n + od
            for kd in range(kd_n):
                d = od * sd + kd * dd - pf
                inside = 0 <= d < d_n
                for h in range(h_n):
                    for w in range(w_n):
                        for ch in range(c):
                            xg[r, h, w, kd * c + ch] = x[n, d, h, w, ch] if inside else 0.0


@cpu_jit
def _scatter(gxg, sd, dd, pf, od_n, accumulate, gx):
    n_n, d_n, h_n, w_n, c = gx.shape
    kd_n = gxg.shape[3] // c
    if not accumulate:
        gx[:] = 0.0
    for n in range(n_n):
        for od in range(od_n):
            r = n * od_n + od
            for kd in range(kd_n):
                d = od * sd + kd * dd - pf
                if 0 <= d < d_n:
                    for h in range(h_n):
                        for w in range(w_n):
                            for ch in range(c):
                                gx[n, d, h, w, ch] += gxg[r, h, w, kd * c + ch]


def _workspace(name: str, shape, dtype) -> np.ndarray:
    """A per-thread scratch array: conv2d's workspaces (shards of one op run concurrently on several CPU
    processors), grown as needed and freed with theirs (`kernels.conv2d.release_workspaces`)."""
    return _conv2d._workspace("conv3d_" + name, shape, dtype)


def _folded_kernel(kernel, dt):
    kd, kh, kw, c, co = kernel.shape
    return np.ascontiguousarray(np.asarray(kernel, dt).transpose(1, 2, 0, 3, 4)).reshape(kh, kw, kd * c, co)


def _rows(a, od: int):
    """(N, OD, OH, OW, C) as the (N * OD, OH, OW, C) view the 2-D kernels write."""
    return None if a is None else a.reshape(a.shape[0] * od, *a.shape[2:])


def conv3d_forward_cpu(x, kernel, bias, out, strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1),
                       activation=None, pre_activation=None) -> None:
    """out = activation(conv3d(x, kernel) + bias) on the CPU.

    Args:
        x: (N, D, H, W, C) input.
        kernel: (KD, KH, KW, C, CO) weights.
        bias: (CO,) or None.
        out: (N, OD, OH, OW, CO) C-contiguous output of x's dtype, written.
        strides: int or 3 ints.
        padding: "valid" or "same" (TensorFlow's split).
        dilation: int or 3 ints (with strides 1 along height and width where those dilate).
        activation, pre_activation: as for `conv2d_forward_cpu` (the pre-activation shaped like `out`).
    """
    who = "conv3d_forward_cpu"
    strides, dilation = triple(strides, who, "strides"), triple(dilation, who, "dilation")
    od, pf, _ = conv3d_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    x = np.ascontiguousarray(x)
    n, kd, c = x.shape[0], kernel.shape[0], x.shape[4]
    xg = _workspace("xg", (n * od, x.shape[2], x.shape[3], kd * c), x.dtype)
    _gather(x, strides[0], dilation[0], pf, od, xg)
    _dil.conv2d_dilated_forward_cpu(xg, _folded_kernel(kernel, x.dtype), bias, _rows(out, od), strides[1:], padding,
                                    activation, _rows(pre_activation, od), dilation[1:])


def conv3d_backward_cpu(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                        strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1), activation=None,
                        pre_activation=None, accumulate_x=False, accumulate_kernel=False,
                        accumulate_bias=False) -> None:
    """Gradients of `conv3d_forward_cpu` (arguments as for `conv2d_backward_cpu`, in 3-D shapes)."""
    who = "conv3d_backward_cpu"
    strides, dilation = triple(strides, who, "strides"), triple(dilation, who, "dilation")
    od, pf, _ = conv3d_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    x = np.ascontiguousarray(x)
    dt = x.dtype
    n, kd, kh, kw, c, co = x.shape[0], *kernel.shape
    xg = _workspace("xg", (n * od, x.shape[2], x.shape[3], kd * c), dt)
    if grad_kernel is not None:  # only the kernel's gradient reads the input
        _gather(x, strides[0], dilation[0], pf, od, xg)
    gxg = None if grad_x is None else _workspace("gxg", xg.shape, dt)
    gk = None if grad_kernel is None else _workspace("gk", (kh, kw, kd * c, co), dt)
    _dil.conv2d_dilated_backward_cpu(xg, _folded_kernel(kernel, dt), _rows(out, od),
                                     _rows(np.ascontiguousarray(grad_out), od), gxg, gk, grad_bias, strides[1:],
                                     padding, activation, _rows(pre_activation, od), accumulate_bias=accumulate_bias,
                                     dilation=dilation[1:])
    if grad_x is not None:
        _scatter(gxg, strides[0], dilation[0], pf, od, accumulate_x, grad_x)
    if grad_kernel is not None:
        store(grad_kernel, gk.reshape(kh, kw, kd, c, co).transpose(2, 0, 1, 3, 4), accumulate_kernel)


def conv3d_forward_cuda(x, kernel, bias, out, strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1),
                        activation=None, pre_activation=None) -> None:
    """The CUDA variant of `conv3d_forward_cpu` on numba float32 device arrays (same arguments)."""
    from kernels.gpu import conv3d as _gpu

    who = "conv3d_forward_cuda"
    strides, dilation = triple(strides, who, "strides"), triple(dilation, who, "dilation")
    od, pf, _ = conv3d_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    xg = _gpu.gathered(x, kernel.shape[0], strides[0], dilation[0], pf, od)
    _dil.conv2d_dilated_forward_cuda(xg, _gpu.folded(kernel), bias, _gpu.rows(out, od), strides[1:], padding,
                                     activation, None if pre_activation is None else _gpu.rows(pre_activation, od),
                                     dilation[1:])


def conv3d_backward_cuda(x, kernel, out, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                         strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1), activation=None,
                         pre_activation=None, accumulate_x=False, accumulate_kernel=False,
                         accumulate_bias=False) -> None:
    """The CUDA variant of `conv3d_backward_cpu` on numba float32 device arrays (same arguments)."""
    from kernels.gpu import conv3d as _gpu

    who = "conv3d_backward_cuda"
    strides, dilation = triple(strides, who, "strides"), triple(dilation, who, "dilation")
    od, pf, _ = conv3d_geometry(x.shape, kernel.shape, strides, padding, dilation, who)
    xg = _gpu.gathered(x, kernel.shape[0], strides[0], dilation[0], pf, od, fill=grad_kernel is not None)
    gxg = None if grad_x is None else _gpu.scratch(x, "gxg", xg.shape, xg.dtype)
    gk = None
    if grad_kernel is not None:
        kd, kh, kw, c, co = (int(s) for s in kernel.shape)
        gk = _gpu.scratch(grad_kernel, "gk", (kh, kw, kd * c, co), grad_kernel.dtype)
    # a linear backward never reads `out`, but the 2-D one wants an array there
    _dil.conv2d_dilated_backward_cuda(xg, _gpu.folded(kernel), _gpu.rows(grad_out if out is None else out, od),
                                      _gpu.rows(grad_out, od), gxg, gk, grad_bias, strides[1:], padding, activation,
                                      None if pre_activation is None else _gpu.rows(pre_activation, od),
                                      accumulate_bias=accumulate_bias, dilation=dilation[1:])
    if grad_x is not None:
        _gpu.scatter(gxg, strides[0], dilation[0], pf, od, accumulate_x, grad_x)
    if grad_kernel is not None:
        _gpu.unfold_kernel(gk, accumulate_kernel, grad_kernel)


# --- transposed convolution -------------------------------------------------------------------------------
def conv3d_transpose_forward_cpu(x, kernel, bias, out, strides=(1, 1, 1), padding="valid") -> None:
    """out = conv3d_transpose(x, kernel) + bias on the CPU.

    Args:
        x: (N, D, H, W, C) input.
        kernel: (KD, KH, KW, F, C) weights (Keras' Conv3DTranspose layout).
        bias: (F,) or None.
        out: (N, OD, OH, OW, F) C-contiguous output, written; its shape picks the output size (Keras'
            output_padding), and the convolution of that shape by `kernel` must give x's.
        strides: int or 3 ints.
        padding: "valid" or "same".
    """
    conv3d_backward_cpu(out, kernel, None, x, out, None, None, strides, padding)
    if bias is not None:
        out += np.asarray(bias, out.dtype)


def conv3d_transpose_backward_cpu(x, kernel, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                  strides=(1, 1, 1), padding="valid", accumulate_x=False, accumulate_kernel=False,
                                  accumulate_bias=False) -> None:
    """Gradients of `conv3d_transpose_forward_cpu` for the output gradient `grad_out` (N, OD, OH, OW, F)."""
    grad_out = np.ascontiguousarray(grad_out)
    if grad_x is not None:
        target = _workspace("tgx", grad_x.shape, grad_x.dtype) if accumulate_x else grad_x
        conv3d_forward_cpu(grad_out, kernel, None, target, strides, padding)
        if accumulate_x:
            grad_x += target
    if grad_kernel is not None:
        conv3d_backward_cpu(grad_out, kernel, None, np.ascontiguousarray(x), None, grad_kernel, None, strides,
                            padding, accumulate_kernel=accumulate_kernel)
    if grad_bias is not None:
        store(grad_bias, grad_out.sum(axis=(0, 1, 2, 3)), accumulate_bias)


def conv3d_transpose_forward_cuda(x, kernel, bias, out, strides=(1, 1, 1), padding="valid") -> None:
    """The CUDA variant of `conv3d_transpose_forward_cpu` (same arguments, numba device arrays)."""
    from kernels.gpu.channel_ops import add_bias_cuda

    conv3d_backward_cuda(out, kernel, None, x, out, None, None, strides, padding)
    if bias is not None:
        add_bias_cuda(out, bias)


def conv3d_transpose_backward_cuda(x, kernel, grad_out, grad_x=None, grad_kernel=None, grad_bias=None,
                                   strides=(1, 1, 1), padding="valid", accumulate_x=False, accumulate_kernel=False,
                                   accumulate_bias=False) -> None:
    """The CUDA variant of `conv3d_transpose_backward_cpu` (same arguments, numba device arrays)."""
    from kernels.gpu import conv3d as _gpu
    from kernels.gpu.channel_ops import add_into_cuda, bias_grad_cuda

    if grad_x is not None:
        target = _gpu.scratch(grad_x, "tgx", grad_x.shape, grad_x.dtype) if accumulate_x else grad_x
        conv3d_forward_cuda(grad_out, kernel, None, target, strides, padding)
        if accumulate_x:
            add_into_cuda(grad_x, target)
    if grad_kernel is not None:
        conv3d_backward_cuda(grad_out, kernel, None, x, None, grad_kernel, None, strides, padding,
                             accumulate_kernel=accumulate_kernel)
    if grad_bias is not None:
        bias_grad_cuda(grad_out, grad_bias, accumulate_bias)


# --- pooling ----------------------------------------------------------------------------------------------
def _pool_views(x_shape, od: int, oh: int, ow: int):
    n, d, h, w, c = (int(s) for s in x_shape)
    return (n * d, h, w, c), (n * d, oh, ow, c), (n, d, oh * ow, c), (n, od, oh * ow, c)


def _pool_args(x_shape, pool_size, strides, padding, who):
    pool_size, strides = triple(pool_size, who, "pool_size"), triple(strides, who, "strides")
    od, pf, pb, (oh, ow) = pool3d_geometry(x_shape, pool_size, strides, padding, who)
    return pool_size, strides, check_padding(padding, who), od, ((pf, pb), (0, 0)), oh, ow


def pool3d_forward_cpu(x, out, mid, pool_size, strides=None, padding="valid", mode="max", argmax=None) -> None:
    """out = the 3-D max or average pool of x (N, D, H, W, C) on the CPU.

    Args:
        out: (N, OD, OH, OW, C) output, written.
        mid: (N, D, OH, OW, C) buffer receiving the pool over (height, width) of every depth slice.
        pool_size, strides: int or 3 ints (strides default to pool_size).
        padding: "valid" or "same".
        mode: "max" or "avg".
        argmax: for "max", a pair of int32 buffers shaped like `mid` and `out` (the windows' winners, read
            by the backward); None for "avg".
    """
    who = "pool3d_forward_cpu"
    pool_size, strides, padding, od, dpad, oh, ow = _pool_args(x.shape, pool_size, strides or pool_size,
                                                               padding, who)
    xs, ms, mv, ov = _pool_views(x.shape, od, oh, ow)
    a1, a2 = (None, None) if argmax is None else (argmax[0].reshape(ms), argmax[1].reshape(ov))
    _pool.pool2d_forward_cpu(np.ascontiguousarray(x).reshape(xs), mid.reshape(ms), pool_size[1:], strides[1:],
                             padding, mode, a1)
    _pool.pool2d_forward_cpu(mid.reshape(mv), out.reshape(ov), (pool_size[0], 1), (strides[0], 1), dpad, mode, a2)


@cpu_jit
def _max_backward(x, y, dy, pd, ph, pw, sd, sh, sw, fd, fh, fw, accumulate, gx):
    # gx (+)= dy at every element of a window equal to its maximum
    n_n, d_n, h_n, w_n, c_n = x.shape
    od_n, oh_n, ow_n = y.shape[1], y.shape[2], y.shape[3]
    if not accumulate:
        gx[:] = 0.0
    for n in range(n_n):
        for od in range(od_n):
            for oh in range(oh_n):
                for ow in range(ow_n):
                    for kd in range(pd):
                        d = od * sd + kd - fd
                        if d < 0 or d >= d_n:
                            continue
                        for kh in range(ph):
                            h = oh * sh + kh - fh
                            if h < 0 or h >= h_n:
                                continue
                            for kw in range(pw):
                                w = ow * sw + kw - fw
                                if w < 0 or w >= w_n:
                                    continue
                                for c in range(c_n):
                                    if x[n, d, h, w, c] == y[n, od, oh, ow, c]:
                                        gx[n, d, h, w, c] += dy[n, od, oh, ow, c]


def _front_pads(x_shape, pool_size, strides, padding) -> tuple[int, int, int]:
    return tuple(pads(int(x_shape[1 + i]), pool_size[i], strides[i], padding)[0] for i in range(3))


def pool3d_backward_cpu(x, out, grad_out, grad_x, mid, pool_size, strides=None, padding="valid", mode="max",
                        argmax=None, accumulate=False) -> None:
    """Gradient of `pool3d_forward_cpu` with respect to x (`out`, `mid` and `argmax` from the forward; the
    max pooling's reads x and `out`, the average's `mid`)."""
    who = "pool3d_backward_cpu"
    pool_size, strides, padding, od, dpad, oh, ow = _pool_args(x.shape, pool_size, strides or pool_size,
                                                               padding, who)
    if mode == "max":
        _max_backward(np.ascontiguousarray(x), np.ascontiguousarray(out), np.ascontiguousarray(grad_out),
                      *pool_size, *strides, *_front_pads(x.shape, pool_size, strides, padding), accumulate, grad_x)
        return
    xs, ms, mv, ov = _pool_views(x.shape, od, oh, ow)
    gmid = _workspace("gmid", mv, mid.dtype)
    _pool.pool2d_backward_cpu(mid.reshape(mv), np.ascontiguousarray(grad_out).reshape(ov), gmid,
                              (pool_size[0], 1), (strides[0], 1), dpad, mode)
    _pool.pool2d_backward_cpu(np.ascontiguousarray(x).reshape(xs), gmid.reshape(ms), grad_x.reshape(xs),
                              pool_size[1:], strides[1:], padding, mode, None, accumulate)


def pool3d_forward_cuda(x, out, mid, pool_size, strides=None, padding="valid", mode="max", argmax=None) -> None:
    """The CUDA variant of `pool3d_forward_cpu` (same arguments, numba device arrays)."""
    from kernels.gpu import reshaped

    who = "pool3d_forward_cuda"
    pool_size, strides, padding, od, dpad, oh, ow = _pool_args(x.shape, pool_size, strides or pool_size,
                                                               padding, who)
    xs, ms, mv, ov = _pool_views(x.shape, od, oh, ow)
    a1, a2 = (None, None) if argmax is None else (reshaped(argmax[0], *ms), reshaped(argmax[1], *ov))
    _pool.pool2d_forward_cuda(reshaped(x, *xs), reshaped(mid, *ms), pool_size[1:], strides[1:], padding, mode, a1)
    _pool.pool2d_forward_cuda(reshaped(mid, *mv), reshaped(out, *ov), (pool_size[0], 1), (strides[0], 1), dpad,
                              mode, a2)


def pool3d_backward_cuda(x, out, grad_out, grad_x, mid, pool_size, strides=None, padding="valid", mode="max",
                         argmax=None, accumulate=False) -> None:
    """The CUDA variant of `pool3d_backward_cpu` (same arguments, numba device arrays)."""
    from kernels.gpu import conv3d as _gpu
    from kernels.gpu import reshaped

    who = "pool3d_backward_cuda"
    pool_size, strides, padding, od, dpad, oh, ow = _pool_args(x.shape, pool_size, strides or pool_size,
                                                               padding, who)
    if mode == "max":
        _gpu.max_pool_backward(x, out, grad_out, pool_size, strides, _front_pads(x.shape, pool_size, strides, padding),
                               accumulate, grad_x)
        return
    xs, ms, mv, ov = _pool_views(x.shape, od, oh, ow)
    gmid = _gpu.scratch(mid, "gmid", mv, mid.dtype)
    _pool.pool2d_backward_cuda(reshaped(mid, *mv), reshaped(grad_out, *ov), gmid, (pool_size[0], 1),
                               (strides[0], 1), dpad, mode)
    _pool.pool2d_backward_cuda(reshaped(x, *xs), reshaped(gmid, *ms), reshaped(grad_x, *xs), pool_size[1:],
                               strides[1:], padding, mode, None, accumulate)
