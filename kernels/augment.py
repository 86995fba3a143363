"""Image augmentation kernels: per-image affine resampling and per-image value shifts, with gradients.

Affine. Output pixel (x, y) of image n reads the input at ``(a0 x + a1 y + a2, b0 x + b1 y + b2)``,
``(a0, a1, a2, b0, b1, b2) = mats[n]`` (Keras 3's `affine_transform` matrix without its projective
terms), by nearest (rounded half away from zero) or bilinear interpolation. A coordinate outside the
image is first mapped by the fill mode, as TensorFlow's ImageProjectiveTransformV3 maps it: REFLECT
(``d c b a | a b c d | d c b a``), WRAP (``a b c d | a b c d``), NEAREST (clamped), CONSTANT (left as it
is: taps outside the image read `fill_value`). The backward pass is the transpose: every output
gradient is added back to the taps it read, with the same weights.

Values. Contrast: ``clip((x - m) * f + m, lo, hi)`` with ``m`` each channel's mean over the image;
brightness: ``clip(x + d, lo, hi)``; ``f`` and ``d`` are per image. Their gradients pass where the clip
did not bite (contrast's also flows through the mean).

Images are (N, H, W, C) arrays (channels-first callers pass transposed views); per-image parameters are
float64 arrays the op computes on the host. Fill modes: `FILL_MODES` index.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit, store

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")


def _map_coord(c, n, mode, t):
    # One coordinate through the fill mode (TensorFlow's map_coordinate): c a float of type t (np.float64
    # on the CPU, the images' dtype on CUDA: every constant is cast to t, so a float32 kernel has no f64
    # instruction), n the axis length.
    zero, one, nf = t(0), t(1), t(n)
    if mode == 0:  # reflect
        if c < zero:
            if n <= 1:
                c = zero
            else:
                sz2 = t(2) * nf
                if c < -sz2:
                    c = sz2 * t(math.floor(-c / sz2)) + c
                c = c + sz2 if c < -nf else -c - one
        elif c > nf - one:
            if n <= 1:
                c = zero
            else:
                sz2 = t(2) * nf
                c -= sz2 * t(math.floor(c / sz2))
                if c >= nf:
                    c = sz2 - c - one
    elif mode == 1:  # wrap
        if c < zero:
            if n <= 1:
                c = zero
            else:
                c += nf * (t(math.floor(-c / (nf - one))) + one)
        elif c > nf - one:
            if n <= 1:
                c = zero
            else:
                c -= nf * t(math.floor(c / (nf - one)))
    elif mode == 2:  # constant: taps outside read the fill value
        return c
    return min(max(c, zero), nf - one)


def _round_half_away(v, t):
    half = t(0.5)
    return math.floor(v + half) if v >= t(0) else -math.floor(-v + half)


SCALAR_SOURCES = (_map_coord, _round_half_away)
_map_coord_jit = cpu_jit(_map_coord)
_round_jit = cpu_jit(_round_half_away)


@cpu_jit
def _affine(x, y, mats, bilinear, mode, fill, oy, ox, h_in, w_in):
    # the source is the window x[:, oy:oy + h_in, ox:ox + w_in]: coordinates, fill modes and taps are its own
    n_img, h_out, w_out, chans = y.shape
    for n in range(n_img):
        a0, a1, a2, b0, b1, b2 = mats[n, 0], mats[n, 1], mats[n, 2], mats[n, 3], mats[n, 4], mats[n, 5]
        for i in range(h_out):
            for j in range(w_out):
                sx = _map_coord_jit(a0 * j + a1 * i + a2, w_in, mode, np.float64)
                sy = _map_coord_jit(b0 * j + b1 * i + b2, h_in, mode, np.float64)
                if not bilinear:
                    yi, xi = int(_round_jit(sy, np.float64)), int(_round_jit(sx, np.float64))
                    inside = 0 <= yi < h_in and 0 <= xi < w_in
                    for c in range(chans):
                        y[n, i, j, c] = x[n, oy + yi, ox + xi, c] if inside else fill
                    continue
                y0, x0 = math.floor(sy), math.floor(sx)
                wy1, wx1 = sy - y0, sx - x0
                wy0, wx0 = 1.0 - wy1, 1.0 - wx1
                iy0, ix0 = int(y0), int(x0)
                iy1, ix1 = iy0 + 1, ix0 + 1
                in_y0, in_y1 = 0 <= iy0 < h_in, 0 <= iy1 < h_in
                in_x0, in_x1 = 0 <= ix0 < w_in, 0 <= ix1 < w_in
                for c in range(chans):
                    v00 = x[n, oy + iy0, ox + ix0, c] if in_y0 and in_x0 else fill
                    v01 = x[n, oy + iy0, ox + ix1, c] if in_y0 and in_x1 else fill
                    v10 = x[n, oy + iy1, ox + ix0, c] if in_y1 and in_x0 else fill
                    v11 = x[n, oy + iy1, ox + ix1, c] if in_y1 and in_x1 else fill
                    y[n, i, j, c] = wy0 * (wx0 * v00 + wx1 * v01) + wy1 * (wx0 * v10 + wx1 * v11)


@cpu_jit
def _affine_t(dy, dx, mats, bilinear, mode, oy, ox, h_in, w_in):
    # dx += transpose of _affine applied to dy (dx zeroed or holding what to accumulate onto)
    n_img, h_out, w_out, chans = dy.shape
    for n in range(n_img):
        a0, a1, a2, b0, b1, b2 = mats[n, 0], mats[n, 1], mats[n, 2], mats[n, 3], mats[n, 4], mats[n, 5]
        for i in range(h_out):
            for j in range(w_out):
                sx = _map_coord_jit(a0 * j + a1 * i + a2, w_in, mode, np.float64)
                sy = _map_coord_jit(b0 * j + b1 * i + b2, h_in, mode, np.float64)
                if not bilinear:
                    yi, xi = int(_round_jit(sy, np.float64)), int(_round_jit(sx, np.float64))
                    if 0 <= yi < h_in and 0 <= xi < w_in:
                        for c in range(chans):
                            dx[n, oy + yi, ox + xi, c] += dy[n, i, j, c]
                    continue
                y0, x0 = math.floor(sy), math.floor(sx)
                wy1, wx1 = sy - y0, sx - x0
                wy0, wx0 = 1.0 - wy1, 1.0 - wx1
                iy0, ix0 = int(y0), int(x0)
                for ty in range(2):
                    iy = iy0 + ty
                    if not 0 <= iy < h_in:
                        continue
                    wy = wy1 if ty else wy0
                    for tx in range(2):
                        ix = ix0 + tx
                        if not 0 <= ix < w_in:
                            continue
                        w = wy * (wx1 if tx else wx0)
                        for c in range(chans):
                            dx[n, oy + iy, ox + ix, c] += w * dy[n, i, j, c]


def window_of(x, window) -> tuple[int, int, int, int]:
    """(oy, ox, height, width) of the source window: `window` or the whole image of x (N, H, W, C)."""
    if window is None:
        return 0, 0, int(x.shape[1]), int(x.shape[2])
    oy, ox, h, w = (int(v) for v in window)
    if oy < 0 or ox < 0 or h < 1 or w < 1 or oy + h > x.shape[1] or ox + w > x.shape[2]:
        raise ValueError(f"affine kernels: window {window} is not inside images of {x.shape[1:3]}.")
    return oy, ox, h, w


def _check(x, y, mats):
    if x.ndim != 4 or y.ndim != 4 or x.shape[0] != y.shape[0] or x.shape[3] != y.shape[3]:
        raise ValueError(f"affine kernels take (N, H, W, C) images with equal N and C, received {x.shape} "
                         f"and {y.shape}.")
    if mats.shape != (x.shape[0], 6):
        raise ValueError(f"affine kernels take one 6-term matrix per image: expected {(x.shape[0], 6)}, "
                         f"received {mats.shape}.")


def affine_forward_cpu(x, y, mats, bilinear: bool, fill_mode: int, fill_value: float = 0.0, window=None) -> None:
    """y[n] = x[n] resampled through mats[n] (see the module docstring); y may be another size. `window`
    (oy, ox, height, width) makes that part of x the source image (Keras' crop-then-resize)."""
    _check(x, y, mats)
    _affine(x, y, np.ascontiguousarray(mats, np.float64), bool(bilinear), int(fill_mode), float(fill_value),
            *window_of(x, window))


def affine_backward_cpu(dy, mats, dx, bilinear: bool, fill_mode: int, accumulate: bool = False,
                        window=None) -> None:
    """dx (+)= the transpose of `affine_forward_cpu` applied to dy (nothing outside the window)."""
    _check(dx, dy, mats)
    acc = dx if accumulate else np.zeros(dx.shape, np.float64)
    if accumulate and dx.dtype != np.float64:
        acc = dx.astype(np.float64)
    _affine_t(dy, acc, np.ascontiguousarray(mats, np.float64), bool(bilinear), int(fill_mode),
              *window_of(dx, window))
    if acc is not dx:
        dx[...] = acc


def channel_means(x) -> np.ndarray:
    """(N, 1, 1, C) float64 means of each image's channels."""
    return x.mean(axis=(1, 2), keepdims=True, dtype=np.float64)


def contrast_forward_cpu(x, y, factors, lo: float, hi: float) -> None:
    """y = clip((x - m) * f + m, lo, hi) per image (f = factors[n], m its channel means)."""
    m = channel_means(x)
    f = np.asarray(factors, np.float64).reshape(-1, 1, 1, 1)
    np.copyto(y, np.clip((x - m) * f + m, lo, hi), casting="same_kind")


def contrast_backward_cpu(x, dy, factors, dx, lo: float, hi: float, accumulate: bool = False) -> None:
    """The gradient of `contrast_forward_cpu`: g = dy where the clip passed; dx = f g + (1 - f) mean(g)."""
    m = channel_means(x)
    f = np.asarray(factors, np.float64).reshape(-1, 1, 1, 1)
    z = (x - m) * f + m
    g = np.where((z >= lo) & (z <= hi), dy.astype(np.float64), 0.0)
    store(dx, (f * g + (1.0 - f) * g.mean(axis=(1, 2), keepdims=True)).astype(dx.dtype), accumulate)


def brightness_forward_cpu(x, y, deltas, lo: float, hi: float) -> None:
    """y = clip(x + d, lo, hi) per image (d = deltas[n])."""
    d = np.asarray(deltas, np.float64).reshape(-1, 1, 1, 1)
    np.copyto(y, np.clip(x + d, lo, hi), casting="same_kind")


def brightness_backward_cpu(x, dy, deltas, dx, lo: float, hi: float, accumulate: bool = False) -> None:
    """dx (+)= dy where the clip did not bite."""
    d = np.asarray(deltas, np.float64).reshape(-1, 1, 1, 1)
    z = x + d
    store(dx, np.where((z >= lo) & (z <= hi), dy, 0).astype(dx.dtype), accumulate)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import augment as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cpu_jit
def _resize_image(src, out, oy, ox, h_in, w_in, bilinear):
    # TensorFlow's resize (half-pixel centres, edges clamped, no antialiasing) of the window
    # src[oy:oy + h_in, ox:ox + w_in] of one (H, W, C) image into out (h, w, C); separable taps.
    # The source coordinates are float32 as TensorFlow's kernels compute them ((x + 0.5f) * scale - 0.5f,
    # scale = in / out in float32): float64 ones move the lerp weights by an ulp, and the pixels by up to
    # 3e-3 of 255 (a uint8 cast after the resize then differs by 1).
    h_out, w_out, chans = out.shape
    half = np.float32(0.5)
    sy, sx = np.float32(h_in) / np.float32(h_out), np.float32(w_in) / np.float32(w_out)
    x0s = np.empty(w_out, np.int64)
    x1s = np.empty(w_out, np.int64)
    wxs = np.empty(w_out, np.float32)
    for j in range(w_out):
        if bilinear:
            c = (np.float32(j) + half) * sx - half
            f = math.floor(c)
            x0s[j] = min(max(int(f), 0), w_in - 1) + ox
            x1s[j] = min(max(int(math.ceil(c)), 0), w_in - 1) + ox
            wxs[j] = c - np.float32(f)
        else:
            x0s[j] = x1s[j] = min(int(math.floor((np.float32(j) + half) * sx)), w_in - 1) + ox
            wxs[j] = 0.0
    for i in range(h_out):
        if bilinear:
            c = (np.float32(i) + half) * sy - half
            f = math.floor(c)
            y0 = min(max(int(f), 0), h_in - 1) + oy
            y1 = min(max(int(math.ceil(c)), 0), h_in - 1) + oy
            wy = np.float32(c - np.float32(f))
        else:
            y0 = y1 = min(int(math.floor((np.float32(i) + half) * sy)), h_in - 1) + oy
            wy = np.float32(0.0)
        for j in range(w_out):
            a, b, wx = x0s[j], x1s[j], wxs[j]
            for k in range(chans):
                tl, tr = np.float32(src[y0, a, k]), np.float32(src[y0, b, k])
                bl, br = np.float32(src[y1, a, k]), np.float32(src[y1, b, k])
                top = tl + (tr - tl) * wx
                bottom = bl + (br - bl) * wx
                out[i, j, k] = top + (bottom - top) * wy


def resize_forward_cpu(x: np.ndarray, y: np.ndarray, bilinear: bool, window=None) -> None:
    """y[n] (N, h, w, C) = x[n] (N, H, W, C), or its window (oy, ox, height, width), resized as
    tf.image.resize does (`resize_image_cpu`, image by image): Keras' Resizing, bit-equal to TensorFlow."""
    if x.ndim != 4 or y.ndim != 4 or x.shape[0] != y.shape[0]:
        raise ValueError(f"resize_forward_cpu takes (N, H, W, C) images with equal N, received {x.shape} and "
                         f"{y.shape}.")
    out = y if y.dtype == np.float32 and y.flags.c_contiguous else np.empty(y.shape, np.float32)
    for n in range(x.shape[0]):
        resize_image_cpu(x[n], out[n], bilinear, window)
    if out is not y:
        y[...] = out


def resize_image_cpu(src: np.ndarray, out: np.ndarray, bilinear: bool = True, window=None) -> None:
    """out (h, w, C) float32 = src (H, W, C, any numeric dtype) resized as tf.image.resize does for
    "bilinear" / "nearest" (half-pixel centres, no antialiasing), from the window (oy, ox, height, width)
    of src or the whole of it. The loaders use it, so that decoded images equal tf.keras' to float32
    rounding."""
    if src.ndim != 3 or out.ndim != 3 or src.shape[2] != out.shape[2]:
        raise ValueError(f"resize_image_cpu takes (H, W, C) images with equal C, received {src.shape} and "
                         f"{out.shape}.")
    oy, ox, h, w = window_of(src[None], window)
    _resize_image(src, out, oy, ox, h, w, bool(bilinear))
