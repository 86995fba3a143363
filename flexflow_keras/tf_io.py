"""`tf.io` file reading and image decoding on the host, for `python -m flexflow_keras` (tf_compat.py): what a
`Dataset.map` of an image pipeline calls first (``tf.io.read_file`` -> ``tf.io.decode_jpeg`` / ``decode_png`` /
``decode_image``; also under ``tf.image``). tf_image.py holds what comes after (resizing, dtypes, colours).

Decoding goes through Pillow (installed with the ``keras2`` extra; a clear error without it): PNGs, GIFs and
BMPs losslessly (palettes expanded, 16-bit PNGs with ``dtype=tf.uint16`` or shifted to 8 bits), GIF frames as
a 4-D array (``expand_animations``); ``channels`` converts as TensorFlow's libraries do (a JPEG's 1 is its Y
channel, a PNG's its ITU-R 601 luma in libpng's fixed point, within 1 level; 3: RGB; 4: with alpha; 0/None:
the file's own). JPEGs decode with libjpeg's accurate integer IDCT: TensorFlow's
``dct_method="INTEGER_ACCURATE"`` exactly; its default fast IDCT differs by a few levels per pixel (so do the
image folder loaders', which decode as here). `read_file` returns the file's bytes as TensorFlow's scalar
string does (`.numpy()` is bytes); the decoders return `EagerTensor`s. ``tf.io.decode_csv`` is
data/csv_dataset.py's.
"""

from __future__ import annotations

import io

import numpy as np

from flexflow_keras.data.csv_dataset import decode_csv  # noqa: F401 - tf.io.decode_csv (IO_NAMES)
from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.tf_image import _dtype, _out, convert_image_dtype


def _bytes(contents, who: str) -> bytes:
    a = np.asarray(contents, dtype=object) if isinstance(contents, (bytes, str)) else np.asarray(contents)
    if a.ndim != 0:
        raise ArgumentError(f"tf.{who} expects one file's contents (a scalar string), received an array of shape "
                            f"{a.shape}; decode inside Dataset.map before batch(), one image at a time.")
    v = a.item()
    if isinstance(v, str):
        v = v.encode("latin-1")
    if not isinstance(v, bytes):
        raise ArgumentError(f"tf.{who} expects the bytes of an image file (tf.io.read_file's result), received "
                            f"{type(v).__name__}.")
    return v


def _path(filename, who: str) -> str:
    a = np.asarray(filename, dtype=object) if isinstance(filename, (bytes, str)) else np.asarray(filename)
    if a.ndim != 0:
        raise ArgumentError(f"tf.{who} reads one file: expected a scalar path, received an array of shape {a.shape}.")
    v = a.item()
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def read_file(filename, name=None):
    """The whole file's bytes (a 0-d string tensor, as TensorFlow's)."""
    path = _path(filename, "io.read_file")
    try:
        with open(path, "rb") as f:
            return _out(np.asarray(f.read(), dtype=object))
    except OSError as e:
        raise DataError(f"tf.io.read_file({path!r}): {e.strerror or e}. Check the path (a list_files pattern or "
                        f"the paths given to from_tensor_slices).") from None


def write_file(filename, contents, name=None) -> None:
    """Write `contents` (bytes) to `filename`."""
    with open(_path(filename, "io.write_file"), "wb") as f:
        f.write(_bytes(contents, "io.write_file"))


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise ArgumentError("tf.io.decode_* needs Pillow to decode image files: pip install pillow (or "
                            "pip install 'flexflow_keras[keras2]').") from None
    return Image


_MODES = {1: "L", 3: "RGB"}


def _frame(img, channels: int | None, dtype) -> np.ndarray:
    if img.format == "JPEG" and channels in (1, 3) and img.mode != _MODES[channels]:
        img.draft(_MODES[channels], img.size)  # libjpeg converts, as TensorFlow's decoder (1: the Y channel)
    if img.mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
    elif img.mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        img = img.convert("RGB")
    elif img.mode == "1":
        img = img.convert("L")
    a = np.asarray(img)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.dtype.itemsize == 2 or a.dtype.kind == "i":  # a 16-bit file
        a = a.astype(np.uint16)
        if dtype == np.uint8:
            a = (a >> 8).astype(np.uint8)  # TensorFlow's decode_png(dtype=uint8) of a 16-bit file
    elif dtype == np.uint16:
        a = a.astype(np.uint16) * np.uint16(257)
    if channels not in (None, 0):
        if channels not in (1, 2, 3, 4):
            raise ArgumentError(f"tf.io.decode_*: channels must be 0, 1, 2, 3 or 4, received {channels}.")
        a = _channels(a, int(channels))
    return np.ascontiguousarray(a)


def _channels(a: np.ndarray, want: int) -> np.ndarray:
    """Pixels (H, W, c) with `want` channels, as libpng / libjpeg convert them for TensorFlow."""
    have = a.shape[2]
    if have == want:
        return a
    top = np.iinfo(a.dtype).max
    color = a[:, :, :3] if have >= 3 else a[:, :, :1]
    alpha = a[:, :, have - 1:] if have in (2, 4) else np.full(a.shape[:2] + (1,), top, a.dtype)
    if want in (1, 2):
        if color.shape[2] == 3:  # ITU-R 601 luma in libpng's fixed point (15 bits, truncated)
            c = color.astype(np.int64)
            y = (9798 * c[:, :, 0] + 19235 * c[:, :, 1] + 3735 * c[:, :, 2]) >> 15
            color = y[:, :, None].astype(a.dtype)
        return color if want == 1 else np.concatenate([color, alpha], axis=2)
    rgb = color if color.shape[2] == 3 else np.repeat(color, 3, axis=2)
    return rgb if want == 3 else np.concatenate([rgb, alpha], axis=2)


def _decode(contents, who: str, channels, dtype="uint8", animations: bool = False):
    data = _bytes(contents, who)
    Image = _pillow()
    try:
        img = Image.open(io.BytesIO(data))
        frames = []
        n = getattr(img, "n_frames", 1)
        want = _dtype(dtype)
        store = np.uint16 if want == np.uint16 else np.uint8
        for k in range(n if animations else 1):
            img.seek(k)
            frames.append(_frame(img, channels, store))
    except (OSError, ValueError, SyntaxError) as e:
        raise DataError(f"tf.{who}: cannot decode the image ({type(e).__name__}: {e}). Check that the file is a "
                        f"valid image of the format this decoder reads.") from None
    out = np.stack(frames) if animations and (getattr(img, "format", "") == "GIF") else frames[0]
    if want.kind == "f":
        out = convert_image_dtype(out, want)
    return _out(out)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    """A JPEG's pixels, uint8 (H, W, channels)."""
    if ratio != 1:
        raise ArgumentError("tf.io.decode_jpeg(ratio=...) is not supported by flexflow_keras; decode at full size "
                            "and tf.image.resize.")
    return _decode(contents, "io.decode_jpeg", channels)


def decode_png(contents, channels=0, dtype="uint8", name=None):
    """A PNG's pixels, uint8 or uint16 (H, W, channels)."""
    return _decode(contents, "io.decode_png", channels, dtype)


def decode_bmp(contents, channels=0, name=None):
    return _decode(contents, "io.decode_bmp", channels)


def decode_gif(contents, name=None):
    """Every frame of a GIF, uint8 (frames, H, W, 3)."""
    out = np.asarray(_decode(contents, "io.decode_gif", 3, animations=True))
    return _out(out if out.ndim == 4 else out[None])


def decode_image(contents, channels=None, dtype="uint8", name=None, expand_animations=True):
    """Any of JPEG, PNG, GIF and BMP (a GIF's frames 4-D with `expand_animations`), in `dtype` (a float
    dtype scales to [0, 1] as `convert_image_dtype`)."""
    return _decode(contents, "io.decode_image", channels, dtype, animations=expand_animations)


IO_NAMES = ("read_file", "write_file", "decode_jpeg", "decode_png", "decode_bmp", "decode_gif", "decode_image",
            "decode_csv")
DECODE_NAMES = ("decode_jpeg", "decode_png", "decode_bmp", "decode_gif", "decode_image")  # tf.image's too
