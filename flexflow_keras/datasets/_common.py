"""Shared machinery of the dataset loaders: where to look for a dataset's files, safe readers for
Keras' formats, and fast generators of learnable synthetic images.

Lookup order for a dataset (nothing is ever downloaded):
1. ``-d/--dataset`` (``config.get().dataset``), when given, always wins: a path that does not exist is
   a `DataError`; a directory holding one of the dataset's Keras file names gives that entry; otherwise
   the -d path itself is read through the format detector (datasets/_flag.py), and a path that does
   not hold this dataset is a `DataError` saying what it holds. Never a fall back to the cache.
2. Without -d, the Keras cache: ``$KERAS_HOME/datasets`` (default ``~/.keras/datasets``), Keras' names.
3. Deterministic learnable synthetic data with the real shapes, dtypes and sample counts, with one
   ``logging.info`` line saying so and why.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import zipfile

import numpy as np

from flexflow_keras.errors import DataError

log = logging.getLogger("flexflow_keras")


def cache_dirs() -> list[str]:
    """The Keras dataset cache directories, in Keras' order ($KERAS_HOME, ~/.keras, /tmp/.keras)."""
    from flexflow_keras.utils.files import keras_cache_dirs

    return keras_cache_dirs("datasets")


def dataset_flag() -> str | None:
    """The ``-d`` path, or None."""
    from flexflow_keras import config

    return config.get().dataset


class Found:
    """Where a dataset's data was found: ``path`` (file or directory), ``origin`` (for the log), and
    ``from_flag`` (it came from -d, so the loader reads it through datasets/_flag.py)."""

    def __init__(self, path: str, origin: str, from_flag: bool = False):
        self.path = path
        self.origin = origin
        self.from_flag = from_flag


def flag_path(dataset: str) -> str | None:
    """The -d path with ~ expanded, or None; DataError when it does not exist."""
    flag = dataset_flag()
    if not flag:
        return None
    from flexflow_keras import config

    config.note_dataset_read(flag)
    path = os.path.expanduser(flag)
    if not os.path.exists(path):
        raise DataError(f"{dataset}.load_data(): the dataset path {flag!r} given with -d/--dataset does not "
                        f"exist. Check the path, or drop -d.")
    return path


def locate(dataset: str, names: list[str]) -> tuple[Found | None, str]:
    """Find `dataset`'s data: (Found or None, why not found, for the log).

    With -d, the result is always from -d (``from_flag``): the entry of a -d directory named like one of
    `names`, else the -d path itself, which the loader must then recognise or reject. Without -d, the
    Keras cache under `names`.

    Args:
        dataset: the loader's name, for messages.
        names: candidate file or directory names (Keras' names first), relative to a directory.

    Raises:
        DataError: when -d names a path that does not exist.
    """
    from flexflow_keras.execution.context import check_before_work

    check_before_work()  # a mistyped flag stops the script before it reads data
    path = flag_path(dataset)
    if path is not None:
        if os.path.isdir(path):
            for name in names:
                cand = os.path.join(path, name)
                if os.path.exists(cand):
                    return Found(cand, f"{cand} (from -d)", True), ""
        return Found(path, f"{path} (from -d)", True), ""
    return locate_cached(names)


def locate_cached(names: list[str], flag_dir: str | None = None) -> tuple[Found | None, str]:
    """`names` in `flag_dir` (when given), then in the Keras cache: (Found or None, why not found)."""
    for d in ([flag_dir] if flag_dir else []) + cache_dirs():
        for name in names:
            cand = os.path.join(d, name)
            if os.path.exists(cand):
                return Found(cand, f"{cand} ({'from -d' if d == flag_dir else 'Keras cache'})"), ""
    return None, f"no {names[0]} in the Keras cache {cache_dirs()[0]}"


def read_error(dataset: str, path: str, err: Exception) -> DataError:
    return DataError(f"{dataset}.load_data(): cannot read {path!r}: {err}. Replace the file with Keras' "
                     f"original, or remove it (synthetic data is used when no file is found).")


TRAIN_TEST_KEYS = ("x_train", "y_train", "x_test", "y_test")


def load_train_test_npz(dataset: str, path: str):
    """``(x_train, y_train), (x_test, y_test)`` from an .npz with those keys (no pickles)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise read_error(dataset, path, e) from None


def log_synthetic(dataset: str, why: str, detail: str) -> None:
    log.info("%s.load_data(): using deterministic synthetic data (%s): %s", dataset, why, detail)


def log_real(dataset: str, found: Found, detail: str) -> None:
    log.info("%s.load_data(): read %s: %s", dataset, found.origin, detail)


# --- safe readers -------------------------------------------------------------------------------------------

class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles only plain containers and NumPy arrays (no arbitrary code from a dataset file)."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("builtins", "bytes"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset file")


def load_npz(path: str) -> dict[str, np.ndarray]:
    """All arrays of an .npz; object arrays (ragged sequences) through `RestrictedUnpickler`."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            with z.open(member) as f:
                data = f.read()
            buf = io.BytesIO(data)
            version = np.lib.format.read_magic(buf)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
            if dtype.hasobject:
                arr = RestrictedUnpickler(buf).load()
            else:
                arr = np.frombuffer(data, dtype=dtype, offset=buf.tell()).reshape(shape, order="F" if fortran else "C")
            out[member.removesuffix(".npy")] = arr
    return out


def load_pickle(data: bytes):
    """A Python-2 style pickle (CIFAR batches) with bytes keys, restricted to NumPy and containers."""
    return RestrictedUnpickler(io.BytesIO(data), encoding="bytes").load()


# --- synthetic images ---------------------------------------------------------------------------------------

def class_templates(rng: np.random.Generator, classes: int, shape: tuple[int, ...], cell: int,
                    base_level: int = 70, class_level: int = 50, class_cells: int = 5) -> np.ndarray:
    """(classes, *shape) uint8 patterns on a grid of `cell`-pixel blocks: a stroke pattern shared by all
    classes (`base_level`) plus `class_cells` blocks of `class_level` that are each class's own.

    With noise in [0, 128) the maximum stays below 256. A small MLP on MNIST-shaped data goes from
    chance to about 90% accuracy over the first couple of thousand samples, much as on the real digits.
    """
    grid = (shape[0] // cell, shape[1] // cell) + tuple(shape[2:])
    size = int(np.prod(grid))
    base = (rng.random(size) < 0.3).astype(np.uint8) * base_level
    marks = np.zeros((classes, size), np.uint8)
    for c in range(classes):
        marks[c, rng.choice(size, class_cells, replace=False)] = class_level
    coarse = (base[None, :] + marks).reshape((classes,) + grid)
    return coarse.repeat(cell, axis=1).repeat(cell, axis=2)


LABEL_NOISE = 0.08  # the share of samples drawn from another class's template than their label says


def noisy_images(rng: np.random.Generator, templates: np.ndarray, labels: np.ndarray, noise_max: int = 128,
                 label_noise: float = LABEL_NOISE) -> np.ndarray:
    """``templates[labels]`` plus uniform noise in [0, noise_max) (a power of two; no uint8 overflow
    when the template's maximum plus noise_max stays below 256).

    A share `label_noise` of the samples shows another class's template than its label: the data stays
    learnable but a perfect score is impossible (about 1 - label_noise at best), so training on
    synthetic data by mistake cannot pass for a success. The images and labels are recorded as
    synthetic (`flexflow_keras.data.provenance`) so that fit marks its progress lines.
    """
    shown = np.array(labels, copy=True)
    classes = len(templates)
    if label_noise > 0 and classes > 1:
        wrong = np.flatnonzero(rng.random(len(shown)) < label_noise)
        shown[wrong] = (shown[wrong].astype(np.int64) + rng.integers(1, classes, len(wrong))) % classes
    x = templates[shown]
    noise = np.frombuffer(rng.bytes(x.size), np.uint8).reshape(x.shape)
    shift = 8 - int(np.log2(noise_max))
    x += noise >> shift
    from flexflow_keras.data import provenance

    provenance.record(f"synthetic {classes}-class images", x, labels)
    return x


def mark_synthetic(dataset: str, *splits, any_width: bool = False) -> None:
    """Record the `(x, y)` splits a loader hands out as synthetic, so that fit's progress lines say
    `data: synthetic` (`flexflow_keras.data.provenance`); `any_width` for sequences a script pads."""
    from flexflow_keras.data import provenance

    for x, y in splits:
        provenance.record(dataset, x, y, any_width=any_width)
