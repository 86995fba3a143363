"""CUDA twins of `kernels.noise`: the same counter-based Gaussian draws (`_normal` is shared with the
CPU), alpha dropout on dropout's mask, and the activity penalty's gradient."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.gpu import launch, reshaped
from kernels.gpu.dropout import _noise_strides, _run_apply, dropout_mask_cuda
from kernels.gpu.elementwise import offset  # flat index -> element offset through strides (0: broadcast)
from kernels.noise import _normal, alpha_dropout_coefficients

normal = cuda.jit(device=True)(_normal)


@cuda.jit
def _gaussian(x, y, factor, key, offset, stddev, multiplicative):
    i = cuda.grid(1)
    if i < x.size:
        m = x.shape[1]
        r = i // m
        e = i % m
        n = stddev * normal(key, offset + r, e, y.dtype.type)  # drawn in y's dtype (float32: no f64)
        if multiplicative:
            one = y.dtype.type(1)
            factor[r, e] = one + n
            y[r, e] = x[r, e] * (one + n)
        else:
            y[r, e] = x[r, e] + n


@cuda.jit
def _add_or_scale(dy, factor, dx, use_factor, accumulate):
    # dx (+)= dy * factor (or dy)
    i = cuda.grid(1)
    if i < dy.size:
        v = dy[i] * factor[i] if use_factor else dy[i]
        dx[i] = dx[i] + v if accumulate else v


@cuda.jit
def _alpha_apply(x, mask, y, shape, nstrides, a, b, dropped):
    # y[r, e] = a * x + b where kept, `dropped` elsewhere; the mask is read through its noise strides
    # (0 on broadcast dims), as `kernels.gpu.dropout._apply` does
    i = cuda.grid(1)
    if i < x.size:
        m = x.shape[1]
        r = i // m
        e = i % m
        ne = offset(e, shape, nstrides)
        y[r, e] = a * x[r, e] + b if mask[r, ne] else dropped


@cuda.jit
def _penalty_grad(x, dy, dx, c1, c2, accumulate):
    # dx (+)= dy + c1 * sign(x) + c2 * x
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        one, zero = dx.dtype.type(1), dx.dtype.type(0)  # typed: a float32 gradient stays float32
        s = one if v > 0 else (-one if v < 0 else zero)
        g = dy[i] + c1 * s + c2 * v
        dx[i] = dx[i] + g if accumulate else g


def _rows(a):
    return reshaped(a, a.shape[0], a.size // a.shape[0])


def _flat(a):
    return reshaped(a, a.size)


def gaussian_noise_forward_cuda(x, y, factor, stddev: float, key: int, batch_offset: int = 0) -> None:
    """Device twin of `kernels.noise.gaussian_noise_forward_cpu`."""
    f2 = _rows(factor) if factor is not None else cuda.device_array((1, 1), x.dtype)
    launch(_gaussian, x.size, _rows(x), _rows(y), f2, np.uint64(key), int(batch_offset), float(stddev),
           factor is not None)


def gaussian_noise_backward_cuda(dy, factor, dx, accumulate: bool = False) -> None:
    """Device twin of `kernels.noise.gaussian_noise_backward_cpu`."""
    f = _flat(factor) if factor is not None else _flat(dy)
    launch(_add_or_scale, dy.size, _flat(dy), f, _flat(dx), factor is not None, accumulate)


def alpha_dropout_forward_cuda(x, y, mask, rate: float, key: int, batch_offset: int = 0) -> None:
    """Device twin of `kernels.noise.alpha_dropout_forward_cpu`."""
    dropout_mask_cuda(mask, rate, key, batch_offset)
    a, b, alpha_p = alpha_dropout_coefficients(rate)
    shape, nstrides = _noise_strides(x.shape, mask.shape)
    launch(_alpha_apply, x.size, _rows(x), _rows(mask), _rows(y), shape, nstrides, a, b,
           a * alpha_p + b)


def alpha_dropout_backward_cuda(dy, mask, dx, rate: float, accumulate: bool = False) -> None:
    """Device twin of `kernels.noise.alpha_dropout_backward_cpu` (dropout's masked scale with scale a)."""
    _run_apply(dy, mask, dx, alpha_dropout_coefficients(rate)[0], accumulate)


def activity_penalty_backward_cuda(x, dy, dx, l1: float, l2: float, batch: int, accumulate: bool = False) -> None:
    """Device twin of `kernels.noise.activity_penalty_backward_cpu`."""
    launch(_penalty_grad, x.size, _flat(x), _flat(dy), _flat(dx), l1 / batch, 2.0 * l2 / batch, accumulate)

