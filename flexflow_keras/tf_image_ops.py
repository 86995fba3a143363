"""`tf.image`'s crops, pads and flips on the framework's tensors, for `python -m flexflow_keras`: composed from
keras.ops (slicing, `pad`, `flip`), so they run inside a layer's call() on symbolic tensors (keras.io's
small-data ViT shifts its images with crop_to_bounding_box and pad_to_bounding_box in its patch layer) and
under a GradientTape. tf_image.py sends them here for a `KerasTensor`, an `EagerTensor` or a variable; plain NumPy arrays
(a Dataset.map's decoded images) stay on its host path. The sizes and offsets are Python ints, and a box must
fit the image's static height and width, as TensorFlow checks them when the shapes are known.
"""

from __future__ import annotations

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


NAMES = ("crop_to_bounding_box", "pad_to_bounding_box", "flip_left_right", "flip_up_down",
         "resize_with_crop_or_pad", "central_crop")
