"""CUDA twins of `kernels.augment`: the affine resampling (one thread per output element; the backward
pass adds each output gradient to its taps atomically) and the contrast / brightness shifts (per-image
channel sums by one thread per (image, channel), then one thread per element).

Coordinates, per-image parameters and sums are in the images' dtype (a float32 kernel has no float64
instruction; the CPU computes them in float64, so float32 results agree to float32 rounding). The
fill-mode mapping of a coordinate is the CPU's own source, compiled as a device function.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.augment import _map_coord, _round_half_away, window_of
from kernels.gpu import launch, to_device, zeros

map_coord = cuda.jit(device=True)(_map_coord)
round_half_away = cuda.jit(device=True)(_round_half_away)


@cuda.jit(device=True)
def nhwc_index(i, shape):
    """(image, row, column, channel) of flat element i of an (N, H, W, C) array of `shape`."""
    h, w, chans = shape[1], shape[2], shape[3]
    return i // (chans * w * h), (i // (chans * w)) % h, (i // chans) % w, i % chans


@cuda.jit
def _affine(x, y, mats, bilinear, mode, fill, oy, ox, h_in, w_in):
    # the source is the window x[:, oy:oy + h_in, ox:ox + w_in] (see kernels.augment)
    i = cuda.grid(1)
    if i < y.size:
        n, r, j, c = nhwc_index(i, y.shape)
        t = y.dtype.type
        sx = map_coord(mats[n, 0] * t(j) + mats[n, 1] * t(r) + mats[n, 2], w_in, mode, t)
        sy = map_coord(mats[n, 3] * t(j) + mats[n, 4] * t(r) + mats[n, 5], h_in, mode, t)
        if not bilinear:
            yi, xi = int(round_half_away(sy, t)), int(round_half_away(sx, t))
            y[n, r, j, c] = x[n, oy + yi, ox + xi, c] if 0 <= yi < h_in and 0 <= xi < w_in else fill
            return
        one = t(1)
        y0, x0 = math.floor(sy), math.floor(sx)
        wy1, wx1 = sy - t(y0), sx - t(x0)
        iy0, ix0 = int(y0), int(x0)
        iy1, ix1 = iy0 + 1, ix0 + 1
        in_y0, in_y1 = 0 <= iy0 < h_in, 0 <= iy1 < h_in
        in_x0, in_x1 = 0 <= ix0 < w_in, 0 <= ix1 < w_in
        v00 = x[n, oy + iy0, ox + ix0, c] if in_y0 and in_x0 else fill
        v01 = x[n, oy + iy0, ox + ix1, c] if in_y0 and in_x1 else fill
        v10 = x[n, oy + iy1, ox + ix0, c] if in_y1 and in_x0 else fill
        v11 = x[n, oy + iy1, ox + ix1, c] if in_y1 and in_x1 else fill
        y[n, r, j, c] = (one - wy1) * ((one - wx1) * v00 + wx1 * v01) + wy1 * ((one - wx1) * v10 + wx1 * v11)


@cuda.jit
def _affine_t(dy, dx, mats, bilinear, mode, oy, ox, h_in, w_in):
    i = cuda.grid(1)
    if i < dy.size:
        n, r, j, c = nhwc_index(i, dy.shape)
        g = dy[n, r, j, c]
        t = dx.dtype.type
        sx = map_coord(mats[n, 0] * t(j) + mats[n, 1] * t(r) + mats[n, 2], w_in, mode, t)
        sy = map_coord(mats[n, 3] * t(j) + mats[n, 4] * t(r) + mats[n, 5], h_in, mode, t)
        if not bilinear:
            yi, xi = int(round_half_away(sy, t)), int(round_half_away(sx, t))
            if 0 <= yi < h_in and 0 <= xi < w_in:
                cuda.atomic.add(dx, (n, oy + yi, ox + xi, c), g)
            return
        one = t(1)
        y0, x0 = math.floor(sy), math.floor(sx)
        wy1, wx1 = sy - t(y0), sx - t(x0)
        iy0, ix0 = int(y0), int(x0)
        for ty in range(2):
            iy = iy0 + ty
            if 0 <= iy < h_in:
                wy = wy1 if ty else one - wy1
                for tx in range(2):
                    ix = ix0 + tx
                    if 0 <= ix < w_in:
                        cuda.atomic.add(dx, (n, oy + iy, ox + ix, c), wy * (wx1 if tx else one - wx1) * g)


@cuda.jit
def _channel_sums(x, sums):
    # sums[n, c] = sum over the image of x[n, :, :, c]
    k = cuda.grid(1)
    if k < sums.size:
        chans = sums.shape[1]
        n, c = k // chans, k % chans
        s = sums.dtype.type(0)
        for r in range(x.shape[1]):
            for j in range(x.shape[2]):
                s += x[n, r, j, c]
        sums[n, c] = s


@cuda.jit
def _masked_sums(x, dy, means, factors, lo, hi, sums):
    # sums[n, c] = sum of dy where the contrast output is inside [lo, hi]
    k = cuda.grid(1)
    if k < sums.size:
        chans = sums.shape[1]
        n, c = k // chans, k % chans
        m, f = means[n, c], factors[n]
        s = sums.dtype.type(0)
        for r in range(x.shape[1]):
            for j in range(x.shape[2]):
                z = (x[n, r, j, c] - m) * f + m
                if lo <= z <= hi:
                    s += dy[n, r, j, c]
        sums[n, c] = s


@cuda.jit
def _contrast(x, y, means, factors, lo, hi):
    i = cuda.grid(1)
    if i < y.size:
        n, r, j, c = nhwc_index(i, y.shape)
        m = means[n, c]
        y[n, r, j, c] = min(max((x[n, r, j, c] - m) * factors[n] + m, lo), hi)


@cuda.jit
def _contrast_t(x, dy, dx, means, factors, gmeans, lo, hi, accumulate):
    i = cuda.grid(1)
    if i < dx.size:
        n, r, j, c = nhwc_index(i, dx.shape)
        m, f = means[n, c], factors[n]
        z = (x[n, r, j, c] - m) * f + m
        g = dy[n, r, j, c] if lo <= z <= hi else dx.dtype.type(0)
        v = f * g + (dx.dtype.type(1) - f) * gmeans[n, c]
        dx[n, r, j, c] = dx[n, r, j, c] + v if accumulate else v


@cuda.jit
def _brightness(x, y, deltas, lo, hi, grad, dy, accumulate):
    # forward: y = clip(x + d); backward (grad): y (+)= dy where x + d is inside [lo, hi]
    i = cuda.grid(1)
    if i < x.size:
        n, r, j, c = nhwc_index(i, x.shape)
        z = x[n, r, j, c] + deltas[n]
        if not grad:
            y[n, r, j, c] = min(max(z, lo), hi)
        else:
            g = dy[n, r, j, c] if lo <= z <= hi else y.dtype.type(0)
            y[n, r, j, c] = y[n, r, j, c] + g if accumulate else g


def _params(a, like):
    return to_device(np.ascontiguousarray(a, like.dtype))


def affine_forward_cuda(x, y, mats, bilinear: bool, fill_mode: int, fill_value: float = 0.0, window=None) -> None:
    """Device twin of `kernels.augment.affine_forward_cpu`."""
    launch(_affine, y.size, x, y, _params(mats, x), bool(bilinear), int(fill_mode), float(fill_value),
           *window_of(x, window))


def affine_backward_cuda(dy, mats, dx, bilinear: bool, fill_mode: int, accumulate: bool = False,
                         window=None) -> None:
    """Device twin of `kernels.augment.affine_backward_cpu` (atomic adds into dx)."""
    if not accumulate:
        dx.copy_to_device(np.zeros(dx.shape, dx.dtype))
    launch(_affine_t, dy.size, dy, dx, _params(mats, dx), bool(bilinear), int(fill_mode), *window_of(dx, window))


def _means(x):
    n, h, w, c = x.shape
    sums = zeros((n, c), x.dtype)
    launch(_channel_sums, n * c, x, sums)
    return sums, float(h * w)


def _scaled(sums, k: float):
    return to_device(sums.copy_to_host() / sums.dtype.type(k))


def contrast_forward_cuda(x, y, factors, lo: float, hi: float) -> None:
    """Device twin of `kernels.augment.contrast_forward_cpu`."""
    sums, k = _means(x)
    launch(_contrast, y.size, x, y, _scaled(sums, k), _params(factors, x), float(lo), float(hi))


def contrast_backward_cuda(x, dy, factors, dx, lo: float, hi: float, accumulate: bool = False) -> None:
    """Device twin of `kernels.augment.contrast_backward_cpu`."""
    sums, k = _means(x)
    means, f = _scaled(sums, k), _params(factors, x)
    gsums = zeros(sums.shape, x.dtype)
    launch(_masked_sums, gsums.size, x, dy, means, f, float(lo), float(hi), gsums)
    launch(_contrast_t, dx.size, x, dy, dx, means, f, _scaled(gsums, k), float(lo), float(hi), bool(accumulate))


def brightness_forward_cuda(x, y, deltas, lo: float, hi: float) -> None:
    """Device twin of `kernels.augment.brightness_forward_cpu`."""
    launch(_brightness, x.size, x, y, _params(deltas, x), float(lo), float(hi), False, x, False)


def brightness_backward_cuda(x, dy, deltas, dx, lo: float, hi: float, accumulate: bool = False) -> None:
    """Device twin of `kernels.augment.brightness_backward_cpu`."""
    launch(_brightness, x.size, x, dx, _params(deltas, x), float(lo), float(hi), True, dy, bool(accumulate))
