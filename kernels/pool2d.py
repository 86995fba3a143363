"""2-D max / average pooling and global pooling kernels (NHWC), forward and backward.

Windows follow TensorFlow: "same" padding splits the pad with the odd pixel at the bottom/right, padded
positions never win a max and are not counted by an average. Explicit pads ((top, bottom), (left,
right)), each smaller than the window, behave the same way (`_conv_geometry`): a spatial tile of a
pooling runs on its halo'd input slice with its local pads. Max pooling records, per output element,
the flat spatial index (row * W + col, in the array the kernel was given) of its window's first maximum
in row-major order; the backward routes the gradient there (the op keeps that index as a saved
per-sample buffer), as TensorFlow's MaxPool gradient. NaN as TensorFlow's CPU MaxPool: the value skips
NaN and starts from the dtype's lowest finite value (a window of NaN and -inf alone gives it), while the
index scan starts at the window's first position and keeps a NaN there, where TensorFlow's MaxPoolGrad
sends the gradient. Global max pooling instead shares the gradient
equally among all the positions equal to the maximum, as TensorFlow's reduce_max gradient (Keras 3's
global max poolings call ops.max), and a NaN anywhere in a (sample, channel) makes its maximum NaN and
every gradient of it NaN, as reduce_max and its gradient (which divides by a count of 0 there). Input
rows/columns no window reads get a zero gradient.

CPU loops are Numba `@njit(nogil=True, cache=True)` with the channel loop innermost (contiguous in NHWC,
vectorised). CUDA variants live in `_conv_pool_cuda.py`, imported on first use.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels._conv_geometry import check_window_padding, pair, window_geometry
from kernels._jit import u64 as _u

__all__ = [
    "MODES", "pool_geometry", "pool2d_forward_cpu", "pool2d_backward_cpu", "pool2d_forward_cuda",
    "pool2d_backward_cuda", "global_pool2d_forward_cpu", "global_pool2d_backward_cpu",
    "global_pool2d_forward_cuda", "global_pool2d_backward_cuda",
]

MODES = ("max", "avg")


def pool_geometry(x_shape, pool_size, strides=None, padding="valid", mode="max", who="pool2d"):
    """Validate the arguments; returns (ph, pw, sh, sw, oh, ow, pt, pl).

    Raises:
        ValueError: naming `who`, for a bad rank, argument, mode, or a window that does not fit.
    """
    if len(x_shape) != 4:
        raise ValueError(f"{who} expects an NHWC input of rank 4, received shape {tuple(x_shape)}.")
    if mode not in MODES:
        raise ValueError(f"{who} expects mode 'max' or 'avg', received mode={mode!r}.")
    ph, pw = pair(pool_size, who, "pool_size")
    sh, sw = pair(pool_size if strides is None else strides, who, "strides")
    padding = check_window_padding(padding, who)
    _, h, w, _ = x_shape
    oh, ow, pt, pb, pl, pr = window_geometry(h, w, (ph, pw), (sh, sw), padding)
    if not isinstance(padding, str) and (max(pt, pb) >= ph or max(pl, pr) >= pw):
        raise ValueError(f"{who}: explicit padding={padding!r} must be smaller than the {ph}x{pw} pool "
                         f"window on every side (a window of padding only has no value); pass pads "
                         f"below ({ph}, {pw}).")
    if oh <= 0 or ow <= 0:
        how = ("padding='valid'; use padding='same'" if padding == "valid"
               else f"padding={padding!r}; use larger pads")
        raise ValueError(f"{who}: a {ph}x{pw} pool window does not fit the {h}x{w} input with "
                         f"{how} or a smaller pool_size.")
    return ph, pw, sh, sw, oh, ow, pt, pl


def _lowest(dtype):
    """The smallest finite value of `dtype`, where a max pool's value scan starts (TensorFlow's MaxPool)."""
    dtype = np.dtype(dtype)
    return dtype.type(np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min)


@njit(nogil=True, cache=True)
def _max_forward(x, ph, pw, sh, sw, pt, pl, lo, out, argmax):
    # argmax: the `v > best` scan from the window's first position; out: the largest value not NaN, from
    # `lo`, which is that scan's maximum unless a NaN stood first or nothing exceeded `lo` (rescanned then)
    n_, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    for n in range(n_):
        for i in range(oh):
            r0 = max(i * sh - pt, 0)
            r1 = min(i * sh - pt + ph, h)
            for j in range(ow):
                s0 = max(j * sw - pl, 0)
                s1 = min(j * sw - pl + pw, w)
                best = out[n, i, j]
                where = argmax[n, i, j]
                first = x[n, r0, s0]
                for k in range(c):
                    best[k] = first[k]
                    where[k] = r0 * w + s0
                for r in range(r0, r1):
                    for s in range(s0, s1):
                        src = x[n, r, s]
                        idx = r * w + s
                        # unconditional stores of selects: LLVM vectorises this, not an `if v > best`
                        for k in range(c):
                            v = src[k]
                            b = best[k]
                            better = v > b
                            best[k] = v if better else b
                            where[k] = idx if better else where[k]
                rescan = 0
                for k in range(c):
                    rescan += 0 if best[k] >= lo else 1
                if rescan:
                    for k in range(c):
                        if not best[k] >= lo:
                            m = lo
                            for r in range(r0, r1):
                                for s in range(s0, s1):
                                    v = x[n, r, s, k]
                                    m = v if v > m else m
                            best[k] = m


@njit(nogil=True, cache=True)
def _max_backward(grad_out, argmax, grad_x):
    """grad_x += the scatter of grad_out to each window's argmax (any window overlap)."""
    n_, oh, ow, c = grad_out.shape
    w = grad_x.shape[2]
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                g = grad_out[n, i, j]
                where = argmax[n, i, j]
                for k in range(c):
                    idx = where[k]
                    grad_x[n, idx // w, idx % w, k] += g[k]


@njit(nogil=True, cache=True)
def _max2x2_forward(x, pt, pl, lo, out, argmax):
    """The 2x2 / stride-2 max pool (Keras' default) on C-contiguous arrays: the four window values are
    compared in registers and each output written once (2x faster than the generic loop, which re-reads
    its running max). The arrays are indexed flat with unsigned offsets, not through a view per window
    (a reference count each; 17% of the MNIST CNN's pool)."""
    n_, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    xf = x.reshape(-1)
    of = out.reshape(-1)
    af = argmax.reshape(-1)
    cu = _u(c)
    row = _u(w) * cu
    for n in range(n_):
        for i in range(oh):
            r = 2 * i - pt
            for j in range(ow):
                s = 2 * j - pl
                if r < 0 or r + 2 > h or s < 0 or s + 2 > w:
                    # a border window (of "same" or explicit padding): the generic loop on this one element
                    _max_forward(x[n:n + 1], 2, 2, 2, 2, pt - 2 * i, pl - 2 * j, lo,
                                 out[n:n + 1, i:i + 1, j:j + 1], argmax[n:n + 1, i:i + 1, j:j + 1])
                    continue
                b0 = _u(((n * h + r) * w + s) * c)
                b1 = b0 + cu
                b2 = b0 + row
                b3 = b2 + cu
                o = _u(((n * oh + i) * ow + j) * c)
                i0 = np.int32(r * w + s)
                i1 = i0 + np.int32(1)
                i2 = i0 + np.int32(w)
                i3 = i2 + np.int32(1)
                for k in range(cu):
                    # q: the first maximum from the first position (a NaN there keeps it); val: the
                    # largest value not NaN, from `lo` (see the module's docstring)
                    m = xf[b0 + k]
                    q = i0
                    val = m if m > lo else lo
                    v = xf[b1 + k]
                    val = v if v > val else val
                    if v > m:
                        m = v
                        q = i1
                    v = xf[b2 + k]
                    val = v if v > val else val
                    if v > m:
                        m = v
                        q = i2
                    v = xf[b3 + k]
                    val = v if v > val else val
                    if v > m:
                        m = v
                        q = i3
                    of[o + k] = val
                    af[o + k] = q


@njit(nogil=True, cache=True)
def _max_backward_tiled(grad_out, argmax, ph, pw, pt, pl, accumulate, grad_x):
    """The backward for windows that tile the input (strides == pool size): each input element belongs
    to at most one window, so it is written once with a vectorised compare instead of a scatter; only
    the rows/columns no window covers are zeroed separately."""
    n_, oh, ow, c = grad_out.shape
    _, h, w, _ = grad_x.shape
    r_end = min(oh * ph - pt, h)
    s_end = min(ow * pw - pl, w)
    for n in range(n_):
        if not accumulate:
            for r in range(h):
                for s in range(w):
                    if r >= r_end or s >= s_end:
                        dst = grad_x[n, r, s]
                        for k in range(c):
                            dst[k] = 0.0
        for i in range(oh):
            r0 = max(i * ph - pt, 0)
            r1 = min(i * ph - pt + ph, h)
            for j in range(ow):
                s0 = max(j * pw - pl, 0)
                s1 = min(j * pw - pl + pw, w)
                g = grad_out[n, i, j]
                where = argmax[n, i, j]
                for r in range(r0, r1):
                    for s in range(s0, s1):
                        dst = grad_x[n, r, s]
                        idx = r * w + s
                        if accumulate:
                            for k in range(c):
                                dst[k] += g[k] if where[k] == idx else 0.0
                        else:
                            for k in range(c):
                                dst[k] = g[k] if where[k] == idx else 0.0


@njit(nogil=True, cache=True)
def _avg_forward(x, ph, pw, sh, sw, pt, pl, out):
    n_, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    for n in range(n_):
        for i in range(oh):
            r0 = max(i * sh - pt, 0)
            r1 = min(i * sh - pt + ph, h)
            for j in range(ow):
                s0 = max(j * sw - pl, 0)
                s1 = min(j * sw - pl + pw, w)
                acc = out[n, i, j]
                for k in range(c):
                    acc[k] = 0.0
                for r in range(r0, r1):
                    for s in range(s0, s1):
                        src = x[n, r, s]
                        for k in range(c):
                            acc[k] += src[k]
                scale = 1.0 / ((r1 - r0) * (s1 - s0))
                for k in range(c):
                    acc[k] *= scale


@njit(nogil=True, cache=True)
def _avg_backward(grad_out, ph, pw, sh, sw, pt, pl, grad_x):
    n_, oh, ow, c = grad_out.shape
    _, h, w, _ = grad_x.shape
    for n in range(n_):
        for i in range(oh):
            r0 = max(i * sh - pt, 0)
            r1 = min(i * sh - pt + ph, h)
            for j in range(ow):
                s0 = max(j * sw - pl, 0)
                s1 = min(j * sw - pl + pw, w)
                scale = 1.0 / ((r1 - r0) * (s1 - s0))
                g = grad_out[n, i, j]
                for r in range(r0, r1):
                    for s in range(s0, s1):
                        dst = grad_x[n, r, s]
                        for k in range(c):
                            dst[k] += g[k] * scale


@njit(nogil=True, cache=True)
def _global_forward(x, is_max, out, argmax):
    n_, h, w, c = x.shape
    for n in range(n_):
        acc = out[n]
        where = argmax[n]
        first = x[n, 0, 0]
        for k in range(c):
            acc[k] = first[k] if is_max else 0.0
            where[k] = 0
        for r in range(h):
            for s in range(w):
                src = x[n, r, s]
                if is_max:
                    idx = r * w + s
                    for k in range(c):
                        v = src[k]
                        b = acc[k]
                        better = v > b or (v != v and b == b)  # the first NaN wins and stays
                        acc[k] = v if better else b
                        where[k] = idx if better else where[k]
                else:
                    for k in range(c):
                        acc[k] += src[k]
        if not is_max:
            scale = 1.0 / (h * w)
            for k in range(c):
                acc[k] *= scale


@njit(nogil=True, cache=True)
def _global_backward(x, grad_out, is_max, argmax, accumulate, grad_x):
    # max: the gradient is shared equally among the positions equal to the maximum (TensorFlow's
    # reduce_max gradient); a NaN maximum equals nothing, and TensorFlow's share, 0 / 0 of the gradient,
    # is NaN at every position
    n_, h, w, c = grad_x.shape
    scale = 1.0 / (h * w)
    ties = np.zeros(c, np.int64)
    best = np.zeros(c, x.dtype)
    for n in range(n_):
        g = grad_out[n]
        where = argmax[n]
        if is_max:
            for k in range(c):
                best[k] = x[n, where[k] // w, where[k] % w, k]
                ties[k] = 0
            for r in range(h):
                for s in range(w):
                    for k in range(c):
                        ties[k] += 1 if x[n, r, s, k] == best[k] else 0
        for r in range(h):
            for s in range(w):
                dst = grad_x[n, r, s]
                if is_max:
                    src = x[n, r, s]
                    for k in range(c):
                        if ties[k] == 0:
                            v = np.nan
                        else:
                            v = g[k] / ties[k] if src[k] == best[k] else 0.0
                        dst[k] = dst[k] + v if accumulate else v
                else:
                    for k in range(c):
                        v = g[k] * scale
                        dst[k] = dst[k] + v if accumulate else v


def _check(name, arr, shape, who, dtype=None) -> None:
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{who}: {name} must have shape {tuple(shape)}, received {tuple(arr.shape)}.")
    if dtype is not None and arr.dtype != dtype:
        raise ValueError(f"{who}: {name} must have dtype {np.dtype(dtype)}, received {arr.dtype}.")


def pool2d_forward_cpu(x, out, pool_size, strides=None, padding="valid", mode="max", argmax=None) -> None:
    """out = max or average pooling of x on the CPU.

    Args:
        x: (N, H, W, C) input.
        out: (N, OH, OW, C) output of x's dtype, written.
        pool_size: int or pair; strides: int, pair or None (= pool_size).
        padding: "valid", "same" or explicit ((top, bottom), (left, right)) pads, each smaller than the
            window: padded positions never win a max and are not counted in an average.
        mode: "max" or "avg".
        argmax: for mode "max", an int32 (N, OH, OW, C) buffer that receives each window's flat spatial
            index of its maximum (row * W + col), needed by the backward; may be None.
    """
    who = "pool2d_forward_cpu"
    ph, pw, sh, sw, oh, ow, pt, pl = pool_geometry(x.shape, pool_size, strides, padding, mode, who)
    x = np.ascontiguousarray(x)
    _check("out", out, (x.shape[0], oh, ow, x.shape[3]), who, x.dtype)
    if mode == "avg":
        _avg_forward(x, ph, pw, sh, sw, pt, pl, out)
        return
    if argmax is None:
        argmax = np.empty(out.shape, np.int32)
    _check("argmax", argmax, out.shape, who, np.int32)
    if (ph, pw, sh, sw) == (2, 2, 2, 2) and out.flags.c_contiguous and argmax.flags.c_contiguous:
        _max2x2_forward(x, pt, pl, _lowest(x.dtype), out, argmax)
    else:
        _max_forward(x, ph, pw, sh, sw, pt, pl, _lowest(x.dtype), out, argmax)


def pool2d_backward_cpu(x, grad_out, grad_x, pool_size, strides=None, padding="valid", mode="max",
                        argmax=None, accumulate=False) -> None:
    """grad_x (+)= the gradient of `pool2d_forward_cpu` with respect to x.

    Args:
        x: the forward input (read only to recompute the argmax when `argmax` is None).
        grad_out: (N, OH, OW, C) gradient with respect to the output.
        grad_x: (N, H, W, C) buffer, overwritten or (accumulate=True) added into.
        pool_size, strides, padding, mode: as for the forward.
        argmax: the forward's argmax buffer (mode "max"); recomputed from x when None.
        accumulate: add into grad_x instead of overwriting it.
    """
    who = "pool2d_backward_cpu"
    ph, pw, sh, sw, oh, ow, pt, pl = pool_geometry(x.shape, pool_size, strides, padding, mode, who)
    oshape = (x.shape[0], oh, ow, x.shape[3])
    grad_out = np.ascontiguousarray(grad_out)
    _check("grad_out", grad_out, oshape, who)
    _check("grad_x", grad_x, x.shape, who)
    if mode == "avg":
        if not accumulate:
            grad_x[...] = 0.0
        _avg_backward(grad_out, ph, pw, sh, sw, pt, pl, grad_x)
        return
    if argmax is None:
        argmax = np.empty(oshape, np.int32)
        _max_forward(np.ascontiguousarray(x), ph, pw, sh, sw, pt, pl, _lowest(x.dtype), np.empty(oshape, x.dtype),
                     argmax)
    _check("argmax", argmax, oshape, who, np.int32)
    if sh == ph and sw == pw:
        _max_backward_tiled(grad_out, argmax, ph, pw, pt, pl, accumulate, grad_x)
        return
    if not accumulate:
        grad_x[...] = 0.0
    _max_backward(grad_out, argmax, grad_x)


def _global_check(x, mode, who) -> None:
    if len(x.shape) != 4:
        raise ValueError(f"{who} expects an NHWC input of rank 4, received shape {tuple(x.shape)}.")
    if mode not in MODES:
        raise ValueError(f"{who} expects mode 'avg' or 'max', received mode={mode!r}.")


def global_pool2d_forward_cpu(x, out, mode="avg", argmax=None) -> None:
    """out (N, C) = the mean or max of x (N, H, W, C) over H and W.

    Args:
        x: (N, H, W, C) input.
        out: (N, C) output of x's dtype, written.
        mode: "avg" or "max".
        argmax: for mode "max", an int32 (N, C) buffer receiving the flat spatial index of the maximum.
    """
    who = "global_pool2d_forward_cpu"
    _global_check(x, mode, who)
    x = np.ascontiguousarray(x)
    _check("out", out, (x.shape[0], x.shape[3]), who, x.dtype)
    if argmax is None:
        argmax = np.empty(out.shape, np.int32)
    _check("argmax", argmax, out.shape, who, np.int32)
    _global_forward(x, mode == "max", out, argmax)


def global_pool2d_backward_cpu(x, grad_out, grad_x, mode="avg", argmax=None, accumulate=False) -> None:
    """grad_x (+)= the gradient of `global_pool2d_forward_cpu`; grad_out is (N, C).

    Args:
        x: the forward input (for mode "max": the positions tied with the maximum share its gradient
            equally, as TensorFlow's reduce_max gradient; the argmax is recomputed when `argmax` is None).
        grad_out: (N, C) gradient with respect to the output.
        grad_x: (N, H, W, C) buffer, overwritten or (accumulate=True) added into.
        mode: "avg" or "max".
        argmax: the forward's (N, C) argmax buffer for mode "max".
        accumulate: add into grad_x instead of overwriting it.
    """
    who = "global_pool2d_backward_cpu"
    _global_check(x, mode, who)
    grad_out = np.ascontiguousarray(grad_out)
    _check("grad_out", grad_out, (x.shape[0], x.shape[3]), who)
    _check("grad_x", grad_x, x.shape, who)
    x = np.ascontiguousarray(x)
    if argmax is None:
        argmax = np.zeros(grad_out.shape, np.int32)
        if mode == "max":
            _global_forward(x, True, np.empty(grad_out.shape, x.dtype), argmax)
    _check("argmax", argmax, grad_out.shape, who, np.int32)
    _global_backward(x, grad_out, mode == "max", argmax, accumulate, grad_x)


def pool2d_forward_cuda(x, out, pool_size, strides=None, padding="valid", mode="max", argmax=None) -> None:
    """The CUDA variant of `pool2d_forward_cpu` on numba device arrays (argmax required for "max")."""
    from kernels import _conv_pool_cuda

    geo = pool_geometry(x.shape, pool_size, strides, padding, mode, "pool2d_forward_cuda")
    _conv_pool_cuda.pool_forward(geo, x, out, mode, argmax)


def pool2d_backward_cuda(x, grad_out, grad_x, pool_size, strides=None, padding="valid", mode="max",
                         argmax=None, accumulate=False) -> None:
    """The CUDA variant of `pool2d_backward_cpu` (argmax required for "max")."""
    from kernels import _conv_pool_cuda

    geo = pool_geometry(x.shape, pool_size, strides, padding, mode, "pool2d_backward_cuda")
    _conv_pool_cuda.pool_backward(geo, grad_out, grad_x, mode, argmax, accumulate)


def global_pool2d_forward_cuda(x, out, mode="avg", argmax=None) -> None:
    """The CUDA variant of `global_pool2d_forward_cpu` (argmax required for "max")."""
    from kernels import _conv_pool_cuda

    _global_check(x, mode, "global_pool2d_forward_cuda")
    _conv_pool_cuda.global_forward(x, out, mode, argmax)


def global_pool2d_backward_cuda(x, grad_out, grad_x, mode="avg", argmax=None, accumulate=False) -> None:
    """The CUDA variant of `global_pool2d_backward_cpu` (argmax required for "max"; ties share as there)."""
    from kernels import _conv_pool_cuda

    _global_check(x, mode, "global_pool2d_backward_cuda")
    _conv_pool_cuda.global_backward(x, grad_out, grad_x, mode, argmax, accumulate)


def __getattr__(name: str):
    # The float64 references (tests only) load on first use, so the kernels never import them.
    if name in ("pool2d_reference", "pool2d_backward_reference", "global_pool2d_reference",
                "global_pool2d_backward_reference"):
        from kernels import _conv_reference

        return getattr(_conv_reference, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
