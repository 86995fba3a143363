"""CUDA helpers of `kernels.conv2d_dilated`: the gather of an NHWC array into its stack of dh * dw
sub-grids and the scatter back, on the device (one thread per element written); the convolution of the
stack runs on the `kernels.conv2d` CUDA kernels."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import empty, launch, per_array


@cuda.jit
def _gather(src, dh, dw, off_h, off_w, dst):
    # dst[(r * dw + s) * N + n, j, l] = src[n, r + dh * j - off_h, s + dw * l - off_w], zero outside src
    t = cuda.grid(1)
    if t < dst.size:
        n_, h, w, _ = src.shape
        _, hs, ws, c = dst.shape
        ch = t % c
        col = (t // c) % ws
        j = (t // (c * ws)) % hs
        b = t // (c * ws * hs)
        n = b % n_
        s = (b // n_) % dw
        r = b // (n_ * dw)
        i = r + dh * j - off_h
        k = s + dw * col - off_w
        if i >= 0 and i < h and k >= 0 and k < w:
            dst[b, j, col, ch] = src[n, i, k, ch]
        else:
            dst[b, j, col, ch] = 0


@cuda.jit
def _scatter(src, dh, dw, off_h, off_w, accumulate, dst):
    # the adjoint of _gather over dst's elements; zero (or unchanged) where no sub-grid element lands
    t = cuda.grid(1)
    if t < dst.size:
        n_, h, w, c = dst.shape
        _, hs, ws, _ = src.shape
        ch = t % c
        k = (t // c) % w
        i = (t // (c * w)) % h
        n = t // (c * w * h)
        r = (i + off_h) % dh
        j = (i + off_h) // dh
        s = (k + off_w) % dw
        col = (k + off_w) // dw
        if j < hs and col < ws:
            v = src[(r * dw + s) * n_ + n, j, col, ch]
            if accumulate:
                dst[n, i, k, ch] += v
            else:
                dst[n, i, k, ch] = v
        elif not accumulate:
            dst[n, i, k, ch] = 0


def stack(a, name: str, shape, dtype):
    """A device buffer of `shape` kept on the device array `a` (`kernels.gpu.memo`): the runtime hands a task
    the same arrays at every step, so a step allocates nothing."""
    shape = tuple(int(v) for v in shape)
    return per_array(a, ("dilated", name, shape), lambda: empty(shape, dtype))


def gather(src, dh: int, dw: int, off_h: int, off_w: int, shape):
    """A device array of `shape` (dh * dw * N, HS, WS, C), kept on `src`: the sub-grids of `src` padded by
    (off_h, off_w) at the top/left, stacked along the batch."""
    dst = stack(src, f"gather{dh}x{dw}+{off_h},{off_w}", shape, src.dtype)
    launch(_gather, dst.size, src, dh, dw, off_h, off_w, dst)
    return dst


def scatter(src, dh: int, dw: int, off_h: int, off_w: int, accumulate: bool, dst) -> None:
    """``dst (+)= `` the stack `src` put back in place (the inverse of `gather`)."""
    launch(_scatter, dst.size, src, dh, dw, off_h, off_w, accumulate, dst)
