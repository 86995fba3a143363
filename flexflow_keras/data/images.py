"""Image folders: a directory of class sub-folders of images (Keras' layout), read lazily.

`index_image_folder` lists the files and labels as Keras' `image_dataset_from_directory` does: class
names are the sorted non-hidden sub-folder names (or the `class_names` given), files are found by a
sorted recursive walk and kept when their extension is .bmp/.gif/.jpeg/.jpg/.png (any case).
`ImageFolderSource` holds the paths and integer labels in memory and decodes images only when a batch
is asked for (`read_x(rows, out)`): Pillow opens and converts (L, RGB or RGBA), and the image is resized
into a caller-provided float32 buffer: bilinear (the default) and nearest as tf.image.resize computes
them (`kernels.augment.resize_image_cpu`: half-pixel centres, no antialiasing, so the values equal
tf.keras' loader's), the other interpolations by Pillow. With ``resizer="pillow"`` (ImageDataGenerator's
iterators, which read files with `keras.utils.load_img` in Keras) every interpolation is Pillow's
`Image.resize`, under load_img's names (`PILLOW_INTERPOLATIONS`). Nothing is shared between calls, so loader
tasks call it from several threads (or decoder processes) at once; Pillow releases the GIL while it
decodes, and the resize kernel and NumPy while they write the buffer.

`is_image_folder(path)` and `open_image_folder(path, input_specs)` are what the `-d` detector calls.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np

from flexflow_keras.errors import DataError
from flexflow_keras.ops.augment import aspect_window
from kernels.augment import resize_image_cpu

log = logging.getLogger("flexflow_keras")

IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
COLOR_MODES = {"grayscale": 1, "rgb": 3, "rgba": 4}
_PIL_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5")
TF_RESIZE = ("bilinear", "nearest")  # resized by kernels.augment.resize_image_cpu as tf.image.resize does
PILLOW_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")  # keras.utils.load_img's


def _resample(name: str):
    from PIL import Image

    table = {"bilinear": Image.Resampling.BILINEAR, "nearest": Image.Resampling.NEAREST,
             "bicubic": Image.Resampling.BICUBIC, "area": Image.Resampling.BOX,
             "lanczos3": Image.Resampling.LANCZOS, "lanczos5": Image.Resampling.LANCZOS}
    if name not in table:
        raise ValueError(f"interpolation must be one of {INTERPOLATIONS} (the ones Pillow provides), received "
                         f"{name!r}.")
    return table[name]


def _pillow_resample(name: str):
    from PIL import Image

    if name not in PILLOW_INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {PILLOW_INTERPOLATIONS} (keras.utils.load_img's, Pillow's "
                         f"filters), received {name!r}.")
    return getattr(Image.Resampling, name.upper())


def keep_aspect_box(size, target_size) -> tuple[int, int, int, int]:
    """Pillow's (left, top, right, bottom) of the largest centred window of `target_size`'s (height, width)
    aspect ratio in an image of `size` (width, height): Keras' integer crop for keep_aspect_ratio."""
    width, height = size
    target_height, target_width = target_size
    crop_height = min(height, (width * target_height) // target_width)
    crop_width = min(width, (height * target_width) // target_height)
    top, left = (height - crop_height) // 2, (width - crop_width) // 2
    return (left, top, left + crop_width, top + crop_height)


def _class_dirs(directory: str) -> list[str]:
    return sorted(d for d in os.listdir(directory)
                  if not d.startswith(".") and os.path.isdir(os.path.join(directory, d)))


def _walk_images(folder: str, follow_links: bool, extensions=IMAGE_EXTENSIONS) -> list[str]:
    found = []
    for root, _dirs, files in sorted(os.walk(folder, followlinks=follow_links), key=lambda w: w[0]):
        found += [os.path.join(root, f) for f in sorted(files) if f.lower().endswith(extensions)]
    return found


def index_image_folder(directory, labels="inferred", class_names: Sequence[str] | None = None,
                       follow_links: bool = False, extensions=IMAGE_EXTENSIONS,
                       what: str = "image") -> tuple[list[str], np.ndarray | None, list[str] | None]:
    """(file paths, int32 labels or None, class names) of an image folder, in Keras' order (`extensions`
    and `what` make it a folder of other files: text_dataset_from_directory's .txt files).

    Args:
        directory: the folder; with labels="inferred" it holds one sub-folder per class.
        labels: "inferred" (from the sub-folders), None (no labels), or a list of integer labels, one per
            image file in the sorted walk of `directory`.
        class_names: with labels="inferred", the sub-folders to use, in this order (default: all, sorted).
        follow_links: descend into symlinked sub-folders.

    Raises:
        DataError: the folder is missing, or holds no image files (naming what it found).
        ValueError: class_names that are not sub-folders, or a labels list of the wrong length.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        state = "is a file" if os.path.exists(directory) else "does not exist"
        raise DataError(f"{what.capitalize()} folder {directory!r} {state}; expected a directory with one "
                        f"sub-folder of {what} files per class.")
    if labels == "inferred":
        subdirs = _class_dirs(directory)
        if class_names is not None:
            unknown = sorted(set(class_names) - set(subdirs))
            if unknown:
                raise ValueError(f"class_names {list(class_names)} name {unknown}, which are not sub-folders of "
                                 f"{directory!r}; its sub-folders are {subdirs}.")
            subdirs = list(class_names)
        paths: list[str] = []
        ids: list[int] = []
        for k, sub in enumerate(subdirs):
            files = _walk_images(os.path.join(directory, sub), follow_links, extensions)
            paths += files
            ids += [k] * len(files)
        names: list[str] | None = list(subdirs)
        y = np.asarray(ids, np.int32)
    else:
        if class_names is not None:
            raise ValueError("class_names can only be given with labels='inferred'.")
        paths = _walk_images(directory, follow_links, extensions)
        names, y = None, None
        if labels is not None:
            if len(labels) != len(paths):
                raise ValueError(f"labels has {len(labels)} entries but {directory!r} holds {len(paths)} {what} "
                                 f"files; give one label per file, in the sorted order of the paths.")
            y = np.asarray(labels, np.int32)
            names = [str(c) for c in sorted(set(int(v) for v in y))]
    if not paths:
        listing = sorted(os.listdir(directory))[:8]
        raise DataError(f"{what.capitalize()} folder {directory!r} holds no {what} files ({', '.join(extensions)}); "
                        f"found {listing or 'nothing'}{' in class sub-folders ' + str(names) if names else ''}. Put "
                        f"the {what} files of each class in a sub-folder named after the class.")
    return paths, y, names


class ImageFolderSource:
    """Images decoded lazily from a list of files, with their labels in memory.

    Args:
        paths: image files.
        labels: int32 class ids, one per file, or None.
        class_names: names of the classes (index = label).
        image_size: (height, width) every image is resized to.
        channels: 1 (grayscale), 3 (RGB) or 4 (RGBA).
        interpolation: one of `INTERPOLATIONS` (of `PILLOW_INTERPOLATIONS` with resizer="pillow").
        crop_to_aspect_ratio: crop the largest centred window of the target aspect ratio before resizing
            (keras.utils.load_img's keep_aspect_ratio with resizer="pillow").
        origin: how `describe` names the data.
        resizer: "tf" (bilinear and nearest as tf.image.resize, image_dataset_from_directory's loader) or
            "pillow" (Pillow's `Image.resize` for every interpolation, as keras.utils.load_img).
    """

    def __init__(self, paths: Sequence[str], labels, class_names, image_size=(256, 256), channels: int = 3,
                 interpolation: str = "bilinear", crop_to_aspect_ratio: bool = False, origin: str = "image folder",
                 resizer: str = "tf"):
        if channels not in _PIL_MODES:
            raise ValueError(f"ImageFolderSource channels must be 1, 3 or 4, received {channels}.")
        h, w = (int(image_size), int(image_size)) if np.isscalar(image_size) else (int(v) for v in image_size)
        if h <= 0 or w <= 0:
            raise ValueError(f"image_size must be two positive integers (height, width), received {image_size}.")
        self.paths = list(paths)
        self.labels = None if labels is None else np.asarray(labels, np.int32)
        self.class_names = None if class_names is None else list(class_names)
        self.image_size = (h, w)
        self.channels = channels
        if resizer not in ("tf", "pillow"):
            raise ValueError(f"ImageFolderSource resizer must be 'tf' or 'pillow', received {resizer!r}.")
        self.resizer = resizer
        self.interpolation = interpolation
        self._resample = _pillow_resample(interpolation) if resizer == "pillow" else _resample(interpolation)
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.origin = origin

    @property
    def num_samples(self) -> int:
        return len(self.paths)

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        return self.image_size + (self.channels,)

    def subset(self, rows, origin: str | None = None) -> ImageFolderSource:
        """A source over the files `rows` (indices or a slice)."""
        idx = np.arange(self.num_samples)[rows]
        return ImageFolderSource([self.paths[i] for i in idx], None if self.labels is None else self.labels[idx],
                                 self.class_names, self.image_size, self.channels, self.interpolation,
                                 self.crop_to_aspect_ratio, origin or self.origin, self.resizer)

    def describe(self) -> str:
        kinds = sorted({os.path.splitext(p)[1].lower().lstrip(".") for p in self.paths})
        classes = "no labels" if self.class_names is None else (
            f"{len(self.class_names)} classes {_short(self.class_names)}")
        return (f"{self.origin}: image folder ({'/'.join(kinds)} decoded with Pillow), {self.num_samples} samples, "
                f"{classes}; images resized to {self.image_size} with {self.interpolation}, "
                f"{self.channels} channel(s)")

    def decode(self, i: int, out: np.ndarray) -> None:
        """Decode file `i` into `out` (H, W, C), as float32 values 0..255."""
        from PIL import Image, UnidentifiedImageError

        path = self.paths[i]
        try:
            with Image.open(path) as img:
                mode = _PIL_MODES[self.channels]
                if img.mode != mode:  # a JPEG decodes as RGB already: no copy
                    img = img.convert(mode)
                else:
                    img.load()
                h, w = self.image_size
                box = self._crop_box(img.size) if self.crop_to_aspect_ratio else None
                resize = img.size != (w, h) or box is not None
                if resize and (self.resizer == "pillow" or self.interpolation not in TF_RESIZE):
                    img = img.resize((w, h), self._resample, box=box)
                    resize = False
                pixels = np.asarray(img)
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
            raise DataError(f"Cannot decode image {path!r} (sample {i}"
                            f"{self._class_of(i)}): {type(e).__name__}: {e}. Remove or replace the file.") from None
        if resize:  # bilinear and nearest as tf.image.resize computes them (Pillow's bilinear antialiases)
            window = None if box is None else (box[1], box[0], box[3] - box[1], box[2] - box[0])
            pixels = pixels if pixels.ndim == 3 else pixels[:, :, None]
            resize_image_cpu(pixels, out.reshape(h, w, -1), self.interpolation == "bilinear", window)
            return
        out[...] = pixels.reshape(out.shape)

    def _class_of(self, i: int) -> str:
        if self.labels is None or self.class_names is None:
            return ""
        return f", class {self.class_names[int(self.labels[i])]!r}"

    def _crop_box(self, size):
        # Pillow's (left, top, right, bottom) of Keras' smart_resize window (load_img's crop with resizer="pillow")
        if self.resizer == "pillow":
            return keep_aspect_box(size, self.image_size)
        w0, h0 = size
        top, left, crop_h, crop_w = aspect_window(h0, w0, self.image_size)
        return (left, top, left + crop_w, top + crop_h)

    def read_x(self, rows, out: np.ndarray) -> np.ndarray:
        """Decode the images `rows` into `out` (len(rows), H, W, C) float32; returns `out`."""
        rows = np.asarray(rows, np.int64)
        if out.shape != (len(rows),) + self.sample_shape:
            raise ValueError(f"read_x: buffer shape {out.shape} does not fit {len(rows)} images of "
                             f"{self.sample_shape}.")
        for k, r in enumerate(rows):
            self.decode(int(r), out[k])
        return out

    def load(self, rows=None) -> np.ndarray:
        """The images `rows` (default all) as one float32 array."""
        rows = np.arange(self.num_samples) if rows is None else np.asarray(rows, np.int64)
        return self.read_x(rows, np.empty((len(rows),) + self.sample_shape, np.float32))


def _short(names: Sequence[str], k: int = 10) -> str:
    shown = ", ".join(names[:k])
    return f"[{shown}{', ...' if len(names) > k else ''}]"


def is_image_folder(path, nested: bool = True) -> bool:
    """True when `path` is a directory with class sub-folders holding at least one image file.

    Args:
        path: the directory.
        nested: also look in the class folders' own sub-folders (Keras' layout allows them); the `-d`
            detector passes False, so that `imagenet/` holding `train/` and `val/` image folders is several
            datasets rather than one of classes "train" and "val".
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        return False
    try:
        for sub in _class_dirs(path):
            for _root, dirs, files in os.walk(os.path.join(path, sub)):
                if any(f.lower().endswith(IMAGE_EXTENSIONS) for f in files):
                    return True
                if not nested:
                    dirs.clear()
    except OSError:
        return False
    return False


TRAIN_NAMES = ("train", "training")
HELD_OUT_NAMES = ("val", "validation", "valid", "test", "eval")


def held_out_folder(path) -> str | None:
    """The held-out image folder beside a training one: for ``.../train`` (or ``training``) the first
    sibling among val, validation, valid, test, eval that is an image folder; None otherwise (ImageNet's
    and most published folder datasets' layout: ``train/`` and ``val/`` side by side)."""
    path = os.path.abspath(os.fspath(path))
    if os.path.basename(path).lower() not in TRAIN_NAMES:
        return None
    parent = os.path.dirname(path)
    try:
        siblings = {e.name.lower(): e.path for e in os.scandir(parent) if e.is_dir()}
    except OSError:
        return None
    for name in HELD_OUT_NAMES:
        if name in siblings and is_image_folder(siblings[name]):
            return siblings[name]
    return None


def _input_geometry(path: str, input_specs) -> tuple[tuple[int, int], int]:
    specs = list(input_specs)
    if len(specs) != 1:
        raise DataError(f"-d {path} is an image folder, which feeds one input, but the model has {len(specs)} "
                        f"inputs. Pass the arrays to fit() instead.")
    shape = tuple(getattr(specs[0], "shape", specs[0]))
    sample = shape[1:] if shape and shape[0] is None else shape
    if len(sample) == 2:
        sample = sample + (1,)
    if len(sample) != 3 or any(d is None for d in sample) or sample[2] not in (1, 3, 4):
        raise DataError(f"-d {path} is an image folder, but the model's input has samples of shape "
                        f"{tuple(shape[1:])}; an image folder needs an input of shape (height, width, channels) "
                        f"with 1 (grayscale), 3 (RGB) or 4 (RGBA) channels, e.g. keras.Input((28, 28, 1)).")
    return (int(sample[0]), int(sample[1])), int(sample[2])


def open_image_folder(path, input_specs) -> ImageFolderSource:
    """The `-d` image folder as a lazy source shaped for the model's input.

    Images are resized to the input's (height, width) and converted to its channels (1: grayscale,
    3: RGB, 4: RGBA); an input of shape (H, W) reads grayscale images. Logs the format, path, sample
    count and classes.

    Args:
        path: the folder of class sub-folders.
        input_specs: the model's input TensorSpecs (or shapes); exactly one.

    Raises:
        DataError: no images, several model inputs, or an input that is not an image shape.
    """
    path = os.fspath(path)
    image_size, channels = _input_geometry(path, input_specs)
    paths, labels, names = index_image_folder(path)
    source = ImageFolderSource(paths, labels, names, image_size, channels, origin=f"-d {path}")
    counts = np.bincount(labels, minlength=len(names))
    empty = [n for n, c in zip(names, counts, strict=True) if c == 0]
    if empty:
        log.warning("image folder %s: class folder(s) %s hold no images; their labels never occur", path,
                    _short(empty))
    log.info("%s", source.describe())
    return source
