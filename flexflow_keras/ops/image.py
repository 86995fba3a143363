"""`keras.ops.image`: Keras 3's image functions, with its signatures and numerics (as its TensorFlow backend).

Each takes a batch of images (rank 4) or one image (rank 3), channels_last or channels_first
(`data_format`, default `keras.config.image_data_format()`), as arrays (run now) or as symbolic tensors
inside a model (recorded, differentiable; a symbolic tensor's first dim is its batch, so it is rank 4).
They are composed from existing ops: `extract_patches` from slices, reshapes and transposes (Keras' other
backends use a conv with an identity kernel: the same values); `resize` is the Resizing layer's
`ImageResizeOp` (bilinear) or two gathers (nearest, TensorFlow's choice of source pixels); `pad_images` and
`crop_images` are pads and slices; the colour conversions are element-wise ops (Keras' formulas for its JAX
and NumPy backends). `affine_transform` and `map_coordinates` run on arrays only (`ops.image_sampling`).

Example:
    >>> patches = keras.ops.image.extract_patches(np.zeros((2, 20, 20, 3), "float32"), (5, 5))
    >>> patches.shape
    (2, 4, 4, 75)
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from flexflow_keras import backend
from flexflow_keras import ops as K
from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import image_sampling as _sampling
from flexflow_keras.ops.augment import ImageResizeOp, aspect_window
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.eager_tensor import eager_results
from flexflow_keras.ops.graph import KerasTensor, Variable
from kernels.augment import INTERPOLATIONS

_LUMA = (0.2989, 0.5870, 0.1140)  # TensorFlow's rgb_to_grayscale weights
_KERAS_RESIZE = ("bilinear", "nearest", "lanczos3", "lanczos5", "bicubic", "area")


def _images(who: str, images, spatial: int = 2):
    """`images` as a tensor of rank spatial+1 or spatial+2; a symbolic one must hold its batch."""
    if not isinstance(images, KerasTensor | Variable | np.ndarray):
        images = np.asarray(images)
    nd, shape = len(images.shape), tuple(images.shape)
    if nd not in (spatial + 1, spatial + 2):
        what = "image" if spatial == 2 else "volume"
        raise ValueError(f"keras.ops.image.{who}: Invalid images rank: expected rank {spatial + 1} (single {what}) "
                         f"or rank {spatial + 2} (batch of {what}s). Received input with shape: images.shape={shape}")
    if nd == spatial + 1 and isinstance(images, KerasTensor):
        raise ShapeError(f"keras.ops.image.{who} expects a symbolic tensor to be a batch of images of rank "
                         f"{spatial + 2} (its first dim is the batch), received shape {shape}. Call it on a batch "
                         f"(keras.ops.expand_dims(x, -1) adds a channels axis to a 3-D batch).")
    return images


def _per_batch(images, spatial: int, fn):
    """fn on a batch; a single image goes through as a batch of one."""
    if len(images.shape) == spatial + 2:
        return fn(images)
    return K.squeeze(fn(K.expand_dims(images, 0)), 0)


def _channels_last(x, channels_first: bool):
    nd = len(x.shape)
    return K.transpose(x, (0, *range(2, nd), 1)) if channels_first else x


def _channels_first(x, channels_first: bool):
    nd = len(x.shape)
    return K.transpose(x, (0, nd - 1, *range(1, nd - 1))) if channels_first else x


def _known(who: str, x, dims) -> None:
    if any(x.shape[d] is None for d in dims):
        raise ShapeError(f"keras.ops.image.{who} needs images of known spatial size and channels, received shape "
                         f"{tuple(x.shape)}; give the model's Input a full shape.")


# --- patches -------------------------------------------------------------------------------------------------
def _tuple(who: str, name: str, value, n: int) -> tuple[int, ...]:
    vals = (value,) * n if isinstance(value, int | np.integer) else tuple(value)
    if len(vals) != n or any(isinstance(v, bool) or int(v) < 1 for v in vals):
        raise ValueError(f"keras.ops.image.{who} expects {name} to be a positive integer or a tuple of {n}, "
                         f"received {name}={value!r}.")
    return tuple(int(v) for v in vals)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """Patches of `size` (an int or a pair; three for volumes) as vectors in the channels dim.

    Args:
        images: (N, H, W, C) or (H, W, C) (channels_first: (N, C, H, W) or (C, H, W)); volumes with a
            3-tuple `size`.
        size: the patch size; strides: the step between patches (default `size`); dilation_rate: the step
            between a patch's pixels (>1 only with strides 1); padding: "valid" or "same".

    Returns:
        (N, out_h, out_w, ph * pw * C) (channels_first: (N, ph * pw * C, out_h, out_w)), each vector ordered
        (row, column, channel) within its patch, as tf.image.extract_patches.
    """
    if not isinstance(size, int | np.integer):
        if not isinstance(size, tuple | list):
            raise TypeError(f"keras.ops.image.extract_patches: Invalid `size` argument. Expected an int or a tuple. "
                            f"Received: size={size} of type {type(size).__name__}")
        if len(size) not in (2, 3):
            raise ValueError(f"keras.ops.image.extract_patches: Invalid `size` argument. Expected a tuple of length "
                             f"2 or 3. Received: size={size} with length {len(size)}")
    spatial = 3 if not isinstance(size, int | np.integer) and len(size) == 3 else 2
    return _patches("extract_patches", images, size, strides, dilation_rate, padding, data_format, spatial)


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """`extract_patches` of volumes (N, D, H, W, C): patches of `size` (an int or a 3-tuple)."""
    return _patches("extract_patches_3d", volumes, size, strides, dilation_rate, padding, data_format, 3)


def _patches(who, images, size, strides, dilation_rate, padding, data_format, spatial):
    fmt = backend.standardize_data_format(data_format, f"keras.ops.image.{who}")
    images = _images(who, images, spatial)
    p = _tuple(who, "size", size, spatial)
    s = _tuple(who, "strides", strides or size, spatial)
    d = _tuple(who, "dilation_rate", dilation_rate, spatial)
    if max(s) > 1 and max(d) > 1:
        raise ValueError(f"keras.ops.image.{who}: `strides > 1` not supported in conjunction with `dilation_rate > "
                         f"1`. Received: strides={list(s)} and dilation_rate={list(d)}")
    pad = str(padding).lower()
    if pad not in ("valid", "same"):
        raise ValueError(f"keras.ops.image.{who} expects padding 'valid' or 'same', received padding={padding!r}.")
    cf = fmt == "channels_first"
    return _per_batch(images, spatial, lambda x: _channels_first(
        _patches_nhwc(who, _channels_last(x, cf), p, s, d, pad), cf))


def _patches_nhwc(who, x, p, s, d, pad):
    k = len(p)
    _known(who, x, range(1, k + 2))
    sizes = tuple(x.shape[1:k + 1])
    span = tuple((pi - 1) * di + 1 for pi, di in zip(p, d, strict=True))
    if pad == "same":
        out = tuple(math.ceil(n / si) for n, si in zip(sizes, s, strict=True))
        total = [max((o - 1) * si + sp - n, 0) for o, si, sp, n in zip(out, s, span, sizes, strict=True)]
        if any(total):
            x = K.pad(x, [(0, 0), *[(t // 2, t - t // 2) for t in total], (0, 0)])
    else:
        if any(sp > n for sp, n in zip(span, sizes, strict=True)):
            raise ShapeError(f"keras.ops.image.{who}: patches of size {p} (dilation {d}) do not fit in images of "
                             f"spatial size {sizes} with padding='valid'; use smaller patches or padding='same'.")
        out = tuple((n - sp) // si + 1 for n, sp, si in zip(sizes, span, s, strict=True))
    c = x.shape[-1]
    if s == p and max(d) == 1:  # tiles: crop, split each spatial dim in (out, patch), move the patch dims last
        x = K.get_item(x, (slice(None), *[slice(0, o * pi) for o, pi in zip(out, p, strict=True)], slice(None)))
        split = [dim for o, pi in zip(out, p, strict=True) for dim in (o, pi)]
        x = K.reshape(x, (-1, *split, c))
        perm = (0, *range(1, 2 * k, 2), *range(2, 2 * k + 1, 2), 2 * k + 1)
        return K.reshape(K.transpose(x, perm), (-1, *out, math.prod(p) * c))
    pieces = []  # one strided slice per position in the patch, joined along the channels in (row, col) order
    for offset in itertools.product(*[range(pi) for pi in p]):
        key = [slice(o * di, o * di + (n - 1) * si + 1, si) for o, di, n, si in zip(offset, d, out, s, strict=True)]
        pieces.append(K.get_item(x, (slice(None), *key, slice(None))))
    return pieces[0] if len(pieces) == 1 else K.concatenate(pieces, axis=-1)


# --- resize, pad, crop -------------------------------------------------------------------------------------
def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """Resize to `size` (height, width) as tf.image.resize: half-pixel centres, no antialiasing.

    Args:
        interpolation: "bilinear" or "nearest" (Keras' "bicubic", "area", "lanczos3/5" are not here).
        crop_to_aspect_ratio: resize the largest centred window of the target's aspect ratio.
        pad_to_aspect_ratio: pad the short side with `fill_value` to the target's aspect ratio first.
    """
    who = "keras.ops.image.resize"
    if len(size) != 2:
        raise ValueError(f"{who}: Expected `size` to be a tuple of 2 integers. Received: size={size}")
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"{who}: `size` must have positive height and width. Received: size={size}")
    images = _images("resize", images)
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError(f"{who}: Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.")
    if interpolation not in _KERAS_RESIZE:
        raise ValueError(f"{who}: Invalid value for argument `interpolation`. Expected of one {_KERAS_RESIZE}. "
                         f"Received: interpolation={interpolation}")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{who}: interpolation={interpolation!r} is not implemented by flexflow_keras; use "
                         f"'bilinear' or 'nearest', or resize with Pillow before fit.")
    if antialias:
        raise ValueError(f"{who}: antialias=True is not implemented by flexflow_keras; use antialias=False (the "
                         f"same result when enlarging), or resize with Pillow before fit when shrinking.")
    if fill_mode != "constant":
        raise ValueError(f"{who}: Invalid value for argument `fill_mode`. Only `'constant'` is supported. "
                         f"Received: fill_mode={fill_mode}")
    cf = backend.standardize_data_format(data_format, who) == "channels_first"
    op = ImageResizeOp(kind="resize", channels_first=cf, size=(int(size[0]), int(size[1])),
                       interpolation=interpolation, crop_to_aspect_ratio=bool(crop_to_aspect_ratio))

    def run(x):
        if pad_to_aspect_ratio:
            x = _pad_to_aspect(x, size, cf, fill_value)
        _known("resize", x, (1, 2, 3))
        if interpolation == "nearest":
            return _nearest(x, size, cf, crop_to_aspect_ratio)
        dtype = np.dtype(x.dtype)
        y = apply_op(op, [F._tensor(x if dtype == np.float32 else K.cast(x, "float32"), F._symbolic(x))])
        if dtype.kind in "iu":  # Keras: rounded and saturated back to the images' integer dtype
            info = np.iinfo(dtype)
            return K.cast(K.clip(K.round(y), float(info.min), float(info.max)), dtype.name)
        return y if dtype == np.float32 else K.cast(y, dtype.name)

    return _per_batch(images, 2, run)


def _nearest(x, size, cf: bool, crop_to_aspect_ratio: bool):
    """Nearest resize as TensorFlow picks the source pixels (float32 ``floor((i + 0.5) * in / out)``): two
    gathers, so values and dtype are the input's."""
    ha, wa = (2, 3) if cf else (1, 2)
    if crop_to_aspect_ratio:
        top, left, h, w = aspect_window(x.shape[ha], x.shape[wa], size)
        key = [slice(None)] * 4
        key[ha], key[wa] = slice(top, top + h), slice(left, left + w)
        x = K.get_item(x, tuple(key))
    for axis, n_out in ((ha, size[0]), (wa, size[1])):
        n_in = x.shape[axis]
        src = np.floor((np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * (np.float32(n_in) / np.float32(n_out)))
        x = K.take(x, np.minimum(src.astype(np.int32), n_in - 1), axis=axis)
    return x


def _pad_to_aspect(x, size, cf: bool, fill_value):
    """TensorFlow's pad_to_aspect_ratio: the short side padded by the same rows (columns) on both sides."""
    h, w = (x.shape[2], x.shape[3]) if cf else (x.shape[1], x.shape[2])
    th, tw = size
    top = int((max(h, int(float(w * th) / tw)) - h) / 2)
    left = int((max(w, int(float(h * tw) / th)) - w) / 2)
    pads = [(top, top), (left, left)]
    return K.pad(x, [(0, 0), (0, 0), *pads] if cf else [(0, 0), *pads, (0, 0)], constant_values=fill_value)


def _two_of(who, names, values):
    if list(values).count(None) != 1:
        raise ValueError(f"keras.ops.image.{who}: Must specify exactly two of {', '.join(names)}. Received: "
                         + ", ".join(f"{n}={v}" for n, v in zip(names, values, strict=True)))
    for n, v in zip(names, values, strict=True):
        if v is not None and v < 0:
            raise ValueError(f"keras.ops.image.{who}: {n} must be >= 0. Received: {n}={v}")


def _hw_axes(images, data_format, who) -> tuple[int, int]:
    nd = len(images.shape)
    cf = backend.standardize_data_format(data_format, f"keras.ops.image.{who}") == "channels_first"
    return (nd - 2, nd - 1) if cf else (nd - 3, nd - 2)


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None, right_padding=None,
               target_height=None, target_width=None, data_format=None):
    """Pad with zeros to `target_height` x `target_width` (give two of top/bottom/target per dim)."""
    images = _images("pad_images", images)
    _two_of("pad_images", ("top_padding", "bottom_padding", "target_height"),
            (top_padding, bottom_padding, target_height))
    _two_of("pad_images", ("left_padding", "right_padding", "target_width"),
            (left_padding, right_padding, target_width))
    ha, wa = _hw_axes(images, data_format, "pad_images")
    _known("pad_images", images, (ha, wa))
    widths = [(0, 0)] * len(images.shape)
    for axis, lo, hi, target, names in ((ha, top_padding, bottom_padding, target_height, ("top", "bottom")),
                                        (wa, left_padding, right_padding, target_width, ("left", "right"))):
        n = images.shape[axis]
        lo = target - hi - n if lo is None else lo
        hi = target - lo - n if hi is None else hi
        for name, v in zip(names, (lo, hi), strict=True):
            if v < 0:
                raise ValueError(f"keras.ops.image.pad_images: {name}_padding must be >= 0. Received: "
                                 f"{name}_padding={v}")
        widths[axis] = (int(lo), int(hi))
    return K.pad(images, widths)


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None, right_cropping=None,
                target_height=None, target_width=None, data_format=None):
    """Crop to `target_height` x `target_width` (give two of top/bottom/target per dim)."""
    images = _images("crop_images", images)
    _two_of("crop_images", ("top_cropping", "bottom_cropping", "target_height"),
            (top_cropping, bottom_cropping, target_height))
    _two_of("crop_images", ("left_cropping", "right_cropping", "target_width"),
            (left_cropping, right_cropping, target_width))
    ha, wa = _hw_axes(images, data_format, "crop_images")
    _known("crop_images", images, (ha, wa))
    key = [slice(None)] * len(images.shape)
    for axis, lo, hi, target, names in ((ha, top_cropping, bottom_cropping, target_height, ("top_cropping",
                                         "target_height")), (wa, left_cropping, right_cropping, target_width,
                                                             ("left_cropping", "target_width"))):
        n = images.shape[axis]
        lo = n - target - hi if lo is None else lo
        target = n - hi - lo if target is None else target
        for name, v in zip(names, (lo, target), strict=True):
            if v < 0:
                raise ValueError(f"keras.ops.image.crop_images: {name} must be >= 0. Received: {name}={v}")
        if lo + target > n:
            raise ValueError(f"keras.ops.image.crop_images: cropping {target} rows/columns from {lo} runs past the "
                             f"image's {n} (shape {tuple(images.shape)}).")
        key[axis] = slice(int(lo), int(lo + target))
    return K.get_item(images, tuple(key))


# --- colour ---------------------------------------------------------------------------------------------------
def _channel_axis(images, data_format, who) -> int:
    cf = backend.standardize_data_format(data_format, f"keras.ops.image.{who}") == "channels_first"
    return len(images.shape) - 3 if cf else len(images.shape) - 1


def _planes(images, axis: int):
    return [K.get_item(images, (slice(None),) * axis + (slice(i, i + 1),)) for i in range(3)]


def _float_images(who, images):
    images = _images(who, images)
    if np.dtype(images.dtype).kind != "f":
        raise ValueError(f"keras.ops.image.{who}: Invalid images dtype: expected float dtype. Received: "
                         f"images.dtype={np.dtype(images.dtype).name}")
    return images


def rgb_to_grayscale(images, data_format=None):
    """Luma (TensorFlow's weights 0.2989, 0.5870, 0.1140) with one channel; 1-channel images unchanged."""
    images = _images("rgb_to_grayscale", images)
    axis = _channel_axis(images, data_format, "rgb_to_grayscale")
    if images.shape[axis] not in (1, 3):
        raise ValueError(f"keras.ops.image.rgb_to_grayscale: Invalid channel size: expected 3 (RGB) or 1 (Grayscale). "
                         f"Received input with shape: images.shape={tuple(images.shape)}")
    if images.shape[axis] == 1:
        return K.multiply(images, 1) if isinstance(images, KerasTensor) else np.array(images)
    dtype = np.dtype(images.dtype)
    x = images if dtype.kind == "f" else K.cast(images, "float32")
    r, g, b = _planes(x, axis)
    gray = K.add(K.add(K.multiply(r, _LUMA[0]), K.multiply(g, _LUMA[1])), K.multiply(b, _LUMA[2]))
    return gray if dtype.kind == "f" else K.cast(gray, dtype.name)


def rgb_to_hsv(images, data_format=None):
    """RGB in [0, 1] to HSV in [0, 1] (hue as a fraction of the colour circle)."""
    images = _float_images("rgb_to_hsv", images)
    axis = _channel_axis(images, data_format, "rgb_to_hsv")
    eps = float(np.finfo(np.dtype(images.dtype)).eps)
    x = K.where(K.less(K.abs(images), eps), K.zeros_like(images), images)
    r, g, b = _planes(x, axis)
    value = K.maximum(K.maximum(r, g), b)
    rng = K.subtract(value, K.minimum(K.minimum(r, g), b))
    safe_value = K.where(K.greater(value, 0.0), value, K.ones_like(value))
    safe_rng = K.where(K.greater(rng, 0.0), rng, K.ones_like(rng))
    saturation = K.where(K.greater(value, 0.0), K.divide(rng, safe_value), K.zeros_like(value))
    norm = K.divide(1.0, K.multiply(safe_rng, 6.0))
    hue = K.where(K.equal(value, g), K.add(K.multiply(norm, K.subtract(b, r)), 2.0 / 6.0),
                  K.add(K.multiply(norm, K.subtract(r, g)), 4.0 / 6.0))
    hue = K.where(K.equal(value, r), K.multiply(norm, K.subtract(g, b)), hue)
    wrap = K.cast(K.less(hue, 0.0), images.dtype)
    hue = K.add(K.where(K.greater(rng, 0.0), hue, K.zeros_like(hue)), wrap)
    return K.concatenate([hue, saturation, value], axis=axis)


def hsv_to_rgb(images, data_format=None):
    """HSV in [0, 1] to RGB."""
    images = _float_images("hsv_to_rgb", images)
    axis = _channel_axis(images, data_format, "hsv_to_rgb")
    hue, saturation, value = _planes(images, axis)
    dh = K.multiply(K.mod(hue, 1.0), 6.0)
    dr = K.clip(K.subtract(K.abs(K.subtract(dh, 3.0)), 1.0), 0.0, 1.0)
    dg = K.clip(K.subtract(2.0, K.abs(K.subtract(dh, 2.0))), 0.0, 1.0)
    db = K.clip(K.subtract(2.0, K.abs(K.subtract(dh, 4.0))), 0.0, 1.0)
    one_minus_s = K.subtract(1.0, saturation)
    planes = [K.multiply(value, K.add(one_minus_s, K.multiply(saturation, dc))) for dc in (dr, dg, db)]
    return K.concatenate(planes, axis=axis)


# computed on NumPy arrays (ops/image_sampling.py); their results are tensors, as the functions above give
affine_transform = eager_results(_sampling.affine_transform)
map_coordinates = eager_results(_sampling.map_coordinates)

__all__ = ["affine_transform", "crop_images", "extract_patches", "extract_patches_3d", "hsv_to_rgb",
           "map_coordinates", "pad_images", "resize", "rgb_to_grayscale", "rgb_to_hsv"]
