"""CUDA twins of `kernels.spatial`: the shifted copy of pad/crop (one thread per destination element),
the resize forward (one thread per output element, four taps) and its backward (one thread per output
element adding its four weighted taps with atomics, since several outputs share a source pixel)."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import launch, reshaped, to_device


@cuda.jit
def _shift_copy(src, dst, di, dj, accumulate):
    t = cuda.grid(1)
    if t < dst.size:
        _, h, w, c = dst.shape
        ch = t % c
        j = (t // c) % w
        i = (t // (c * w)) % h
        n = t // (c * w * h)
        si, sj = i + di, j + dj
        v = dst.dtype.type(0)  # typed zero: a float32 copy stays float32
        if si >= 0 and si < src.shape[1] and sj >= 0 and sj < src.shape[2]:
            v = src[n, si, sj, ch]
        dst[n, i, j, ch] = dst[n, i, j, ch] + v if accumulate else v


@cuda.jit
def _resize_forward(x, hlo, hhi, hf, wlo, whi, wf, y):
    t = cuda.grid(1)
    if t < y.size:
        _, oh, ow, c = y.shape
        ch = t % c
        j = (t // c) % ow
        i = (t // (c * ow)) % oh
        n = t // (c * ow * oh)
        fa, fb = hf[i], wf[j]
        top = x[n, hlo[i], wlo[j], ch] + fb * (x[n, hlo[i], whi[j], ch] - x[n, hlo[i], wlo[j], ch])
        bot = x[n, hhi[i], wlo[j], ch] + fb * (x[n, hhi[i], whi[j], ch] - x[n, hhi[i], wlo[j], ch])
        y[n, i, j, ch] = top + fa * (bot - top)


@cuda.jit
def _resize_backward(dy, hlo, hhi, hf, wlo, whi, wf, dx):
    t = cuda.grid(1)
    if t < dy.size:
        _, oh, ow, c = dy.shape
        ch = t % c
        j = (t // c) % ow
        i = (t // (c * ow)) % oh
        n = t // (c * ow * oh)
        g = dy[n, i, j, ch]
        fa, fb = hf[i], wf[j]
        one = dx.dtype.type(1)  # typed one: float32 taps stay float32
        cuda.atomic.add(dx, (n, hlo[i], wlo[j], ch), (one - fa) * (one - fb) * g)
        cuda.atomic.add(dx, (n, hlo[i], whi[j], ch), (one - fa) * fb * g)
        cuda.atomic.add(dx, (n, hhi[i], wlo[j], ch), fa * (one - fb) * g)
        cuda.atomic.add(dx, (n, hhi[i], whi[j], ch), fa * fb * g)


@cuda.jit
def _fill_zero(flat):
    t = cuda.grid(1)
    if t < flat.size:
        flat[t] = 0.0


def shift_copy(src, dst, di: int, dj: int, accumulate: bool) -> None:
    """dst[:, i, j] (+)= src[:, i + di, j + dj] (zero outside src)."""
    launch(_shift_copy, dst.size, src, dst, di, dj, accumulate)


def resize_forward(x, out, taps) -> None:
    """out = the 4-tap interpolation of x (`taps`: host (lo, hi, frac) for rows then columns)."""
    launch(_resize_forward, out.size, x, *(to_device(a) for a in taps), out)


def resize_backward(grad_out, grad_x, taps, accumulate: bool) -> None:
    """grad_x (+)= the adjoint of `resize_forward` applied to grad_out."""
    if not accumulate:
        launch(_fill_zero, grad_x.size, reshaped(grad_x, grad_x.size))
    launch(_resize_backward, grad_out.size, grad_out, *(to_device(a) for a in taps), grad_x)
