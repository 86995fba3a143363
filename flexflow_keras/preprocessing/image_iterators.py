"""The batch iterators of `ImageDataGenerator`: `Iterator` (a `keras.utils.PyDataset`, as Keras 3's legacy
one: `__len__` and `__getitem__`, so `fit` passes over it again each epoch and calls `on_epoch_end`, which
reshuffles; and an endless `__next__` for ``next(it)`` loops), `NumpyArrayIterator` (`flow`) and
`DirectoryIterator` (`flow_from_directory`, on top of data/images.py).

Randomness: each batch draws its sample order (at an epoch start) and its transforms from a
`numpy.random.RandomState` seeded with ``seed + batches seen so far`` when a seed is given (Keras 2
reseeded the global generator the same way), otherwise from NumPy's global generator, so
``np.random.seed`` in a script makes a run repeatable too.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from flexflow_keras.preprocessing import image_utils
from flexflow_keras.utils.py_dataset import PyDataset

_CLASS_MODES = ("categorical", "binary", "sparse", "input", None)


class Iterator(PyDataset):
    """Batches of `n` samples (Keras' `Iterator`): a PyDataset indexable by batch, and endless with `next()`.

    Args:
        n: number of samples.
        batch_size: samples per batch.
        shuffle: shuffle the order at each epoch start.
        seed: seed for the order and the transforms (None: NumPy's global generator).
        **kwargs: `PyDataset`'s (workers, use_multiprocessing, max_queue_size).
    """

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed, **kwargs):
        super().__init__(**kwargs)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"{type(self).__name__} expects a positive integer batch_size, received "
                             f"batch_size={batch_size!r}.")
        self.n = int(n)
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.batch_index = 0
        self.total_batches_seen = 0
        self.index_array = None
        self.lock = threading.Lock()
        self._positions = self._flow_index()

    def _rng(self) -> np.random.RandomState:
        if self.seed is None:
            return np.random.mtrand._rand  # the global generator np.random.seed() sets
        return np.random.RandomState((int(self.seed) + self.total_batches_seen) % (2**32))

    def _set_index_array(self, rng) -> None:
        self.index_array = rng.permutation(self.n) if self.shuffle else np.arange(self.n)

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __getitem__(self, idx: int):
        if idx < 0 or idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}.")
        rng = self._rng()
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array(rng)
        rows = self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)]
        return self._get_batches_of_transformed_samples(rows, rng)

    def on_epoch_end(self) -> None:
        """A new sample order for the next pass (called between epochs by Sequence users)."""
        self._set_index_array(self._rng())

    def reset(self) -> None:
        """Start the endless iteration from the first batch again."""
        self.batch_index = 0

    def _flow_index(self):
        self.reset()
        while True:
            rng = self._rng()
            if self.batch_index == 0:
                self._set_index_array(rng)
            start = (self.batch_index * self.batch_size) % self.n if self.n else 0
            if self.n > start + self.batch_size:
                self.batch_index += 1
            else:
                self.batch_index = 0
            self.total_batches_seen += 1
            yield self.index_array[start:start + self.batch_size], rng

    def __iter__(self):
        return self

    def __next__(self):
        with self.lock:
            rows, rng = next(self._positions)
        return self._get_batches_of_transformed_samples(rows, rng)

    next = __next__

    def _get_batches_of_transformed_samples(self, rows, rng):
        raise NotImplementedError(f"{type(self).__name__} must define _get_batches_of_transformed_samples")

    def _save(self, batch_x, rows, rng) -> None:
        if not self.save_to_dir:
            return
        for i, j in enumerate(rows):
            name = f"{self.save_prefix}_{int(j)}_{rng.randint(10**7)}.{self.save_format}"
            image_utils.save_img(os.path.join(self.save_to_dir, name), batch_x[i], self.data_format, scale=True)


class NumpyArrayIterator(Iterator):
    """Augmented batches of an in-memory image array (what `ImageDataGenerator.flow` returns).

    Args:
        x: images, (samples, height, width, channels) or channels first.
        y: labels (any shape with `len(x)` rows) or None.
        image_data_generator: the `ImageDataGenerator` whose transforms and normalization apply.
        batch_size, shuffle, seed: as `Iterator`.
        sample_weight: per-sample weights yielded as a third element, or None.
        data_format: "channels_last" or "channels_first".
        save_to_dir, save_prefix, save_format: also write each augmented image to this folder.
        subset: "training" or "validation" with the generator's `validation_split`.
        dtype: dtype of the batches.
    """

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False, sample_weight=None, seed=None,
                 data_format="channels_last", save_to_dir=None, save_prefix="", save_format="png", subset=None,
                 dtype="float32"):
        if isinstance(x, (tuple, list)):
            raise ValueError("ImageDataGenerator.flow: x must be one image array; a tuple (images, other "
                             "inputs) is not supported by flexflow_keras.")
        x = np.asarray(x, dtype=dtype)
        if x.ndim != 4:
            raise ValueError(f"ImageDataGenerator.flow expects x of rank 4 (samples, height, width, channels), "
                             f"received shape {x.shape}.")
        if y is not None and len(y) != len(x):
            raise ValueError(f"ImageDataGenerator.flow: x and y must have the same length, received "
                             f"len(x)={len(x)}, len(y)={len(y)}.")
        if sample_weight is not None and len(sample_weight) != len(x):
            raise ValueError(f"ImageDataGenerator.flow: x and sample_weight must have the same length, received "
                             f"len(x)={len(x)}, len(sample_weight)={len(sample_weight)}.")
        y = None if y is None else np.asarray(y)
        sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        if subset is not None:
            split = image_data_generator._validation_split
            if subset not in ("training", "validation"):
                raise ValueError(f"ImageDataGenerator.flow expects subset 'training' or 'validation', received "
                                 f"subset={subset!r}.")
            if not split:
                raise ValueError("ImageDataGenerator.flow(subset=...) needs ImageDataGenerator(validation_split=...).")
            cut = int(len(x) * split)
            part = slice(None, cut) if subset == "validation" else slice(cut, None)
            x = x[part]
            y = None if y is None else y[part]
            sample_weight = None if sample_weight is None else sample_weight[part]
        self.x, self.y, self.sample_weight = x, y, sample_weight
        self.image_data_generator = image_data_generator
        self.data_format = image_utils.check_data_format("ImageDataGenerator.flow", data_format)
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        self.dtype = dtype
        super().__init__(len(x), batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, rows, rng):
        gen = self.image_data_generator
        batch_x = np.empty((len(rows),) + self.x.shape[1:], dtype=self.dtype)
        for i, j in enumerate(rows):
            params = gen.get_random_transform(self.x[j].shape, rng=rng)
            batch_x[i] = gen.standardize(gen.apply_transform(self.x[j].copy(), params))
        self._save(batch_x, rows, rng)
        out = (batch_x,)
        if self.y is not None:
            out += (self.y[rows],)
        if self.sample_weight is not None:
            out += (self.sample_weight[rows],)
        return out[0] if len(out) == 1 else out


class DirectoryIterator(Iterator):
    """Augmented batches of an image folder (one sub-folder per class), decoded lazily with Pillow.

    Args:
        directory: the folder.
        image_data_generator: the `ImageDataGenerator`.
        target_size: (height, width) images are resized to.
        color_mode: "grayscale", "rgb" or "rgba".
        classes: sub-folder names to use, in order (default: all, sorted).
        class_mode: "categorical" (one-hot), "binary", "sparse" (class ids), "input" (the images), or None.
        batch_size, shuffle, seed: as `Iterator`.
        data_format, save_to_dir, save_prefix, save_format: as `NumpyArrayIterator`.
        follow_links: descend into symlinked sub-folders.
        subset: "training" or "validation": each class's files are cut at the generator's validation_split.
        interpolation: Pillow's filter when resizing, as keras.utils.load_img: "nearest", "bilinear", "bicubic",
            "lanczos", "box" or "hamming".
        keep_aspect_ratio: resize the largest centred window of the target's aspect ratio (load_img's).
        dtype: dtype of the batches.
    """

    def __init__(self, directory, image_data_generator, target_size=(256, 256), color_mode="rgb", classes=None,
                 class_mode="categorical", batch_size=32, shuffle=True, seed=None, data_format="channels_last",
                 save_to_dir=None, save_prefix="", save_format="png", follow_links=False, subset=None,
                 interpolation="nearest", keep_aspect_ratio=False, dtype="float32"):
        from flexflow_keras.data.images import COLOR_MODES, ImageFolderSource, index_image_folder

        if class_mode not in _CLASS_MODES:
            raise ValueError(f"flow_from_directory expects class_mode in {_CLASS_MODES}, received "
                             f"class_mode={class_mode!r}.")
        if color_mode not in COLOR_MODES:
            raise ValueError(f"flow_from_directory expects color_mode in {sorted(COLOR_MODES)}, received "
                             f"color_mode={color_mode!r}.")
        paths, labels, names = index_image_folder(directory, "inferred", classes, follow_links)
        if subset is not None:
            paths, labels = self._subset(paths, labels, subset, image_data_generator._validation_split)
        self.data_format = image_utils.check_data_format("flow_from_directory", data_format)
        self.source = ImageFolderSource(paths, labels, names, tuple(target_size), COLOR_MODES[color_mode],
                                        interpolation, bool(keep_aspect_ratio), origin=str(directory),
                                        resizer="pillow")  # load_img's
        self.filenames = [os.path.relpath(p, directory) for p in paths]
        self.filepaths = list(paths)
        self.classes = labels
        self.class_indices = {n: i for i, n in enumerate(names)}
        self.num_classes = len(names)
        self.class_mode = class_mode
        self.image_data_generator = image_data_generator
        self.image_shape = self.source.sample_shape
        if self.data_format == "channels_first":
            self.image_shape = (self.image_shape[2],) + self.image_shape[:2]
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        self.dtype = dtype
        self.keep_aspect_ratio = bool(keep_aspect_ratio)
        self.samples = len(paths)
        super().__init__(self.samples, batch_size, shuffle, seed)

    @staticmethod
    def _subset(paths, labels, subset, split):
        if subset not in ("training", "validation"):
            raise ValueError(f"flow_from_directory expects subset 'training' or 'validation', received {subset!r}.")
        if not split:
            raise ValueError("flow_from_directory(subset=...) needs ImageDataGenerator(validation_split=...).")
        keep = []
        for c in np.unique(labels):
            idx = np.flatnonzero(labels == c)
            cut = int(split * len(idx))
            keep.extend(idx[:cut] if subset == "validation" else idx[cut:])
        keep = np.sort(np.asarray(keep, np.int64))
        return [paths[i] for i in keep], labels[keep]

    def _transformed_images(self, rows, rng) -> np.ndarray:
        """The images `rows`, decoded, randomly transformed and standardized (and saved when asked)."""
        gen = self.image_data_generator
        raw = self.source.load(rows)
        batch_x = np.empty((len(rows),) + self.image_shape, dtype=self.dtype)
        for i in range(len(rows)):
            x = raw[i].transpose(2, 0, 1) if self.data_format == "channels_first" else raw[i]
            params = gen.get_random_transform(x.shape, rng=rng)
            batch_x[i] = gen.standardize(gen.apply_transform(x.astype(self.dtype), params))
        self._save(batch_x, rows, rng)
        return batch_x

    def _get_batches_of_transformed_samples(self, rows, rng):
        batch_x = self._transformed_images(rows, rng)
        if self.class_mode is None:
            return batch_x
        if self.class_mode == "input":
            return batch_x, batch_x.copy()
        y = self.classes[rows]
        if self.class_mode == "categorical":
            return batch_x, np.eye(self.num_classes, dtype=self.dtype)[y]
        return batch_x, y.astype(self.dtype)


__all__ = ["DirectoryIterator", "Iterator", "NumpyArrayIterator"]
