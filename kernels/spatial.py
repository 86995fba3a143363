"""Spatial reshaping kernels of NHWC images: zero-padding / cropping (`shift_copy`) and nearest or
bilinear upsampling (`resize2d`), forward and backward. 1-D callers pass the (N, 1, W, C) view.

- shift_copy: ``dst[n, i, j, c] = src[n, i + di, j + dj, c]`` (zero where that is outside `src`). Padding
  by (top, left) is a shift by (-top, -left); its gradient is the shift back, a crop; cropping is the
  same with the signs swapped. One kernel serves all four directions.
- resize2d: each output row / column reads two source rows / columns with weights (1 - frac, frac):
  nearest has frac 0 and source i // factor (Keras' repeat); bilinear uses TensorFlow's half-pixel
  centres, source (i + 0.5) / factor - 0.5 clamped to the edges. The backward scatters the same weights.

CUDA variants live in `kernels/gpu/spatial.py` (imported on first use). Every function writes into
caller-provided arrays.
"""

from __future__ import annotations

import numpy as np

from kernels._jit import cpu_jit

__all__ = ["MODES", "resize_taps", "shift_copy_cpu", "shift_copy_cuda", "resize2d_forward_cpu",
           "resize2d_backward_cpu", "resize2d_forward_cuda", "resize2d_backward_cuda"]

MODES = ("nearest", "bilinear")


def _overlap(dst_size: int, src_size: int, offset: int) -> tuple[int, int]:
    lo = max(0, -offset)
    return lo, max(lo, min(dst_size, src_size - offset))


def shift_copy_cpu(src, dst, di: int, dj: int, accumulate: bool = False) -> None:
    """``dst (+)= src shifted``: dst[:, i, j] = src[:, i + di, j + dj] (zero outside src) for NHWC arrays."""
    if src.ndim != 4 or dst.ndim != 4 or src.shape[0] != dst.shape[0] or src.shape[3] != dst.shape[3]:
        raise ValueError(f"shift_copy_cpu expects NHWC src and dst of one batch and channel count, received "
                         f"{tuple(src.shape)} and {tuple(dst.shape)}.")
    i0, i1 = _overlap(dst.shape[1], src.shape[1], di)
    j0, j1 = _overlap(dst.shape[2], src.shape[2], dj)
    part = src[:, i0 + di:i1 + di, j0 + dj:j1 + dj]
    if accumulate:
        dst[:, i0:i1, j0:j1] += part
        return
    dst[:, :i0] = 0.0
    dst[:, i1:] = 0.0
    dst[:, i0:i1, :j0] = 0.0
    dst[:, i0:i1, j1:] = 0.0
    dst[:, i0:i1, j0:j1] = part


def shift_copy_cuda(src, dst, di: int, dj: int, accumulate: bool = False) -> None:
    """The CUDA variant of `shift_copy_cpu` on numba device arrays."""
    from kernels.gpu import spatial as _gpu

    _gpu.shift_copy(src, dst, di, dj, accumulate)


def resize_taps(in_size: int, factor: int, mode: str, dtype=np.float32):
    """(lo, hi, frac) for the in_size * factor outputs of one axis: output i = (1 - frac) * in[lo] +
    frac * in[hi]; frac in the images' `dtype`."""
    if mode not in MODES:
        raise ValueError(f"resize2d expects interpolation 'nearest' or 'bilinear', received {mode!r}.")
    i = np.arange(in_size * factor)
    if mode == "nearest":
        lo = i // factor
        return lo.astype(np.int32), lo.astype(np.int32), np.zeros(i.size, dtype)
    src = (i + 0.5) / factor - 0.5
    base = np.floor(src)
    frac = (src - base).astype(dtype)
    lo = np.clip(base, 0, in_size - 1).astype(np.int32)
    hi = np.clip(base + 1, 0, in_size - 1).astype(np.int32)
    return lo, hi, frac


def _check(x_shape, y_shape, size, who):
    if (len(x_shape) != 4 or len(y_shape) != 4 or y_shape[0] != x_shape[0] or y_shape[3] != x_shape[3]
            or y_shape[1] != x_shape[1] * size[0] or y_shape[2] != x_shape[2] * size[1]):
        raise ValueError(f"{who}: an NHWC input {tuple(x_shape)} upsampled by {tuple(size)} has shape "
                         f"{(x_shape[0], x_shape[1] * size[0], x_shape[2] * size[1], x_shape[3])}, received "
                         f"an output buffer of shape {tuple(y_shape)}.")


@cpu_jit
def _resize_forward(x, hlo, hhi, hf, wlo, whi, wf, y):
    n_, oh, ow, c = y.shape
    for n in range(n_):
        for i in range(oh):
            a0, a1, fa = hlo[i], hhi[i], hf[i]
            for j in range(ow):
                b0, b1, fb = wlo[j], whi[j], wf[j]
                top0, top1, bot0, bot1 = x[n, a0, b0], x[n, a0, b1], x[n, a1, b0], x[n, a1, b1]
                dst = y[n, i, j]
                for ch in range(c):
                    top = top0[ch] + fb * (top1[ch] - top0[ch])
                    bot = bot0[ch] + fb * (bot1[ch] - bot0[ch])
                    dst[ch] = top + fa * (bot - top)


@cpu_jit
def _resize_backward(dy, hlo, hhi, hf, wlo, whi, wf, dx):
    n_, oh, ow, c = dy.shape
    for n in range(n_):
        for i in range(oh):
            a0, a1, fa = hlo[i], hhi[i], hf[i]
            for j in range(ow):
                b0, b1, fb = wlo[j], whi[j], wf[j]
                g = dy[n, i, j]
                w00, w01 = (1 - fa) * (1 - fb), (1 - fa) * fb
                w10, w11 = fa * (1 - fb), fa * fb
                for ch in range(c):
                    dx[n, a0, b0, ch] += w00 * g[ch]
                    dx[n, a0, b1, ch] += w01 * g[ch]
                    dx[n, a1, b0, ch] += w10 * g[ch]
                    dx[n, a1, b1, ch] += w11 * g[ch]


def _taps(x_shape, size, mode, dtype):
    return (resize_taps(int(x_shape[1]), int(size[0]), mode, dtype)
            + resize_taps(int(x_shape[2]), int(size[1]), mode, dtype))


def resize2d_forward_cpu(x, out, size, mode="nearest") -> None:
    """out (N, H*fh, W*fw, C) = x (N, H, W, C) upsampled by `size` = (fh, fw), "nearest" or "bilinear"."""
    _check(x.shape, out.shape, size, "resize2d_forward_cpu")
    if mode == "nearest":  # a plain repeat: no arithmetic, exact
        n, h, w, c = x.shape
        out.reshape(n, h, size[0], w, size[1], c)[...] = np.asarray(x)[:, :, None, :, None, :]
        return
    _resize_forward(np.ascontiguousarray(x), *_taps(x.shape, size, mode, x.dtype), out)


def resize2d_backward_cpu(grad_out, grad_x, size, mode="nearest", accumulate=False) -> None:
    """grad_x (+)= the gradient of `resize2d_forward_cpu` for grad_out."""
    _check(grad_x.shape, grad_out.shape, size, "resize2d_backward_cpu")
    if mode == "nearest":
        n, h, w, c = grad_x.shape
        total = np.asarray(grad_out).reshape(n, h, size[0], w, size[1], c).sum(axis=(2, 4), dtype=np.float64)
        if accumulate:
            grad_x += total.astype(grad_x.dtype)
        else:
            grad_x[...] = total
        return
    if not accumulate:
        grad_x[...] = 0.0
    _resize_backward(np.ascontiguousarray(grad_out), *_taps(grad_x.shape, size, mode, grad_x.dtype), grad_x)


def resize2d_forward_cuda(x, out, size, mode="nearest") -> None:
    """The CUDA variant of `resize2d_forward_cpu` on numba device arrays."""
    from kernels.gpu import spatial as _gpu

    _check(x.shape, out.shape, size, "resize2d_forward_cuda")
    _gpu.resize_forward(x, out, _taps(x.shape, size, mode, x.dtype))


def resize2d_backward_cuda(grad_out, grad_x, size, mode="nearest", accumulate=False) -> None:
    """The CUDA variant of `resize2d_backward_cpu` on numba device arrays."""
    from kernels.gpu import spatial as _gpu

    _check(grad_x.shape, grad_out.shape, size, "resize2d_backward_cuda")
    _gpu.resize_backward(grad_out, grad_x, _taps(grad_x.shape, size, mode, grad_x.dtype), accumulate)

