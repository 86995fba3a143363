"""Keras 2's image helpers: `load_img`, `img_to_array`, `array_to_img`, `save_img` (Pillow), and the
axis conventions of `data_format` shared by `ImageDataGenerator` and its iterators."""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import DataError

_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
_RESAMPLE = {"nearest": "NEAREST", "bilinear": "BILINEAR", "bicubic": "BICUBIC", "lanczos": "LANCZOS",
             "box": "BOX", "hamming": "HAMMING"}


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("keras.preprocessing.image needs Pillow to read and write image files: "
                          "pip install pillow") from None
    return Image


def check_data_format(who: str, data_format) -> str:
    """'channels_last' (the default for None) or 'channels_first'; anything else is a ValueError."""
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{who} expects data_format 'channels_last' or 'channels_first', received "
                         f"data_format={data_format!r}.")
    return data_format


def load_img(path, grayscale: bool = False, color_mode: str = "rgb", target_size=None,
             interpolation: str = "nearest", keep_aspect_ratio: bool = False):
    """Open an image file as a PIL image (Keras' `load_img`).

    Args:
        path: the file: a path (str, bytes or pathlib.Path) or an io.BytesIO of its contents.
        grayscale: Keras 1 spelling of ``color_mode="grayscale"``.
        color_mode: "grayscale" (8-bit, or 16/32-bit grey kept as it is), "rgb" or "rgba".
        target_size: (height, width) to resize to, or None to keep the size.
        interpolation: Pillow's filter when resizing: "nearest", "bilinear", "bicubic", "lanczos", "box" or
            "hamming".
        keep_aspect_ratio: resize the largest centred window of the target's aspect ratio (a crop), not the
            whole image.
    """
    import io
    import pathlib

    image_mod = _pil()
    if grayscale:
        color_mode = "grayscale"
    if color_mode not in _MODES:
        raise ValueError(f"load_img expects color_mode in {sorted(_MODES)}, received color_mode={color_mode!r}.")
    if isinstance(path, io.BytesIO):
        img = image_mod.open(path)
    elif isinstance(path, (str, bytes, pathlib.Path)):
        try:
            with open(path, "rb") as f:
                img = image_mod.open(io.BytesIO(f.read()))
        except OSError as e:
            raise DataError(f"load_img cannot read {str(path)!r}: {e}.") from None
    else:
        raise TypeError(f"load_img expects a path (str, bytes, pathlib.Path) or an io.BytesIO, received "
                        f"{type(path).__name__}.")
    img.load()
    if color_mode != "grayscale" or img.mode not in ("L", "I;16", "I"):  # deeper grey stays as it is, as Keras
        if img.mode != _MODES[color_mode]:
            img = img.convert(_MODES[color_mode])
    if target_size is not None:
        h, w = (int(v) for v in target_size)
        if img.size != (w, h):
            if interpolation not in _RESAMPLE:
                raise ValueError(f"load_img expects interpolation in {sorted(_RESAMPLE)}, received "
                                 f"interpolation={interpolation!r}.")
            from flexflow_keras.data.images import keep_aspect_box

            box = keep_aspect_box(img.size, (h, w)) if keep_aspect_ratio else None
            img = img.resize((w, h), getattr(image_mod.Resampling, _RESAMPLE[interpolation]), box=box)
    return img


def img_to_array(img, data_format=None, dtype: str = "float32") -> np.ndarray:
    """A PIL image as a 3-D array (height, width, channels), or channels first.

    Args:
        img: a PIL image.
        data_format: "channels_last" (default) or "channels_first".
        dtype: the array's dtype.
    """
    data_format = check_data_format("img_to_array", data_format)
    x = np.asarray(img, dtype=dtype)
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {x.shape}.")
    return np.ascontiguousarray(x.transpose(2, 0, 1)) if data_format == "channels_first" else x


def array_to_img(x, data_format=None, scale: bool = True, dtype: str = "float32"):
    """A 3-D array as a PIL image; `scale` maps the array's min..max to 0..255 first (Keras 2).

    Args:
        x: (height, width, channels) with 1, 3 or 4 channels (or channels first).
        data_format: "channels_last" (default) or "channels_first".
        scale: rescale to 0..255.
        dtype: the dtype the array is converted to before scaling.
    """
    image_mod = _pil()
    data_format = check_data_format("array_to_img", data_format)
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 3:
        raise ValueError(f"array_to_img expects a 3-D image array, received shape {x.shape}.")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    channels = x.shape[2]
    if channels not in (1, 3, 4):
        raise ValueError(f"array_to_img: unsupported channel number {channels} (expected 1, 3 or 4).")
    pixels = np.clip(x, 0, 255).astype("uint8")
    if channels == 1:
        return image_mod.fromarray(pixels[:, :, 0], "L")
    return image_mod.fromarray(pixels, "RGB" if channels == 3 else "RGBA")


def save_img(path, x, data_format=None, file_format=None, scale: bool = True, **kwargs) -> None:
    """Save an image array to a file (`array_to_img` then PIL's `save`)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    img.save(path, format=file_format, **kwargs)


__all__ = ["array_to_img", "img_to_array", "load_img", "save_img"]
