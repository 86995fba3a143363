"""CUDA (numba.cuda) pooling kernels, NHWC; the semantics of `kernels.pool2d`, "valid", "same" or explicit
pads alike (the kernels see only the top/left offsets and the output size; windows clip to the input).

One thread per output element in the forward; the backward is a gather, one thread per input element
summing the gradients of the windows that contain it (no atomics, so every run gives the same bits and
"overwrite" vs "accumulate" is a single store; input elements no window reads get zero). The channel
index is the fastest-varying thread index, so loads and stores are coalesced. Launch arithmetic lives in
`kernels.gpu.launch`.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.gpu.launch import launch


@cuda.jit
def _pool_forward_kernel(x, ph, pw, sh, sw, pt, pl, is_max, out, argmax):
    e = cuda.grid(1)
    n_, oh, ow, c = out.shape
    h = x.shape[1]
    w = x.shape[2]
    if e >= n_ * oh * ow * c:
        return
    k = e % c
    j = (e // c) % ow
    i = (e // (c * ow)) % oh
    n = e // (c * ow * oh)
    r0 = max(i * sh - pt, 0)
    r1 = min(i * sh - pt + ph, h)
    s0 = max(j * sw - pl, 0)
    s1 = min(j * sw - pl + pw, w)
    # best / where: the first maximum from the window's first position (a NaN there keeps it); value: the
    # largest value not NaN, from float32's lowest (TensorFlow's CPU MaxPool, as `kernels.pool2d`)
    best = x[n, r0, s0, k]
    where = r0 * w + s0
    value = np.float32(-3.4028234663852886e38)
    acc = np.float32(0.0)
    for r in range(r0, r1):
        for s in range(s0, s1):
            v = x[n, r, s, k]
            acc += v
            if v > value:
                value = v
            if v > best:
                best = v
                where = r * w + s
    if is_max:
        out[n, i, j, k] = value
        argmax[n, i, j, k] = where
    else:
        out[n, i, j, k] = acc / np.float32((r1 - r0) * (s1 - s0))


@cuda.jit
def _pool_backward_kernel(grad_out, ph, pw, sh, sw, pt, pl, is_max, argmax, accumulate, grad_x):
    e = cuda.grid(1)
    n_, h, w, c = grad_x.shape
    oh = grad_out.shape[1]
    ow = grad_out.shape[2]
    if e >= n_ * h * w * c:
        return
    k = e % c
    s = (e // c) % w
    r = (e // (c * w)) % h
    n = e // (c * w * h)
    # output windows i with i*sh - pt <= r < i*sh - pt + ph (likewise for columns)
    i0 = max(0, (r + pt - ph) // sh + 1)
    i1 = min(oh - 1, (r + pt) // sh)
    j0 = max(0, (s + pl - pw) // sw + 1)
    j1 = min(ow - 1, (s + pl) // sw)
    me = r * w + s
    acc = np.float32(0.0)
    for i in range(i0, i1 + 1):
        for j in range(j0, j1 + 1):
            g = grad_out[n, i, j, k]
            if is_max:
                if argmax[n, i, j, k] == me:
                    acc += g
            else:
                rows = min(i * sh - pt + ph, h) - max(i * sh - pt, 0)
                cols = min(j * sw - pl + pw, w) - max(j * sw - pl, 0)
                acc += g / np.float32(rows * cols)
    if accumulate:
        acc += grad_x[n, r, s, k]
    grad_x[n, r, s, k] = acc


@cuda.jit
def _global_forward_kernel(x, is_max, out, argmax):
    e = cuda.grid(1)
    n_, h, w, c = x.shape
    if e >= n_ * c:
        return
    k = e % c
    n = e // c
    best = x[n, 0, 0, k]
    where = 0
    acc = np.float32(0.0)
    for r in range(h):
        for s in range(w):
            v = x[n, r, s, k]
            acc += v
            if v > best or (v != v and best == best):  # the first NaN wins and stays (reduce_max's NaN)
                best = v
                where = r * w + s
    if is_max:
        out[n, k] = best
        argmax[n, k] = where
    else:
        out[n, k] = acc / np.float32(h * w)


@cuda.jit
def _global_backward_kernel(x, grad_out, is_max, argmax, accumulate, grad_x):
    # one thread per (n, channel): a max's gradient is shared equally among the positions equal to the
    # maximum (TensorFlow's reduce_max gradient), counted first; a NaN maximum equals nothing and gets
    # TensorFlow's 0 / 0 share, NaN, at every position
    e = cuda.grid(1)
    n_, h, w, c = grad_x.shape
    if e >= n_ * c:
        return
    k = e % c
    n = e // c
    g = grad_out[n, k]
    where = 0
    best = x[n, 0, 0, k]
    ties = 0
    if is_max:  # argmax is a (1, 1) placeholder for the mean
        where = argmax[n, k]
        best = x[n, where // w, where % w, k]
        for r in range(h):
            for s in range(w):
                if x[n, r, s, k] == best:
                    ties += 1
    for r in range(h):
        for s in range(w):
            if not is_max:
                v = g / np.float32(h * w)
            elif ties == 0:
                v = np.float32(np.nan)
            else:
                v = g / np.float32(ties) if x[n, r, s, k] == best else np.float32(0.0)
            if accumulate:
                v += grad_x[n, r, s, k]
            grad_x[n, r, s, k] = v


def _need_argmax(mode, argmax, who, ndim):
    if mode == "max" and argmax is None:
        raise ValueError(f"{who}: mode 'max' on the GPU needs the int32 argmax buffer (the op's saved "
                         f"buffer); pass argmax=.")
    # the kernels index argmax with ndim indices in a branch the mode skips; it must still type-check
    return argmax if argmax is not None else cuda.device_array((1,) * ndim, np.int32)


def pool_forward(geo, x, out, mode, argmax) -> None:
    """Pooling forward on device arrays; geo = (ph, pw, sh, sw, oh, ow, pt, pl)."""
    ph, pw, sh, sw, _, _, pt, pl = geo
    am = _need_argmax(mode, argmax, "pool2d_forward_cuda", 4)
    launch(_pool_forward_kernel, out.size, x, ph, pw, sh, sw, pt, pl, mode == "max", out, am)


def pool_backward(geo, grad_out, grad_x, mode, argmax, accumulate) -> None:
    """Pooling backward (a gather per input element) on device arrays."""
    ph, pw, sh, sw, _, _, pt, pl = geo
    am = _need_argmax(mode, argmax, "pool2d_backward_cuda", 4)
    launch(_pool_backward_kernel, grad_x.size, grad_out, ph, pw, sh, sw, pt, pl, mode == "max", am, accumulate,
           grad_x)


def global_forward(x, out, mode, argmax) -> None:
    """Global pooling forward on device arrays; out is (N, C)."""
    am = _need_argmax(mode, argmax, "global_pool2d_forward_cuda", 2)
    launch(_global_forward_kernel, out.size, x, mode == "max", out, am)


def global_backward(x, grad_out, grad_x, mode, argmax, accumulate) -> None:
    """Global pooling backward on device arrays; grad_out is (N, C); a max's ties share its gradient."""
    am = _need_argmax(mode, argmax, "global_pool2d_backward_cuda", 2)
    launch(_global_backward_kernel, grad_out.size, x, grad_out, mode == "max", am, accumulate, grad_x)
