"""Which ``-d`` format a path holds (`detect`) and reading it (`open_dataset`).

A file is read by its kind (.npz, .npy, .csv, an IDX file, a CIFAR .tar.gz). A directory is, in this
order: MNIST IDX files, CIFAR python batches, an .npy pair, a folder of class sub-folders of images; else
a directory holding exactly one dataset (one .npz, .csv, batch folder, ...) stands for it. Anything else
that exists is a `DataError` saying what was found and what is accepted; nothing falls back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from flexflow_keras.data.formats import arrays, cifar, idx, table
from flexflow_keras.data.formats.base import DatasetFile, NotADataset, check_readable, describe_path, unusable
from flexflow_keras.data.images import is_image_folder
from flexflow_keras.errors import DataError

_TARS = (".tar.gz", ".tgz", ".tar")


@dataclass(frozen=True)
class Detection:
    """A detected format: ``kind`` (one of the keys of `_READERS`, or "image-folder") and the ``target``
    path to read (the -d path itself, or the one dataset inside a -d directory)."""

    kind: str
    target: str


def _file_kind(path: str) -> str | None:
    name = os.path.basename(path).lower()
    if name.endswith(".npz"):
        return "npz"
    if name.endswith(".npy"):
        return "npy-file"
    if name.endswith(".csv"):
        return "csv"
    if idx.NAME.match(os.path.basename(path)):
        return "idx-file"
    if name.endswith(_TARS) and cifar.tar_kind(path):
        return "cifar-tar"
    return None


def _dir_kind(path: str) -> str | None:
    if idx.idx_files(path):
        return "idx-dir"
    if cifar.cifar_kind(path):
        return "cifar-dir"
    if arrays.npy_pair_in(path):
        return "npy-dir"
    if is_image_folder(path, nested=False):
        return "image-folder"
    return None


def detect(path: str) -> Detection:
    """The format of an existing -d `path`.

    Args:
        path: a file or directory.

    Raises:
        DataError: when nothing usable is there (the message says what was found and what is accepted).
    """
    if os.path.isdir(path):
        kind = _dir_kind(path)
        if kind:
            return Detection(kind, path)
        inner = []
        for e in sorted(os.scandir(path), key=lambda e: e.name):
            if e.name.startswith("."):
                continue
            k = _dir_kind(e.path) if e.is_dir() else _file_kind(e.path)
            if k and k != "npy-file":  # a lone .npy is half a pair, not a dataset
                inner.append(Detection(k, e.path))
        if len(inner) == 1:
            return inner[0]
        if inner:
            names = ", ".join(os.path.basename(d.target) for d in inner)
            raise NotADataset(f"-d/--dataset {path}: this directory holds several datasets ({names}). Point -d at "
                              f"the one to use, e.g. -d {inner[0].target}.")
        lone = sorted(e.name for e in os.scandir(path) if e.name.endswith(".npy"))
        if lone:
            raise unusable(path, f"{describe_path(path)}, but no x.npy + y.npy or x_train.npy + y_train.npy "
                                 f"pair (.npy files: {', '.join(lone[:6])})",
                           "Name the input and label arrays x.npy and y.npy (or x_train.npy and y_train.npy).")
        raise unusable(path, describe_path(path))
    kind = _file_kind(path)
    if kind is None:
        found = describe_path(path)
        if path.lower().endswith(_TARS):
            found = "a .tar archive that holds no CIFAR python batches"
        raise unusable(path, found)
    return Detection(kind, path)


_READERS = {
    "npz": arrays.read_npz,
    "npy-file": arrays.read_npy_file,
    "npy-dir": arrays.read_npy_dir,
    "csv": table.read_csv,
    "idx-file": idx.read_idx_file,
    "idx-dir": idx.read_idx_dir,
    "cifar-dir": cifar.read_cifar_dir,
    "cifar-tar": cifar.read_cifar_tar,
}


def check_exists(path: str) -> str:
    """`path` with ~ expanded; DataError when it does not exist or cannot be read (base.check_readable)."""
    full = os.path.expanduser(os.fspath(path))
    if not os.path.exists(full):
        raise DataError(f"-d/--dataset {path}: no such file or directory. Check the path, or drop -d to train on "
                        f"synthetic data.")
    check_readable(full, os.fspath(path))
    return full


def open_dataset(path: str) -> DatasetFile:
    """Read the dataset at a -d `path` into arrays.

    Args:
        path: a file or directory in one of the formats of `base.ACCEPTED` (except image folders, which
            `for_model.flag_source` hands to the image loader).

    Returns:
        A `DatasetFile` with the training (and, when the format has them, test) arrays.

    Raises:
        DataError: when the path does not exist, holds nothing usable, or is damaged.
    """
    full = check_exists(path)
    found = detect(full)
    if found.kind == "image-folder":
        raise NotADataset(f"-d/--dataset {path} is a folder of class sub-folders of images. It is read as images "
                        f"by fit() without data or keras.utils.image_dataset_from_directory({path!r}), not as "
                        f"an array dataset.")
    return _READERS[found.kind](found.target)
