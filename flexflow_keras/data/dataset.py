"""`keras.utils.image_dataset_from_directory` and the dataset object it returns.

`ImageDataset` is the part of `tf.data.Dataset` that training scripts use on such a dataset: iteration
over (images, labels) batches (float32 images, labels by `label_mode`; elements answer `.numpy()`),
`class_names`, `file_paths`, `len()`/`cardinality()`, `take`, `skip`, `map`, `shuffle`, `repeat`,
`as_numpy_iterator`, and `prefetch`/`cache`, which return the dataset unchanged: `fit` decodes ahead
through the loader pipeline (data/pipeline.py) whatever the script asks. Files are indexed as Keras
does (sorted walk; with `shuffle` the list is shuffled once with the seed, so a `validation_split`
picks the same files as Keras for the same seed); the sample order of each pass is `epoch_order(seed,
pass)`. The dataset's elements are its batches (single images with batch_size=None), so `take`, `skip`
and a later `shuffle(n)` act on them in the order called, as tf.data: `shuffle` sends the same batches in
TensorFlow's shuffle-buffer order (data/slices.py), a new one each pass unless
``reshuffle_each_iteration=False``. Decoding is Pillow's (data/images.py): bilinear resizing antialiases where TensorFlow's
does not, so downscaled pixels differ slightly from tf.keras; images already at `image_size` match.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from flexflow_keras.data.images import COLOR_MODES, INTERPOLATIONS, ImageFolderSource, index_image_folder
from flexflow_keras.data.order import epoch_order

log = logging.getLogger("flexflow_keras")


class Tensor(np.ndarray):
    """A NumPy array that also answers `.numpy()` (scripts written for tf.data call it on elements)."""

    def numpy(self) -> np.ndarray:
        out = np.asarray(self)
        return out.item() if out.ndim == 0 and out.dtype.kind in "OS" else out  # one string: its bytes

    def __getitem__(self, key):
        out = super().__getitem__(key)  # a scalar (labels[i]) stays a 0-d Tensor, so labels[i].numpy() works
        return out if isinstance(out, np.ndarray) else np.asarray(out).view(Tensor)

    def set_shape(self, shape) -> None:
        """TensorFlow's static-shape hint (``image.set_shape([None, None, 3])`` in a Dataset.map): a check."""
        from flexflow_keras.ops.eager_tensor import check_shape

        check_shape(self.shape, shape)


class _StringDType:
    """The dtype of a text tensor as scripts test it: equal to "string" (``tf.string`` under the runner
    is "string") and to NumPy's object dtype; anything else NumPy's object dtype answers."""

    dtype = np.dtype(object)  # np.dtype(this) is NumPy's object dtype
    name = "string"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return other in ("string", "str", "object", "O")
        try:
            return np.dtype(other) == np.dtype(object)
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash("string")

    def __repr__(self) -> str:
        return "string"

    def __getattr__(self, name: str):
        return getattr(np.dtype(object), name)


STRING_DTYPE = _StringDType()


class StringTensor(Tensor):
    """A Tensor of text (bytes): its `dtype` equals "string", as a tf.string tensor's does (keras.io's
    ``if features[name].dtype == "string"`` in a Dataset.map)."""

    @property
    def dtype(self):
        return STRING_DTYPE

    def __getitem__(self, key):
        out = np.ndarray.__getitem__(self, key)
        return out if isinstance(out, np.ndarray) else np.asarray(out, dtype=object).view(StringTensor)

    def __eq__(self, other):
        # as TensorFlow compares strings: str and bytes alike (``parts[-2] == class_names``, the TensorFlow
        # image-loading tutorial's label, compares a path part with a NumPy array of str)
        from flexflow_keras.ops.eager_tensor import EagerTensor

        return np.equal(self.view(np.ndarray), _as_bytes(other)).view(EagerTensor)

    def __ne__(self, other):
        from flexflow_keras.ops.eager_tensor import EagerTensor

        return np.not_equal(self.view(np.ndarray), _as_bytes(other)).view(EagerTensor)

    def __str__(self) -> str:  # the bytes, as TensorFlow's ``.numpy()`` prints them: [b'male' b'female']
        return str(self.view(np.ndarray))

    def __repr__(self) -> str:
        return f"StringTensor({np.array2string(self.view(np.ndarray), separator=', ')}, dtype=string)"

    def __add__(self, other):
        return _join(self, other)

    def __radd__(self, other):  # ``wavs_path + file_name``: a str before a string tensor, as tf.strings' add
        return _join(other, self)

    __hash__ = None


def _join(a, b) -> StringTensor:
    """`a + b` of string tensors, str or bytes: element-wise concatenation (TensorFlow's string add)."""
    out = np.add(np.asarray(_as_bytes(a), dtype=object), np.asarray(_as_bytes(b), dtype=object))
    return np.asarray(out, dtype=object).view(StringTensor)


def _as_bytes(x):
    """`x` with its text as bytes (what a StringTensor holds): for comparisons and `as_tensor`."""
    if isinstance(x, str):
        return x.encode("utf-8")
    a = np.asarray(x)
    if a.dtype.kind == "S":
        return a.astype(object)
    if a.dtype.kind in "US" or (a.dtype.kind == "O" and any(isinstance(v, str) for v in a.reshape(-1).tolist())):
        out = np.empty(a.shape, dtype=object)
        out.reshape(-1)[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in a.reshape(-1).tolist()]
        return out
    return a


def as_tensor(a):
    """A value as tf.data's stand-in and eager host layers hand it out: text (str, bytes, or arrays of them) as
    a `StringTensor` of bytes, numbers as an `EagerTensor`."""
    from flexflow_keras.ops.eager_tensor import EagerTensor

    if isinstance(a, (bytes, str)):  # one string: a 0-d object array of bytes
        a = np.asarray(a.encode("utf-8") if isinstance(a, str) else a, dtype=object)
    a = np.asarray(a)
    if a.dtype.kind in "US" or (a.dtype.kind == "O" and any(isinstance(v, str) for v in a.reshape(-1)[:1].tolist())):
        a = _as_bytes(a)
    return a.view(StringTensor) if a.dtype.kind == "O" else a.view(EagerTensor)


def _tensor(a) -> Tensor:
    return np.asarray(a).view(Tensor)


def _apply_maps(maps, x, y):
    """(x, y) after a dataset's `map` functions, which see Tensors (arrays with .numpy()): fn(x, y) while there
    are labels, fn(x) without; a function of unlabelled images returning a pair makes them (inputs, targets)."""
    for fn in maps:
        out = fn(_tensor(x), _tensor(y)) if y is not None else fn(_tensor(x))
        pair = isinstance(out, tuple) and len(out) == 2  # fn(x, y) -> x drops the labels, as in tf.data
        x, y = (out[0], _array(out[1])) if pair else (out, None)
    return x, y


def _array(a) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else np.asarray(a)


def _as_tf_data(ds: ImageDataset):
    """A tf.data-like dataset (a `DerivedDataset`) of `ds`'s elements: for a `map` that adds or drops the
    labels (keras.io's super-resolution maps unlabelled images to (low, high) resolution pairs), and for the
    tf.data methods an `ImageDataset` does not implement itself (``test_data.unbatch()``: ZTM's TensorFlow
    course collects the labels so). Its elements are `ds`'s batches (its images with batch_size=None), after
    `ds`'s maps, in the order `ds` itself would give them; each pass advances `ds`'s pass count as iterating
    `ds` does, so a shuffled dataset gives a new order each time either is iterated. Each pass is decoded and
    held whole."""
    from flexflow_keras.data.derived import DerivedDataset

    def make(_k):
        epoch = ds._passes
        ds._passes += 1
        out = []
        for rows in ds.batch_rows(epoch):
            x, y = ds._batch(rows)
            if not ds.batch_size:
                x, y = np.asarray(x)[0], (None if y is None else np.asarray(y)[0])
            out.append(_tensor(x) if y is None else (_tensor(x), _tensor(y)))
        return out
    made = DerivedDataset(make, f"{ds!r}", of_batches=bool(ds.batch_size))
    return made if ds._repeat == 1 else made.repeat(-1 if ds._repeat is None else ds._repeat)


def encode_labels(ids: np.ndarray, label_mode: str | None, num_classes: int) -> np.ndarray | None:
    """Class ids as Keras' label_mode gives them: "int" int32 (N,), "categorical" one-hot float32
    (N, classes), "binary" float32 (N, 1), None: no labels."""
    if label_mode is None or ids is None:
        return None
    if label_mode == "int":
        return np.asarray(ids, np.int32)
    if label_mode == "categorical":
        return np.eye(num_classes, dtype=np.float32)[ids]
    if label_mode == "binary":
        return np.asarray(ids, np.float32).reshape(-1, 1)
    raise ValueError(f"label_mode must be 'int', 'categorical', 'binary' or None, received {label_mode!r}.")


class ImageDataset:
    """Batches of images decoded from files (see the module docstring).

    Args:
        source: an `ImageFolderSource`.
        batch_size: images per batch (None: single images).
        label_mode: "int", "categorical", "binary" or None.
        shuffle: reshuffle the samples on every pass (image_dataset_from_directory's `shuffle`).
        seed: the shuffling seed (None: drawn from NumPy's global generator).
    """

    def __init__(self, source: ImageFolderSource, batch_size: int | None = 32, label_mode: str | None = "int",
                 shuffle: bool = True, seed: int | None = None):
        self.source = source
        self.batch_size = batch_size
        self.label_mode = label_mode
        self.shuffle_samples = bool(shuffle)  # not `shuffle`: that is tf.data's method
        self.seed = int(np.random.randint(0, 2**31 - 1)) if seed is None else int(seed)
        n_classes = len(source.class_names or [])
        self.labels = encode_labels(source.labels, label_mode, n_classes)
        self._maps: list = []
        self._stages: list[tuple] = []  # ("skip", n), ("take", n), ("shuffle", seed, reshuffle, size), in order
        self._repeat = 1
        self._passes = 0

    # --- what scripts read ---------------------------------------------------------------------------------
    @property
    def class_names(self):
        return self.source.class_names

    @property
    def file_paths(self) -> list[str]:
        return list(self.source.paths)

    @property
    def num_samples(self) -> int:
        return self.source.num_samples

    def _batches_per_pass(self) -> int:
        count = math.ceil(self.num_samples / (self.batch_size or 1))
        for stage in self._stages:
            if stage[0] == "skip":
                count = max(0, count - stage[1])
            elif stage[0] == "take":
                count = min(count, stage[1])
        return count

    def __len__(self) -> int:
        if self._repeat is None:
            raise TypeError("The dataset repeats forever (repeat()); it has no length. Pass steps_per_epoch.")
        return self._batches_per_pass() * self._repeat

    def cardinality(self) -> np.int64:
        """Number of batches (-1 when it repeats forever), as tf.data's cardinality()."""
        from flexflow_keras.ops.eager_tensor import eager

        return eager(np.int64(-1 if self._repeat is None else len(self)))

    def describe(self) -> str:
        return (f"{self.source.describe()}; batches of {self.batch_size}, labels {self.label_mode}, "
                f"shuffle={self.shuffle_samples}")

    # --- order ----------------------------------------------------------------------------------------------
    def batch_rows(self, epoch: int) -> list[np.ndarray]:
        """The sample rows of each batch of pass `epoch` (after skip/take)."""
        from flexflow_keras.data.slices import _buffer_order

        order = epoch_order(self.num_samples, self.seed, epoch, self.shuffle_samples)
        size = self.batch_size or 1
        rows = [order[i:i + size] for i in range(0, len(order), size)]
        for stage in self._stages:
            if stage[0] == "skip":
                rows = rows[stage[1]:]
            elif stage[0] == "take":
                rows = rows[:stage[1]]
            else:  # shuffle: TensorFlow's buffer over the batches, reshuffled each pass unless asked not to
                _, seed, reshuffle, buffer = stage
                rng = np.random.default_rng([seed, epoch] if reshuffle else [seed])
                rows = [rows[i] for i in _buffer_order(rng, len(rows), buffer or len(rows))]
        return rows

    def transform(self):
        """The composed `map` functions as ``fn(xs, ys) -> (xs, ys)`` on lists of arrays, or None."""
        if not self._maps:
            return None
        maps, labelled = list(self._maps), self.labels is not None

        def apply(xs, ys):
            x, y = xs[0], (ys[0] if ys else None)
            x, y = _apply_maps(maps, x, y if labelled else None)
            x = np.ascontiguousarray(np.asarray(x), np.float32)
            return [x], ([] if y is None else [np.ascontiguousarray(np.asarray(y))])
        return apply

    def _batch(self, rows):
        x = self.source.load(rows)
        y = None if self.labels is None else self.labels[rows]
        return _apply_maps(self._maps, x, y)

    def __iter__(self):
        passes = 0
        while self._repeat is None or passes < self._repeat:
            epoch = self._passes
            self._passes += 1
            passes += 1
            for rows in self.batch_rows(epoch):
                x, y = self._batch(rows)
                if self.batch_size is None:
                    x = np.asarray(x)[0]
                    y = None if y is None else np.asarray(y)[0]
                yield _tensor(x) if y is None else (_tensor(x), _tensor(y))

    def as_numpy_iterator(self):
        from flexflow_keras.data.numpy_iterator import NumpyIterator

        return NumpyIterator(tuple(np.asarray(a) for a in item) if isinstance(item, tuple) else np.asarray(item)
                             for item in self)

    def to_arrays(self):
        """(x, y or None): every batch of one pass, concatenated."""
        xs, ys = [], []
        for item in self:
            x, y = item if isinstance(item, tuple) else (item, None)
            xs.append(np.asarray(x))
            if y is not None:
                ys.append(np.asarray(y))
        if not xs:
            raise ValueError("The dataset is empty (take(0), or skip() past its end).")
        stack = np.stack if self.batch_size is None else np.concatenate
        return stack(xs), (stack(ys) if ys else None)

    # --- tf.data methods -------------------------------------------------------------------------------------
    def _copy(self) -> ImageDataset:
        new = object.__new__(ImageDataset)
        new.__dict__.update(self.__dict__)
        new._maps = list(self._maps)
        new._stages = list(self._stages)
        new._passes = 0
        return new

    def take(self, count: int) -> ImageDataset:
        """The first `count` batches (all for count=-1)."""
        new = self._copy()
        if int(count) >= 0:
            new._stages.append(("take", int(count)))
        return new

    def skip(self, count: int) -> ImageDataset:
        """All but the first `count` batches (none for count=-1)."""
        new = self._copy()
        new._stages.append(("skip", self._batches_per_pass() if int(count) < 0 else int(count)))
        return new

    def map(self, fn, num_parallel_calls=None, deterministic=None, name=None) -> ImageDataset:
        """Apply ``fn(images, labels) -> (images, labels)`` (``fn(images)`` without labels) to each batch."""
        new = self._copy()
        new._maps.append(fn)
        if self.num_samples and (self.labels is None) != (new._batch(np.arange(1))[1] is None):
            # images in, (inputs, targets) out, or (images, labels) in, images out: no longer an image folder's
            # labelled batches, so a tf.data-like dataset of the mapped batches
            return _as_tf_data(new)
        return new

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None) -> ImageDataset:
        """The same elements (batches) in TensorFlow's shuffle-buffer order: each one out drawn from the next
        `buffer_size` waiting (tf.data.UNKNOWN_CARDINALITY, -2: all of them); a new order each pass unless
        `reshuffle_each_iteration` is False. The orders are not TensorFlow's (other generators)."""
        from flexflow_keras.data.slices import _UNKNOWN_CARDINALITY
        from flexflow_keras.errors import DataError
        from flexflow_keras.utils import rng

        if int(buffer_size) < 1 and int(buffer_size) != _UNKNOWN_CARDINALITY:
            raise DataError(f"Dataset.shuffle(buffer_size) must be at least 1 (or tf.data.UNKNOWN_CARDINALITY), "
                            f"received {buffer_size!r}; the number of batches gives a uniform shuffle.")
        new = self._copy()
        size = None if int(buffer_size) == _UNKNOWN_CARDINALITY else int(buffer_size)
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        new._stages.append(("shuffle", rng.make_seed() if seed is None else int(seed), reshuffle, size))
        return new

    def repeat(self, count=None, name=None) -> ImageDataset:
        """Pass over the data `count` times when iterated (forever for None); fit counts epochs itself."""
        new = self._copy()
        new._repeat = None if count is None or int(count) < 0 else int(count)
        return new

    def prefetch(self, buffer_size=None, name=None) -> ImageDataset:
        """Returns the dataset: fit loads batches ahead in its loader pipeline (-ll:cpu, -ll:zsize)."""
        return self

    def cache(self, filename: str = "", name=None) -> ImageDataset:
        """Returns the dataset: images are decoded again on each pass (they are not held in memory)."""
        return self

    def apply(self, transformation_func):
        """`transformation_func(self)`, as tf.data's `apply` (e.g. ``tf.data.experimental.snapshot(path)``)."""
        return transformation_func(self)

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None, name=None) -> ImageDataset:
        """`cache()`: the same images (TensorFlow also writes them under `path` for other processes)."""
        return self.cache()

    def __getattr__(self, name: str):
        # tf.data's other methods and properties (unbatch, batch, filter, enumerate, concatenate,
        # element_spec, the static list_files / from_tensor_slices / zip, ...): those of a tf.data-like view
        # of this dataset's batches (`_as_tf_data`)
        from flexflow_keras.data.slices import SliceDataset

        if name.startswith("_") or not hasattr(SliceDataset, name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(_as_tf_data(self), name)

    def __repr__(self) -> str:
        return (f"ImageDataset({self.num_samples} images of {self.source.sample_shape}, {len(self.class_names or [])}"
                f" classes, batch_size={self.batch_size}, label_mode={self.label_mode!r})")


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, color_mode="rgb",
                                 batch_size=32, image_size=(256, 256), shuffle=True, seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, data_format=None,
                                 format="tf", verbose=True):
    """A dataset of image batches from a directory of class sub-folders, with Keras 3's arguments.

    Args:
        directory: the folder; with labels="inferred" one sub-folder per class.
        labels: "inferred", None, or a list of integer labels in the sorted order of the files.
        label_mode: "int" (int32 ids), "categorical" (one-hot float32), "binary" (float32 (N, 1)) or None.
        class_names: with labels="inferred", the sub-folders to use, in this order.
        color_mode: "grayscale", "rgb" or "rgba" (1, 3, 4 channels).
        batch_size: images per batch (None: single images).
        image_size: (height, width) every image is resized to (an int for square images).
        shuffle: shuffle the files (and reshuffle every pass); False keeps the sorted order.
        seed: shuffling seed; required with validation_split and shuffle.
        validation_split: fraction of the files held out for validation.
        subset: "training", "validation" or "both" (a tuple of two datasets); with validation_split.
        interpolation: "bilinear", "nearest", "bicubic", "area", "lanczos3" or "lanczos5".
        follow_links: descend into symlinked sub-folders.
        crop_to_aspect_ratio: crop to the target aspect ratio before resizing.
        pad_to_aspect_ratio, data_format, format: accepted for compatibility; only False, None/
            "channels_last" and "tf" are supported.
        verbose: log how many files and classes were found.

    Returns:
        An `ImageDataset` (a tuple of two for subset="both").

    Raises:
        ValueError: for arguments Keras rejects; DataError for a folder without images.
    """
    from flexflow_keras.execution.context import check_before_work

    check_before_work()  # a mistyped flag stops the script before it indexes the folder
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple, np.ndarray)):
        raise ValueError(f"labels must be 'inferred', None, or a list of integer labels, one per image file; "
                         f"received labels={labels!r}.")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f"label_mode must be one of 'int', 'categorical', 'binary' or None, received "
                         f"label_mode={label_mode!r}.")
    if color_mode not in COLOR_MODES:
        raise ValueError(f"color_mode must be one of {sorted(COLOR_MODES)}, received color_mode={color_mode!r}.")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    if not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"image_size must be a tuple of 2 integers (height, width), received {image_size!r}.")
    interpolation = str(interpolation).lower()
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, received {interpolation!r}.")
    if pad_to_aspect_ratio:
        raise ValueError("pad_to_aspect_ratio=True is not supported; use crop_to_aspect_ratio=True or resize.")
    if data_format not in (None, "channels_last"):
        raise ValueError(f"data_format {data_format!r} is not supported; images are channels_last.")
    if format != "tf":
        raise ValueError(f"format={format!r} is not supported; the dataset is flexflow_keras' own (format='tf').")
    paths, ids, names, label_mode, seed = index_folder(directory, labels, label_mode, class_names, follow_links,
                                                       shuffle, seed, validation_split, subset, verbose)
    source = ImageFolderSource(paths, ids, names, tuple(image_size), COLOR_MODES[color_mode], interpolation,
                               crop_to_aspect_ratio, origin=f"image_dataset_from_directory({str(directory)!r})")

    def part(rows: slice, which: str | None, shuffled: bool) -> ImageDataset:
        if which is None:
            return ImageDataset(source, batch_size, label_mode, shuffled, seed)
        sub = source.subset(rows, f"{source.origin} ({which})")
        if sub.num_samples == 0:
            raise ValueError(f"No {which} images in {str(directory)!r} with validation_split={validation_split} "
                             f"({source.num_samples} files).")
        if verbose:
            log.info("Using %d files for %s.", sub.num_samples, which)
        return ImageDataset(sub, batch_size, label_mode, shuffled, seed)

    return split_parts(source.num_samples, validation_split, subset, shuffle, part)


def split_parts(n: int, validation_split, subset, shuffle: bool, make):
    """What a folder's dataset maker returns: ``make(rows, which, shuffled)`` of the whole folder (which None)
    without a validation_split, else of the training rows (the first files) and/or the validation rows (the
    last `validation_split` of the `n`), as `subset` asks; validation data is never reshuffled."""
    if not validation_split:
        return make(slice(None), None, shuffle)
    n_val = int(validation_split * n)
    rows = {"training": slice(0, n - n_val), "validation": slice(n - n_val, None)}
    if subset == "both":
        return make(rows["training"], "training", shuffle), make(rows["validation"], "validation", False)
    return make(rows[subset], subset, shuffle)


def index_folder(directory, labels, label_mode, class_names, follow_links, shuffle, seed, validation_split, subset,
                 verbose, extensions=None, what: str = "image"):
    """(paths, int labels or None, class names, label mode, seed) of a folder of class sub-folders, as Keras'
    dataset makers index it: checked split arguments, a drawn seed when None, the files shuffled once with it
    (before any split), and the count logged."""
    from flexflow_keras.data.images import IMAGE_EXTENSIONS

    _check_split(validation_split, subset, shuffle, seed)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    if seed is None:
        seed = int(np.random.randint(1_000_000))
    paths, ids, names = index_image_folder(directory, labels, class_names, follow_links,
                                           extensions or IMAGE_EXTENSIONS, what)
    if label_mode == "binary" and len(names or []) != 2:
        raise ValueError(f"label_mode='binary' needs exactly 2 classes, found {len(names or [])}: {names}.")
    if shuffle:  # once, with the seed, as Keras does before splitting
        perm = np.arange(len(paths))
        np.random.RandomState(seed).shuffle(perm)
        paths = [paths[i] for i in perm]
        ids = None if ids is None else ids[perm]
    if verbose:
        log.info("Found %d files%s.", len(paths), "" if names is None else f" belonging to {len(names)} classes")
    return paths, ids, names, label_mode, seed


def _check_split(validation_split, subset, shuffle, seed) -> None:
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"validation_split must be between 0 and 1, received {validation_split}.")
    if bool(validation_split) != bool(subset):
        raise ValueError("subset and validation_split go together: set both (e.g. validation_split=0.2, "
                         "subset='training') or neither.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f"subset must be 'training', 'validation' or 'both', received {subset!r}.")
    if validation_split and shuffle and seed is None:
        raise ValueError("With validation_split and shuffle=True, pass a seed so the training and validation "
                         "subsets do not overlap (e.g. seed=1337).")
