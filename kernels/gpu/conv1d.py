"""CUDA helpers of `kernels.conv1d`: the dilated (1, (K-1)*d+1, C, CO) kernel of a (K, C, CO) kernel, and
its gradient read back at every d-th tap."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import empty, launch, reshaped


@cuda.jit
def _dilate(k3, d, kd):
    # kd (1, KD, C, CO): kd[0, t*d] = k3[t], zero between taps; one thread per element of kd
    t = cuda.grid(1)
    if t < kd.size:
        _, _, c, co = kd.shape
        o = t % co
        ch = (t // co) % c
        tap = t // (co * c)
        kd[0, tap, ch, o] = k3[tap // d, ch, o] if tap % d == 0 else 0.0


@cuda.jit
def _undilate(gkd, d, accumulate, gk):
    t = cuda.grid(1)
    if t < gk.size:
        _, c, co = gk.shape
        o = t % co
        ch = (t // co) % c
        tap = t // (co * c)
        v = gkd[0, tap * d, ch, o]
        gk[tap, ch, o] = gk[tap, ch, o] + v if accumulate else v


def dilated(kernel, dilation: int):
    """The (1, (K-1)*d+1, C, CO) device kernel (a view of `kernel` when d is 1)."""
    taps, c, co = (int(s) for s in kernel.shape)
    if dilation == 1:
        return reshaped(kernel, 1, taps, c, co)
    kd = empty((1, (taps - 1) * dilation + 1, c, co), kernel.dtype)
    launch(_dilate, kd.size, kernel, dilation, kd)
    return kd


def undilate(grad_dilated, grad_kernel, dilation: int, accumulate: bool) -> None:
    """``grad_kernel (+)= grad_dilated[0, ::dilation]``."""
    launch(_undilate, grad_kernel.size, grad_dilated, dilation, accumulate, grad_kernel)
