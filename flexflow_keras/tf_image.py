"""`tf.image` on NumPy arrays, for `python -m flexflow_keras` (tf_compat.py): what a `Dataset.map` of an image
pipeline calls after decoding (tf_io.py reads and decodes files): ``tf.image.resize`` / ``convert_image_dtype``
/ flips, crops and colour adjustments (the TensorFlow tutorials that load images from paths, pix2pix,
captioning and segmentation scripts).

As TensorFlow computes them, on the host:
- `resize`: "bilinear" and "nearest" with half-pixel centres and no antialiasing (kernels/augment.py, the
  image loaders' resize: equal to TensorFlow's to float32 rounding); bilinear gives float32, nearest copies the
  source values in their dtype; "area" (tf_image_spaces.py); `preserve_aspect_ratio`; other methods and
  ``antialias=True`` are a clear error;
- YUV and YIQ colour spaces (tf_image_spaces.py);
- `convert_image_dtype` scales between integer ranges and [0, 1] floats (float to int: ``x * (max + 0.5)``
  truncated, as TensorFlow);
- flips, `rot90`, crops and pads (`resize_with_pad` too; the flips, crops and pads of a model's or a tape's
  tensor are composed from keras.ops in tf_image_ops.py, so they run in a layer's call() and differentiate), `rgb_to_grayscale` (TensorFlow's luma weights),
  HSV conversions, brightness, contrast, gamma, saturation and hue, `per_image_standardization`; the
  `random_*` ones draw from this framework's generator (`tf.random.set_seed` seeds it), so their draws are
  not TensorFlow's; the `stateless_random_*` ones draw TensorFlow's values for their seed (Philox,
  tf_stateless_random.py);
- `total_variation` and `sobel_edges` (and `image_gradients` and `ssim`, tf_image_quality.py) run as keras.ops, so a GradientTape differentiates them (a
  style-transfer loss on a tf.Variable image); `adjust_jpeg_quality` / `random_jpeg_quality` re-encode with
  Pillow's JPEG encoder (TensorFlow's is libjpeg's: the artefacts are alike, not equal).

Each takes an image (H, W, C) or a batch (N, H, W, C) and returns an `EagerTensor`.
"""

from __future__ import annotations

import io
import math

import numpy as np

from flexflow_keras import tf_image_ops, tf_image_quality, tf_image_spaces
from flexflow_keras.errors import ArgumentError

_LUMA = np.array([0.2989, 0.5870, 0.1140], np.float32)  # TensorFlow's rgb_to_grayscale weights


def _out(a):
    from flexflow_keras.data.dataset import as_tensor

    return as_tensor(np.asarray(a))


def _dtype(dtype) -> np.dtype:
    if isinstance(dtype, str) or isinstance(dtype, np.dtype) or isinstance(dtype, type):
        return np.dtype(dtype)
    raise ArgumentError(f"tf.image / tf.io: expected a dtype (tf.float32, tf.uint8, ...), received {dtype!r}.")


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Between integer ranges and [0, 1] floats, with TensorFlow's arithmetic: int to float ``cast(x) *
    (1 / max)``; float to int ``x * (max + 0.5)`` truncated (clipped first with `saturate`); int to int by
    the ratio of the ranges ``(max + 1)``."""
    a = np.asarray(image)
    want = _dtype(dtype)
    if a.dtype == want:
        return _out(a)
    if a.dtype.kind in "ui" and want.kind == "f":
        return _out(a.astype(want) * want.type(1.0 / np.iinfo(a.dtype).max))
    if a.dtype.kind == "f" and want.kind in "ui":
        info = np.iinfo(want)
        scaled = a * a.dtype.type(info.max + 0.5)
        if saturate:
            scaled = np.clip(scaled, info.min, info.max)
        return _out(scaled.astype(want))
    if a.dtype.kind in "ui" and want.kind in "ui":
        top_in, top_out = int(np.iinfo(a.dtype).max) + 1, int(np.iinfo(want).max) + 1
        if top_in > top_out:
            return _out((a // (top_in // top_out)).astype(want))
        return _out(a.astype(want) * want.type(top_out // top_in))
    return _out(a.astype(want))


def _images(image, who: str):
    a = np.asarray(image)
    if a.ndim not in (3, 4):
        raise ArgumentError(f"tf.image.{who} expects an image (height, width, channels) or a batch of them, "
                            f"received shape {a.shape}.")
    return a, a.ndim == 3


def _size(size, who: str) -> tuple[int, int]:
    s = [int(v) for v in np.asarray(size).reshape(-1)]
    if len(s) != 2 or min(s) < 1:
        raise ArgumentError(f"tf.image.{who} expects size [new_height, new_width] of positive ints, received {size!r}.")
    return s[0], s[1]


def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False, name=None):
    """Bilinear or bicubic (float32), nearest (the input's dtype) or area (float32; TensorFlow ignores antialias
    for it), as tf.image.resize computes them."""
    from kernels.augment import resize_image_cpu

    method = str(getattr(method, "value", method)).lower()
    if method not in ("bilinear", "nearest", "area", "bicubic") or (antialias and method != "area"):
        raise ArgumentError(f"tf.image.resize(method={method!r}, antialias={antialias}) is not supported by "
                            f"flexflow_keras; 'bilinear', 'bicubic' and 'nearest' without antialiasing, and "
                            f"'area', are.")
    a, single = _images(images, "resize")
    batch = a[None] if single else a
    h, w = _size(size, "resize")
    if preserve_aspect_ratio:
        scale = min(h / batch.shape[1], w / batch.shape[2])
        h, w = max(1, int(round(batch.shape[1] * scale))), max(1, int(round(batch.shape[2] * scale)))
    if method == "nearest":  # the source pixels themselves, in their dtype: the kernel's choice of rows and columns
        rows = _nearest_index(batch.shape[1], h, w, axis=0)
        cols = _nearest_index(batch.shape[2], h, w, axis=1)
        out = batch[:, rows][:, :, cols]
        return _out(out[0] if single else out)
    if method in ("area", "bicubic"):
        out = (tf_image_spaces.resize_area if method == "area" else tf_image_spaces.resize_bicubic)(batch, h, w)
        return _out(out[0] if single else out)
    out = np.empty((batch.shape[0], h, w, batch.shape[3]), np.float32)
    for k in range(batch.shape[0]):
        resize_image_cpu(np.ascontiguousarray(batch[k]), out[k], True)
    return _out(out[0] if single else out)


def _nearest_index(size: int, h: int, w: int, axis: int) -> np.ndarray:
    """The source index along `axis` (0: rows, 1: columns) of each output pixel of a nearest resize to
    (h, w), read from the resize kernel itself on an image of indices (exact: small integers)."""
    from kernels.augment import resize_image_cpu

    idx = np.arange(size, dtype=np.float32)
    src = (idx[:, None] if axis == 0 else idx[None, :])[:, :, None]
    src = np.ascontiguousarray(np.broadcast_to(src, (size, 1, 1) if axis == 0 else (1, size, 1)))
    out = np.empty((h, 1, 1) if axis == 0 else (1, w, 1), np.float32)
    resize_image_cpu(src, out, False)
    return out.reshape(-1).astype(np.int64)


def _along(image, who: str, fn):
    a, single = _images(image, who)
    out = fn(a[None] if single else a)
    return _out(out[0] if single else out)


def flip_left_right(image):
    if tf_image_ops.on_tensors(image):  # in a model or under a tape: keras.ops
        return tf_image_ops.flip_left_right(image)
    return _along(image, "flip_left_right", lambda b: b[:, :, ::-1].copy())


def flip_up_down(image):
    if tf_image_ops.on_tensors(image):  # in a model or under a tape: keras.ops
        return tf_image_ops.flip_up_down(image)
    return _along(image, "flip_up_down", lambda b: b[:, ::-1].copy())


def rot90(image, k=1, name=None):
    return _along(image, "rot90", lambda b: np.rot90(b, int(k), axes=(1, 2)).copy())


def _rng(seed):
    from flexflow_keras.utils import rng

    return np.random.default_rng(int(seed)) if seed is not None else rng.generator()


def _random_flip(image, seed, axis: int, who: str):
    gen = _rng(seed)

    def flip(b):
        keep = gen.random(b.shape[0]) >= 0.5
        return np.where(keep[:, None, None, None], b, np.flip(b, axis))
    return _along(image, who, flip)


def random_flip_left_right(image, seed=None):
    return _random_flip(image, seed, 2, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, seed, 1, "random_flip_up_down")


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    if tf_image_ops.on_tensors(image):  # in a model or under a tape: keras.ops
        return tf_image_ops.crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width)
    def crop(b):
        oy, ox, th, tw = int(offset_height), int(offset_width), int(target_height), int(target_width)
        if oy < 0 or ox < 0 or oy + th > b.shape[1] or ox + tw > b.shape[2]:
            raise ArgumentError(f"tf.image.crop_to_bounding_box: the box at ({oy}, {ox}) of {th}x{tw} does not fit "
                                f"an image of {b.shape[1]}x{b.shape[2]}.")
        return b[:, oy:oy + th, ox:ox + tw].copy()
    return _along(image, "crop_to_bounding_box", crop)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    if tf_image_ops.on_tensors(image):  # in a model or under a tape: keras.ops
        return tf_image_ops.pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width)
    def pad(b):
        oy, ox = int(offset_height), int(offset_width)
        below, right = int(target_height) - oy - b.shape[1], int(target_width) - ox - b.shape[2]
        if min(oy, ox, below, right) < 0:
            raise ArgumentError(f"tf.image.pad_to_bounding_box: an image of {b.shape[1]}x{b.shape[2]} at ({oy}, {ox}) "
                                f"does not fit {target_height}x{target_width}.")
        return np.pad(b, ((0, 0), (oy, below), (ox, right), (0, 0)))
    return _along(image, "pad_to_bounding_box", pad)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Centre-crop and/or zero-pad to the target size, as TensorFlow."""
    if tf_image_ops.on_tensors(image):  # in a model or under a tape: keras.ops
        return tf_image_ops.resize_with_crop_or_pad(image, target_height, target_width)
    def fit(b):
        th, tw = int(target_height), int(target_width)
        h, w = b.shape[1], b.shape[2]
        cy, cx = max(0, (h - th) // 2), max(0, (w - tw) // 2)
        b = b[:, cy:cy + min(h, th), cx:cx + min(w, tw)]
        py, px = max(0, (th - h) // 2), max(0, (tw - w) // 2)
        return np.pad(b, ((0, 0), (py, th - b.shape[1] - py), (px, tw - b.shape[2] - px), (0, 0)))
    return _along(image, "resize_with_crop_or_pad", fit)


def central_crop(image, central_fraction):
    if tf_image_ops.on_tensors(image):  # in a model or under a tape: keras.ops
        return tf_image_ops.central_crop(image, central_fraction)
    f = float(central_fraction)
    if not 0.0 < f <= 1.0:
        raise ArgumentError(f"tf.image.central_crop: central_fraction must be in (0, 1], received {central_fraction}.")

    def crop(b):
        h, w = b.shape[1], b.shape[2]
        oy, ox = int((h - h * f) / 2), int((w - w * f) / 2)
        return b[:, oy:h - oy, ox:w - ox].copy()
    return _along(image, "central_crop", crop)


def random_crop(value, size, seed=None, name=None):
    """A crop of `size` (every dim of value, as TensorFlow's) at a random offset."""
    a = np.asarray(value)
    size = [int(s) for s in np.asarray(size).reshape(-1)]
    if len(size) != a.ndim or any(s > d or s < 0 for s, d in zip(size, a.shape, strict=True)):
        raise ArgumentError(f"tf.image.random_crop: size {size} must give every dim of the value's shape {a.shape} "
                            f"and fit in it.")
    gen = _rng(seed)
    offs = [int(gen.integers(0, d - s + 1)) for s, d in zip(size, a.shape, strict=True)]
    return _out(a[tuple(slice(o, o + s) for o, s in zip(offs, size, strict=True))].copy())


def rgb_to_grayscale(images, name=None):
    a = np.asarray(images)
    if a.shape[-1] != 3:
        raise ArgumentError(f"tf.image.rgb_to_grayscale expects 3 channels last, received shape {a.shape}.")
    f = convert_image_dtype(a, np.float32)
    gray = np.asarray(f) @ _LUMA
    return convert_image_dtype(gray[..., None].astype(np.float32), a.dtype)


def grayscale_to_rgb(images, name=None):
    a = np.asarray(images)
    if a.shape[-1] != 1:
        raise ArgumentError(f"tf.image.grayscale_to_rgb expects 1 channel last, received shape {a.shape}.")
    return _out(np.repeat(a, 3, axis=-1))


def _as_float(image):
    a = np.asarray(image)
    return a, np.asarray(convert_image_dtype(a, np.float32)) if a.dtype.kind != "f" else a


def adjust_brightness(image, delta):
    a, f = _as_float(image)
    return convert_image_dtype((f + np.float32(delta)).astype(f.dtype), a.dtype, saturate=True)


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ArgumentError(f"tf.image.random_brightness: max_delta must be non-negative, received {max_delta}.")
    return adjust_brightness(image, float(_rng(seed).uniform(-max_delta, max_delta)))


def adjust_contrast(images, contrast_factor):
    a, f = _as_float(images)
    mean = f.mean(axis=(-3, -2), keepdims=True)
    out = (f - mean) * np.float32(contrast_factor) + mean
    return convert_image_dtype(out.astype(f.dtype), a.dtype, saturate=True)


def random_contrast(image, lower, upper, seed=None):
    if not 0 <= lower < upper:
        raise ArgumentError(f"tf.image.random_contrast expects 0 <= lower < upper, received {lower} and {upper}.")
    return adjust_contrast(image, float(_rng(seed).uniform(lower, upper)))


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1/sqrt(elements)) per image, float32."""
    a = np.asarray(image).astype(np.float32)
    axes = tuple(range(a.ndim - 3, a.ndim))
    n = math.prod(a.shape[-3:])
    mean = a.mean(axis=axes, keepdims=True)
    std = np.maximum(a.std(axis=axes, keepdims=True), np.float32(1.0 / math.sqrt(n)))
    return _out((a - mean) / std)


def adjust_gamma(image, gamma=1, gain=1):
    """``gain * x ** gamma`` on the image as [0, 1] floats (float16/32 images as they are), back in its dtype."""
    a, f = _as_float(image)
    if gamma < 0:
        raise ArgumentError(f"tf.image.adjust_gamma: gamma must be non-negative, received {gamma}.")
    out = (np.float32(gain) * f ** np.float32(gamma)).astype(f.dtype)
    return _out(out) if a.dtype.kind == "f" else convert_image_dtype(out, a.dtype, saturate=True)


def rgb_to_hsv(images, name=None):
    """RGB floats in [0, 1] to HSV (hue in [0, 1)), as TensorFlow's."""
    a = np.asarray(images)
    if a.shape[-1] != 3 or a.dtype.kind != "f":
        raise ArgumentError(f"tf.image.rgb_to_hsv expects float RGB images (3 channels last), received {a.dtype} "
                            f"{a.shape}; convert_image_dtype first.")
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    v = a.max(axis=-1)
    rng = v - a.min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(v > 0, rng / v, 0)
        norm = 1.0 / (6.0 * rng)
        h = np.where(r == v, norm * (g - b), np.where(g == v, norm * (b - r) + 2.0 / 6, norm * (r - g) + 4.0 / 6))
    h = np.where(rng > 0, h, 0)
    h = np.where(h < 0, h + 1, h)
    return _out(np.stack([h, s, v], axis=-1).astype(a.dtype))


def hsv_to_rgb(images, name=None):
    """HSV (hue in [0, 1)) to RGB floats, as TensorFlow's."""
    a = np.asarray(images)
    h, s, v = a[..., 0], a[..., 1], a[..., 2]
    dh = h * 6
    dr = np.clip(np.abs(dh - 3) - 1, 0, 1)
    dg = np.clip(2 - np.abs(dh - 2), 0, 1)
    db = np.clip(2 - np.abs(dh - 4), 0, 1)
    one_minus_s = 1 - s
    return _out(np.stack([v * (one_minus_s + s * c) for c in (dr, dg, db)], axis=-1).astype(a.dtype))


def _through_hsv(image, fn):
    a, f = _as_float(image)
    hsv = np.asarray(rgb_to_hsv(f)).copy()
    fn(hsv)
    rgb = np.asarray(hsv_to_rgb(hsv))
    return _out(rgb) if a.dtype.kind == "f" else convert_image_dtype(rgb, a.dtype, saturate=True)


def adjust_saturation(image, saturation_factor, name=None):
    def scale(hsv):
        hsv[..., 1] = np.clip(hsv[..., 1] * np.float32(saturation_factor), 0, 1)
    return _through_hsv(image, scale)


def adjust_hue(image, delta, name=None):
    if not -1 <= delta <= 1:
        raise ArgumentError(f"tf.image.adjust_hue: delta must be in [-1, 1], received {delta}.")

    def turn(hsv):
        hsv[..., 0] = np.mod(hsv[..., 0] + np.float32(delta), 1.0)
    return _through_hsv(image, turn)


def random_saturation(image, lower, upper, seed=None):
    if not 0 <= lower < upper:
        raise ArgumentError(f"tf.image.random_saturation expects 0 <= lower < upper, received {lower} and {upper}.")
    return adjust_saturation(image, float(_rng(seed).uniform(lower, upper)))


def random_hue(image, max_delta, seed=None):
    if not 0 <= max_delta <= 0.5:
        raise ArgumentError(f"tf.image.random_hue: max_delta must be in [0, 0.5], received {max_delta}.")
    return adjust_hue(image, float(_rng(seed).uniform(-max_delta, max_delta)))


def resize_with_pad(image, target_height, target_width, method="bilinear", antialias=False):
    """Resized to fit inside the target keeping the aspect ratio, then zero-padded around it, as TensorFlow."""
    a, single = _images(image, "resize_with_pad")
    h, w = a.shape[-3], a.shape[-2]
    th, tw = int(target_height), int(target_width)
    ratio = max(np.float32(w) / np.float32(tw), np.float32(h) / np.float32(th))
    rh_f, rw_f = np.float32(h) / ratio, np.float32(w) / ratio
    resized = resize(a, [int(np.floor(rh_f)), int(np.floor(rw_f))], method, False, antialias)
    oy, ox = max(0, int((np.float32(th) - rh_f) / 2)), max(0, int((np.float32(tw) - rw_f) / 2))
    return pad_to_bounding_box(resized, oy, ox, th, tw)


def _uniform(seed, minval, maxval, shape=(), dtype="float32") -> np.ndarray:
    """TensorFlow's `stateless_random_uniform` draw for `seed` (tf_stateless_random.py: its Philox values)."""
    from flexflow_keras import tf_stateless_random

    return np.asarray(tf_stateless_random.stateless_uniform(list(shape), seed, minval=minval, maxval=maxval,
                                                            dtype=dtype))


def _stateless_flip(image, seed, axis: int, who: str):
    """TensorFlow's stateless flip: one image flips when its draw is below 0.5; a batch draws one value per
    image and flips those whose draw rounds to 1."""
    a = np.asarray(image)
    if a.ndim == 3:
        return _out(np.flip(a, axis - 1).copy() if _uniform(seed, 0, 1.0) < 0.5 else a)
    if a.ndim != 4:
        raise ArgumentError(f"tf.image.{who} expects an image (H, W, C) or a batch (N, H, W, C), received shape "
                            f"{a.shape}.")
    flips = np.round(_uniform(seed, 0, 1.0, shape=(a.shape[0],))) == 1
    return _out(np.where(flips[:, None, None, None], np.flip(a, axis), a))


def stateless_random_flip_left_right(image, seed):
    return _stateless_flip(image, seed, 2, "stateless_random_flip_left_right")


def stateless_random_flip_up_down(image, seed):
    return _stateless_flip(image, seed, 1, "stateless_random_flip_up_down")


def stateless_random_brightness(image, max_delta, seed):
    return adjust_brightness(image, _uniform(seed, -max_delta, max_delta))


def stateless_random_contrast(image, lower, upper, seed):
    return adjust_contrast(image, _uniform(seed, lower, upper))


def stateless_random_saturation(image, lower, upper, seed):
    return adjust_saturation(image, _uniform(seed, lower, upper))


def stateless_random_hue(image, max_delta, seed):
    return adjust_hue(image, _uniform(seed, -max_delta, max_delta))


def stateless_random_crop(value, size, seed, name=None):
    """TensorFlow's stateless crop: offsets ``uniform int32 in [0, 2**31 - 1) % (shape - size + 1)``."""
    a = np.asarray(value)
    size = [int(v) for v in np.asarray(size).reshape(-1)]
    if len(size) != a.ndim or any(v > d or v < 0 for v, d in zip(size, a.shape, strict=True)):
        raise ArgumentError(f"tf.image.stateless_random_crop: size {size} must give every dim of the value's shape "
                            f"{a.shape} and fit in it.")
    limit = np.array(a.shape) - np.array(size) + 1
    offsets = _uniform(seed, 0, np.iinfo(np.int32).max, shape=(a.ndim,), dtype="int32") % limit
    return _out(a[tuple(slice(int(o), int(o) + v) for o, v in zip(offsets, size, strict=True))].copy())


def total_variation(images, name=None):
    """The sum of absolute differences of neighbouring pixels (per image for a batch), as keras.ops, so a
    GradientTape differentiates it (the style-transfer tutorial's regularizer on a tf.Variable image)."""
    from flexflow_keras import ops

    nd = len(images.shape)
    if nd not in (3, 4):
        raise ArgumentError(f"tf.image.total_variation expects an image or a batch of them, received shape "
                            f"{tuple(images.shape)}.")
    if nd == 3:
        dh = images[1:, :, :] - images[:-1, :, :]
        dw = images[:, 1:, :] - images[:, :-1, :]
        return ops.sum(ops.abs(dh)) + ops.sum(ops.abs(dw))
    dh = images[:, 1:, :, :] - images[:, :-1, :, :]
    dw = images[:, :, 1:, :] - images[:, :, :-1, :]
    return ops.sum(ops.abs(dh), axis=(1, 2, 3)) + ops.sum(ops.abs(dw), axis=(1, 2, 3))


def sobel_edges(image):
    """Sobel gradients of each channel, (N, H, W, C, 2) with the vertical (dy) then horizontal (dx) response,
    on reflect-padded images, as TensorFlow's; composed of keras.ops, so a GradientTape differentiates it."""
    from flexflow_keras import ops

    if len(image.shape) != 4:
        raise ArgumentError(f"tf.image.sobel_edges expects a batch (N, H, W, C), received shape {tuple(image.shape)}.")
    c = int(image.shape[-1])
    x = ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="reflect")
    dy = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32)
    kernels = [np.ascontiguousarray(np.broadcast_to(k[:, :, None, None], (3, 3, c, 1))) for k in (dy, dy.T)]
    return ops.stack([ops.depthwise_conv(x, k) for k in kernels], axis=-1)


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """The image after a JPEG round trip at `jpeg_quality` (0-100), in its dtype (Pillow's encoder)."""
    from flexflow_keras.tf_io import _frame, _pillow

    a, single = _images(image, "adjust_jpeg_quality")
    Image = _pillow()
    q = int(jpeg_quality)
    if not 0 <= q <= 100:
        raise ArgumentError(f"tf.image.adjust_jpeg_quality: jpeg_quality must be in [0, 100], received {q}.")
    u8 = np.asarray(convert_image_dtype(a, np.uint8, saturate=True))
    batch = u8[None] if single else u8
    out = []
    for img in batch:
        buf = io.BytesIO()
        Image.fromarray(img[:, :, 0] if img.shape[2] == 1 else img).save(buf, format="JPEG", quality=q)
        out.append(_frame(Image.open(io.BytesIO(buf.getvalue())), img.shape[2], np.uint8))
    res = np.stack(out)
    res = res[0] if single else res
    return convert_image_dtype(res, a.dtype)


def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    if not 0 <= min_jpeg_quality < max_jpeg_quality <= 100:
        raise ArgumentError(f"tf.image.random_jpeg_quality expects 0 <= min < max <= 100, received "
                            f"{min_jpeg_quality} and {max_jpeg_quality}.")
    return adjust_jpeg_quality(image, int(_rng(seed).integers(min_jpeg_quality, max_jpeg_quality)))


IMAGE_NAMES = ("convert_image_dtype", "resize",
               "flip_left_right", "flip_up_down", "rot90", "random_flip_left_right", "random_flip_up_down",
               "crop_to_bounding_box", "pad_to_bounding_box", "resize_with_crop_or_pad", "central_crop", "random_crop",
               "rgb_to_grayscale", "grayscale_to_rgb", "adjust_brightness", "random_brightness", "adjust_contrast",
               "random_contrast", "per_image_standardization", "adjust_gamma", "rgb_to_hsv", "hsv_to_rgb",
               "adjust_saturation", "adjust_hue", "random_saturation", "random_hue", "resize_with_pad",
               "stateless_random_flip_left_right", "stateless_random_flip_up_down", "stateless_random_brightness",
               "stateless_random_contrast", "stateless_random_saturation", "stateless_random_hue",
               "stateless_random_crop", "total_variation", "sobel_edges", "adjust_jpeg_quality",
               "random_jpeg_quality", "psnr") + tf_image_spaces.NAMES + tf_image_quality.NAMES
psnr = tf_image_ops.psnr  # on arrays and tensors alike (keras.ops)
image_gradients, ssim = tf_image_quality.image_gradients, tf_image_quality.ssim  # arrays and tensors alike
rgb_to_yuv, yuv_to_rgb = tf_image_spaces.rgb_to_yuv, tf_image_spaces.yuv_to_rgb  # arrays and tensors alike
rgb_to_yiq, yiq_to_rgb = tf_image_spaces.rgb_to_yiq, tf_image_spaces.yiq_to_rgb
