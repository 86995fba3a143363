"""`tf.image`'s crops, pads and flips (and `psnr`, a metric) on the framework's tensors, for `python -m
flexflow_keras`: composed from keras.ops (slicing, `pad`, `flip`, `mean`, `log`), so they run inside a layer's call() on symbolic tensors (keras.io's
small-data ViT shifts its images with crop_to_bounding_box and pad_to_bounding_box in its patch layer) and
under a GradientTape. tf_image.py sends them here for a `KerasTensor`, an `EagerTensor` or a variable; plain NumPy arrays
(a Dataset.map's decoded images) stay on its host path. The sizes and offsets are Python ints, and a box must
fit the image's static height and width, as TensorFlow checks them when the shapes are known.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.ops.eager_tensor import EagerTensor
from flexflow_keras.ops.graph import KerasTensor, Variable


def on_tensors(image) -> bool:
    """Whether tf_image should compose `image`'s op from keras.ops (a model's tensor, a tape's tensor or
    variable)."""
    return isinstance(image, KerasTensor | EagerTensor | Variable)


def _hw(image, who: str) -> tuple[int, int, int]:
    """(rank, height, width) of an image (H, W, C) or a batch (N, H, W, C) with static height and width."""
    shape = tuple(image.shape)
    if len(shape) not in (3, 4):
        raise ArgumentError(f"tf.image.{who} expects an image (height, width, channels) or a batch of them, "
                            f"received shape {shape}.")
    h, w = shape[-3], shape[-2]
    if h is None or w is None:
        raise ArgumentError(f"tf.image.{who} needs the image's height and width known in the model, received shape "
                            f"{shape}. Give the Input a fixed size (or Resizing before it).")
    return len(shape), int(h), int(w)


def _ints(*values) -> list[int]:
    return [int(v) for v in values]


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The box of `target_height` x `target_width` at (`offset_height`, `offset_width`)."""
    rank, h, w = _hw(image, "crop_to_bounding_box")
    oy, ox, th, tw = _ints(offset_height, offset_width, target_height, target_width)
    if min(oy, ox) < 0 or th < 1 or tw < 1 or oy + th > h or ox + tw > w:
        raise ArgumentError(f"tf.image.crop_to_bounding_box: the box at ({oy}, {ox}) of {th}x{tw} does not fit an "
                            f"image of {h}x{w}.")
    rows, cols = slice(oy, oy + th), slice(ox, ox + tw)
    return image[:, rows, cols, :] if rank == 4 else image[rows, cols, :]


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The image placed at (`offset_height`, `offset_width`) in zeros of `target_height` x `target_width`."""
    from flexflow_keras import ops

    rank, h, w = _hw(image, "pad_to_bounding_box")
    oy, ox, th, tw = _ints(offset_height, offset_width, target_height, target_width)
    below, right = th - oy - h, tw - ox - w
    if min(oy, ox, below, right) < 0:
        raise ArgumentError(f"tf.image.pad_to_bounding_box: an image of {h}x{w} at ({oy}, {ox}) does not fit "
                            f"{th}x{tw}.")
    widths = [[oy, below], [ox, right], [0, 0]]
    return ops.pad(image, ([[0, 0]] if rank == 4 else []) + widths)


def flip_left_right(image):
    from flexflow_keras import ops

    rank, _, _ = _hw(image, "flip_left_right")
    return ops.flip(image, axis=rank - 2)


def flip_up_down(image):
    from flexflow_keras import ops

    rank, _, _ = _hw(image, "flip_up_down")
    return ops.flip(image, axis=rank - 3)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Centre-crop and/or zero-pad to the target size, as TensorFlow."""
    _, h, w = _hw(image, "resize_with_crop_or_pad")
    th, tw = _ints(target_height, target_width)
    if th < 1 or tw < 1:
        raise ArgumentError(f"tf.image.resize_with_crop_or_pad expects a positive target size, received {th}x{tw}.")
    ch, cw = min(h, th), min(w, tw)
    cropped = crop_to_bounding_box(image, max(0, (h - th) // 2), max(0, (w - tw) // 2), ch, cw)
    return pad_to_bounding_box(cropped, max(0, (th - h) // 2), max(0, (tw - w) // 2), th, tw)


def central_crop(image, central_fraction):
    """The centre `central_fraction` of the height and width, with TensorFlow's offsets."""
    f = float(central_fraction)
    if not 0.0 < f <= 1.0:
        raise ArgumentError(f"tf.image.central_crop: central_fraction must be in (0, 1], received {central_fraction}.")
    _, h, w = _hw(image, "central_crop")
    oy, ox = int((h - h * f) / 2), int((w - w * f) / 2)
    return crop_to_bounding_box(image, oy, ox, h - 2 * oy, w - 2 * ox)


def _as_unit_float(x, dtype):
    """`tf.image.convert_image_dtype(x, tf.float32)` for a tensor of `dtype`: integers scaled into [0, 1]."""
    from flexflow_keras import ops

    dtype = np.dtype(dtype)
    y = ops.cast(x, "float32")
    return ops.multiply(y, np.float32(1.0 / np.iinfo(dtype).max)) if dtype.kind in "ui" else y


def psnr(a, b, max_val, name=None):
    """`tf.image.psnr(a, b, max_val)`: the peak signal-to-noise ratio of each image of two batches (..., H, W,
    C) in float32, ``20 log10(max_val) - 10 log10(mse)`` with the mean over each image's height, width and
    channels (keras.io's EDSR and super-resolution examples use it as a metric). Integer images are scaled to
    [0, 1] first, `max_val` with them, as TensorFlow's convert_image_dtype does."""
    from flexflow_keras import ops
    from flexflow_keras.ops.dtype_rules import dtype_of

    da, db = np.dtype(dtype_of(a)), np.dtype(dtype_of(b))
    sa, sb = tuple(a.shape), tuple(np.shape(b) if not hasattr(b, "shape") else b.shape)
    if len(sa) < 3 or len(sa) != len(sb) or any(x is not None and y is not None and x != y
                                                  for x, y in zip(sa, sb, strict=True)):
        raise ArgumentError(f"tf.image.psnr expects two images or batches of images (..., height, width, channels) "
                            f"of one shape, received shapes {sa} and {sb}.")
    if da != db:
        raise ArgumentError(f"tf.image.psnr expects images of one dtype, received {da} and {db}: cast one, e.g. "
                            f"tf.cast(b, a.dtype).")
    top = np.asarray(max_val).astype(da)
    top = np.float32(top) / np.float32(np.iinfo(da).max) if da.kind in "ui" else np.float32(top)
    diff = ops.subtract(_as_unit_float(a, da), _as_unit_float(b, db))
    mse = ops.mean(ops.square(diff), axis=(-3, -2, -1))
    first = np.float32(20) * np.log(top) / np.log(np.float32(10.0))
    return ops.subtract(first, ops.multiply(ops.log(mse), np.float32(10 / np.log(10))))


NAMES = ("crop_to_bounding_box", "pad_to_bounding_box", "flip_left_right", "flip_up_down",
         "resize_with_crop_or_pad", "central_crop", "psnr")
