"""What every ``-d`` reader returns (`DatasetFile`), the list of accepted formats for messages, and the
one-phrase description of what a path holds (``describe_path``) that every "not usable" error starts from.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from flexflow_keras.data.images import IMAGE_EXTENSIONS as _IMAGE_EXTENSIONS
from flexflow_keras.errors import DataError

ACCEPTED = ("an .npz with x_train/y_train[/x_test/y_test] or x/y arrays; .npy pairs (x.npy + y.npy, or "
            "x_train.npy + y_train.npy [+ x_test.npy + y_test.npy]); a CSV with a header row and a label "
            "column (label/labels/y/target/class, else the last); MNIST IDX files "
            "(train-images-idx3-ubyte[.gz] + train-labels-idx1-ubyte[.gz] [+ t10k-*]); the CIFAR-10/100 python "
            "batches (cifar-10-batches-py/, cifar-100-python/ or their .tar.gz); a folder of class sub-folders "
            f"of {'/'.join(_IMAGE_EXTENSIONS)} images")


class NotADataset(DataError):
    """A -d path exists but holds no dataset in an accepted format (as opposed to a damaged one)."""


def unusable(path: str, found: str, fix: str = "") -> NotADataset:
    """The error for a -d path that exists but holds nothing usable: what was found, what is accepted."""
    fix = fix or "Point -d at one of these, or drop -d to train on synthetic data."
    return NotADataset(f"-d/--dataset {path}: found {found}, which is not a dataset this reads. Accepted: "
                     f"{ACCEPTED}. {fix}")


def read_fix(path: str, e: BaseException, fix: str) -> str:
    """The advice for a file that could not be read: `fix` (rewrite, copy again) unless the reason is that
    this user may not read it, which no rewrite mends."""
    if isinstance(e, PermissionError):
        return f"This user may not read {path}: make it readable (chmod a+r {path}) or run as its owner."
    return fix


def check_readable(path: str, given: str) -> None:
    """DataError for a -d path (`given` as typed) that exists but cannot be read as a dataset: a FIFO,
    socket or device (reading would block or never end), or a file or folder this user may not read."""
    if not os.path.isdir(path) and not os.path.isfile(path):
        raise DataError(f"-d/--dataset {given}: exists but is neither a file nor a folder (a FIFO, socket or "
                        f"device), which is not a dataset this reads. Point -d at a dataset file or folder.")
    folder = os.path.isdir(path)
    if not os.access(path, os.R_OK | (os.X_OK if folder else 0)):
        mode = "a+rx" if folder else "a+r"
        raise DataError(f"-d/--dataset {given}: this user may not read the {'folder' if folder else 'file'} "
                        f"(permission denied). Make it readable (chmod {mode} {given}) or run as its owner.")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def describe_path(path: str) -> str:
    """A short phrase for what `path` holds ("an empty directory", "a directory of 3 .txt files", "a
    1.2 MB .csv file"); never raises."""
    try:
        if os.path.isdir(path):
            entries = [e for e in os.scandir(path) if not e.name.startswith(".")]
            if not entries:
                return "an empty directory"
            dirs = [e.name for e in entries if e.is_dir()]
            kinds = Counter(os.path.splitext(e.name)[1].lower() or "extension-less" for e in entries if not e.is_dir())
            parts = [_plural(n, f"{ext} file") for ext, n in kinds.most_common()]
            if dirs:
                shown = ", ".join(sorted(dirs)[:4]) + (", ..." if len(dirs) > 4 else "")
                parts.append(_plural(len(dirs), "sub-folder") + f" ({shown})")
            return "a directory of " + ", ".join(parts)
        size = os.path.getsize(path)
        ext = os.path.splitext(path)[1].lower() or "extension-less"
        return f"a {_size(size)} {ext} file"
    except OSError as e:
        return f"a path that cannot be read ({e.strerror or e})"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n}-byte"
    if n < 1024 ** 2:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 ** 2:.1f} MB"


def infer_classes(ys: list[np.ndarray]) -> int | None:
    """Class count of a single label array: one-hot width, or max+1 of integer ids; None otherwise."""
    if len(ys) != 1 or not len(ys[0]):
        return None
    y = ys[0]
    if y.ndim == 2 and y.shape[1] > 1:
        return int(y.shape[1])
    if y.dtype.kind in "iub" and y.ndim <= 2:
        return int(y.max()) + 1
    return None


def spec_text(arrays: list[np.ndarray]) -> str:
    return ", ".join(f"{tuple(a.shape[1:])} {a.dtype}" for a in arrays)


@dataclass
class DatasetFile:
    """Arrays read from a ``-d`` path, one list entry per model input (x) or output (y).

    Attributes:
        path: the path as given.
        format: the format's name for the log ("MNIST IDX files").
        x_train, y_train: training arrays. x_test, y_test: test arrays, or None when the file has none.
        classes: the class count (one-hot width or max id + 1), None for regression targets.
        class_names: label names when the format has them (CSV text labels, CIFAR meta).
        extra_labels: other label sets, e.g. CIFAR-100's {"coarse": (train, test)}.
    """

    path: str
    format: str
    x_train: list[np.ndarray]
    y_train: list[np.ndarray]
    x_test: list[np.ndarray] | None = None
    y_test: list[np.ndarray] | None = None
    classes: int | None = None
    class_names: list[str] | None = None
    extra_labels: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.classes is None:
            self.classes = infer_classes(self.y_train)
        for split, xs, ys in (("training", self.x_train, self.y_train), ("test", self.x_test, self.y_test)):
            if xs is None:
                continue
            counts = {len(a) for a in list(xs) + list(ys or [])}
            if len(counts) > 1:
                raise DataError(f"-d/--dataset {self.path} ({self.format}): the {split} arrays have different "
                                f"sample counts ({spec_counts(xs, ys)}). Every x and y array needs one row per "
                                f"sample.")
            if not xs or not len(xs[0]):
                raise DataError(f"-d/--dataset {self.path} ({self.format}) has no {split} samples. Write at "
                                f"least one sample.")

    @property
    def num_train(self) -> int:
        return int(len(self.x_train[0]))

    @property
    def has_test(self) -> bool:
        return self.x_test is not None

    def summary(self, split: str = "train") -> str:
        """The log line: format, path, sample count, classes, input shapes."""
        xs = self.x_train if split == "train" or not self.has_test else self.x_test
        what = "training" if xs is self.x_train else "test"
        classes = f"{self.classes} classes" if self.classes else "regression targets"
        return (f"-d {self.path} ({self.format}): {len(xs[0])} {what} samples, {classes}, inputs "
                f"{spec_text(xs)}")


def spec_counts(xs, ys) -> str:
    return ", ".join([f"x: {len(a)}" for a in xs] + [f"y: {len(a)}" for a in (ys or [])])
