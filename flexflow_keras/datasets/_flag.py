"""``-d`` for the dataset loaders: when -d is given it always wins, and it must hold this loader's data.

The image loaders (mnist, fashion_mnist, cifar10, cifar100) and boston_housing read -d through the
format detector (data/formats: .npz, .npy pairs, CSV, IDX files, CIFAR batches) and check that what it
holds has this dataset's sample shape and class count; imdb and reuters need their own .npz layout
(ragged word-index sequences). Anything else is a `DataError` saying what -d holds and what the loader
needs: never a fall back to the Keras cache or to synthetic data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from flexflow_keras.data.formats import describe_path, open_dataset
from flexflow_keras.data.formats.arrays import npz_members
from flexflow_keras.data.formats.base import NotADataset, spec_text
from flexflow_keras.datasets import _common as C
from flexflow_keras.errors import DataError


@dataclass(frozen=True)
class Need:
    """What a loader needs from -d: the sample ``shape`` it returns, the ``classes`` (0 for regression),
    Keras' (train, test) counts (a file without a test split is cut in that ratio), the label layout
    (``column``: (N, 1) rather than (N,)), ``what`` for messages, and the labels' dtype as Keras returns."""

    dataset: str
    shape: tuple[int, ...]
    classes: int
    counts: tuple[int, int]
    column: bool
    what: str
    label_dtype: str = "uint8"


MNIST = Need("mnist", (28, 28), 10, (60000, 10000), False,
             "28x28 grayscale images with labels 0..9 (Keras' mnist.npz, MNIST IDX files, or any accepted "
             "format with samples of shape (28, 28), (28, 28, 1) or (784,))")
FASHION_MNIST = Need("fashion_mnist", (28, 28), 10, (60000, 10000), False,
                     "28x28 grayscale images with labels 0..9 (the Fashion-MNIST IDX files, or any accepted format "
                     "with samples of shape (28, 28), (28, 28, 1) or (784,))")
CIFAR10 = Need("cifar10", (32, 32, 3), 10, (50000, 10000), True,
               "32x32 RGB images with labels 0..9 (cifar-10-batches-py/, cifar-10-python.tar.gz, or any accepted "
               "format with samples of shape (32, 32, 3), (3, 32, 32) or (3072,))")
CIFAR100 = Need("cifar100", (32, 32, 3), 100, (50000, 10000), True,
                "32x32 RGB images with labels 0..99 (cifar-100-python/, cifar-100-python.tar.gz, or any accepted "
                "format with samples of shape (32, 32, 3), (3, 32, 32) or (3072,))", "int64")
BOSTON = Need("boston_housing", (13,), 0, (404, 102), False,
              "13 numeric features and a price per sample (Keras' boston_housing.npz with x/y, a CSV with 13 "
              "feature columns and a label column, or an .npy pair)")


def _open(need: Need, path: str):
    try:
        return open_dataset(path)
    except NotADataset as e:  # say what this loader needs
        raise DataError(f"{need.dataset}.load_data(): {e} {need.dataset} needs {need.what}.") from None
    except DataError as e:  # damaged or incomplete: the file's own message is the point
        raise DataError(f"{need.dataset}.load_data(): {e}") from None


def _mismatch(need: Need, path: str, ds, detail: str) -> DataError:
    return DataError(f"{need.dataset}.load_data(): -d {path} holds {ds.format} with inputs {spec_text(ds.x_train)}"
                     f" ({ds.num_train} training samples); {detail}. {need.dataset} needs {need.what}. Point -d at "
                     f"{need.dataset}'s data, or drop -d.")


def _images(need: Need, path: str, ds, x: np.ndarray) -> np.ndarray:
    got, want = tuple(x.shape[1:]), need.shape
    if got == want:
        return x
    if int(np.prod(got)) == int(np.prod(want)):
        if len(got) == 1 or got == want + (1,):
            return x.reshape((len(x),) + want)
        if len(want) == 3 and got == (want[2], want[0], want[1]):
            return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    raise _mismatch(need, path, ds, f"samples of shape {got} are not {want}")


def _labels(need: Need, path: str, ds, y: np.ndarray) -> np.ndarray:
    if y.ndim == 2 and y.shape[1] == need.classes and need.classes > 1:
        y = y.argmax(axis=1)  # one-hot rows
    y = y.reshape(len(y)) if y.ndim == 2 and y.shape[1] == 1 else y
    if y.ndim != 1 or (y.dtype.kind == "f" and not np.all(y == np.round(y))):
        raise _mismatch(need, path, ds, f"its labels of shape {tuple(y.shape[1:])} {y.dtype} are not class ids")
    if len(y) and (y.min() < 0 or y.max() >= need.classes):
        raise _mismatch(need, path, ds, f"its labels run from {int(y.min())} to {int(y.max())}, not 0..{need.classes - 1}")
    y = y.astype(need.label_dtype)
    return y.reshape(-1, 1) if need.column else y


def _split_tail(need: Need, x, y):
    """(train, test) of a file without a test split: the last samples, in Keras' train/test ratio."""
    n = len(x)
    cut = n - max(1, round(n * need.counts[1] / sum(need.counts))) if n > 1 else n
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def read_images(need: Need, found: C.Found, label_set: str | None = None):
    """``(x_train, y_train), (x_test, y_test)`` of an image dataset from -d (see the module docstring).

    Args:
        need: the loader's `Need`.
        found: the -d path (or the loader's Keras-named entry inside a -d directory).
        label_set: another label set of the file ("coarse" for CIFAR-100), or None.
    """
    ds = _open(need, found.path)
    if len(ds.x_train) != 1 or len(ds.y_train) != 1:
        raise _mismatch(need, found.path, ds, f"it has {len(ds.x_train)} input and {len(ds.y_train)} label arrays")
    if ds.classes and ds.classes > need.classes:
        raise _mismatch(need, found.path, ds, f"it has {ds.classes} classes, not {need.classes}")
    y_train, y_test = ds.y_train[0], ds.y_test[0] if ds.has_test else None
    if label_set is not None:
        if label_set not in ds.extra_labels:
            raise _mismatch(need, found.path, ds, f"it has no {label_set} labels (only the CIFAR-100 python "
                                                  f"batches have them)")
        y_train, y_test = ds.extra_labels[label_set]
    x = _images(need, found.path, ds, ds.x_train[0])
    y = _labels(need, found.path, ds, y_train)
    if ds.has_test:
        train, test = (x, y), (_images(need, found.path, ds, ds.x_test[0]), _labels(need, found.path, ds, y_test))
        note = ""
    else:
        train, test = _split_tail(need, x, y)
        note = f"; no test split in the file, so its last {len(test[0])} samples are the test set"
    if len(need.shape) == 3:
        from flexflow_keras import backend

        if backend.image_data_format() == "channels_first":
            train, test = ((a.transpose(0, 3, 1, 2), b) for a, b in (train, test))
    C.log_real(need.dataset, found, f"{ds.format}, {len(train[0])} train + {len(test[0])} test samples, "
                                    f"{need.classes} classes, inputs {spec_text([train[0]])}{note}")
    return train, test


def read_table(need: Need, found: C.Found) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) float64 of a regression table from -d (train and test rows together)."""
    ds = _open(need, found.path)
    xs = [ds.x_train[0]] + ([ds.x_test[0]] if ds.has_test else [])
    ys = [ds.y_train[0]] + ([ds.y_test[0]] if ds.has_test else [])
    if len(ds.x_train) != 1 or len(ds.y_train) != 1 or tuple(xs[0].shape[1:]) != need.shape:
        raise _mismatch(need, found.path, ds, f"samples of shape {tuple(xs[0].shape[1:])} are not {need.shape}")
    y = np.concatenate(ys).astype(np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise _mismatch(need, found.path, ds, f"its targets have shape {tuple(y.shape[1:])}, not one value")
    return np.concatenate(xs).astype(np.float64), y


def sequence_file(dataset: str, found: C.Found, keys: tuple[str, ...], layout: str) -> None:
    """Check that -d (or the loader's file inside a -d directory) is an .npz with `keys`; else DataError."""
    path = found.path
    if os.path.isfile(path) and path.lower().endswith(".npz"):
        members = set(npz_members(path))
        if set(keys) <= members:
            return
        holds = f"an .npz with keys {', '.join(sorted(members)) or 'none'}"
    else:
        holds = describe_path(path)
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if not n.startswith("."))
            holds += f": {', '.join(names[:5])}" + (", ..." if len(names) > 5 else "") if names else ""
    raise DataError(f"{dataset}.load_data(): -d {path} holds {holds}; {dataset} needs Keras' {dataset}.npz ({layout}), "
                    f"as a file or in the -d directory. Point -d at it, or drop -d.")
