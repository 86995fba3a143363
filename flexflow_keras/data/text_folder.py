"""`keras.utils.text_dataset_from_directory`: a folder of class sub-folders of .txt files as a dataset of
(text batch, label batch), with Keras 3's arguments, order and split.

Files are indexed as Keras does (`data/images.py`'s sorted walk, .txt only), shuffled once with the seed,
and split (the last `validation_split` of them validate). The texts are read once, when the dataset is
made, as bytes (TensorFlow's `.numpy()` gives text elements as bytes, and scripts decode them); a
`max_length` keeps the first bytes of each. The result is a `SliceDataset` (data/slices.py): batches of
an object array of bytes and the labels, `map`, `take`, `shuffle` and the rest of its chain, plus
`class_names` and `file_paths`. With ``shuffle=True`` the order changes each pass, as Keras' shuffle
buffer of 8 batches does (a full shuffle here).
"""

from __future__ import annotations

import logging
import os

import numpy as np

from flexflow_keras.data.dataset import encode_labels, index_folder, split_parts
from flexflow_keras.errors import ArgumentError, DataError

log = logging.getLogger("flexflow_keras")


def _read(path: str, max_length: int | None) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read() if max_length is None else f.read(max_length)
    except OSError as e:
        raise DataError(f"text_dataset_from_directory could not read {path!r}: {e.strerror or e}.") from None
    return data


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                max_length=None, shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True):
    """A dataset of (texts, labels) batches from a directory of class sub-folders of .txt files.

    Args:
        directory: the folder; with labels="inferred" one sub-folder per class.
        labels: "inferred", None, or a list of integer labels in the sorted order of the files.
        label_mode: "int" (int32 ids), "categorical" (one-hot float32), "binary" (float32 (N, 1)) or None.
        class_names: with labels="inferred", the sub-folders to use, in this order.
        batch_size: texts per batch (None: single texts).
        max_length: keep at most this many bytes of each text.
        shuffle: shuffle the files (and reshuffle every pass); False keeps the sorted order.
        seed: the shuffling seed; required with validation_split and shuffle.
        validation_split: fraction of the files held out for validation.
        subset: "training", "validation" or "both" (a tuple of two datasets); with validation_split.
        follow_links: descend into symlinked sub-folders.
        format: "tf" (the only one).
        verbose: log how many files and classes were found.
    """
    from flexflow_keras.data.slices import SliceDataset
    from flexflow_keras.execution.context import check_before_work

    check_before_work()
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple, np.ndarray)):
        raise ArgumentError(f"labels must be 'inferred', None, or a list of integer labels, one per text file; "
                         f"received labels={labels!r}.")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ArgumentError(f"label_mode must be one of 'int', 'categorical', 'binary' or None, received "
                         f"label_mode={label_mode!r}.")
    if max_length is not None and int(max_length) < 1:
        raise ArgumentError(f"max_length must be a positive number of bytes or None, received {max_length!r}.")
    if format != "tf":
        raise ArgumentError(f"format={format!r} is not supported; the dataset is flexflow_keras' own (format='tf').")
    if batch_size is not None and int(batch_size) < 1:
        raise ArgumentError(f"batch_size must be a positive int or None, received {batch_size!r}.")
    paths, ids, names, label_mode, seed = index_folder(directory, labels, label_mode, class_names, follow_links,
                                                       shuffle, seed, validation_split, subset, verbose, (".txt",),
                                                       "text")

    def make(rows: slice, which: str | None, shuffled: bool):
        sub_paths = paths[rows]
        if not sub_paths:
            raise ArgumentError(f"No {which} files in {str(directory)!r} with validation_split={validation_split} "
                             f"({len(paths)} files).")
        if verbose and which:
            log.info("Using %d files for %s.", len(sub_paths), which)
        texts = np.empty(len(sub_paths), dtype=object)
        texts[:] = [_read(p, None if max_length is None else int(max_length)) for p in sub_paths]
        y = None if ids is None else encode_labels(ids[rows], label_mode, len(names or []))
        ds = SliceDataset.from_tensor_slices(texts if y is None else (texts, y))
        if shuffled:
            ds = ds.shuffle(8 * (batch_size or 1), seed=seed)
        if batch_size is not None:
            ds = ds.batch(int(batch_size))
        ds.class_names = None if names is None else list(names)
        ds.file_paths = [os.fspath(p) for p in sub_paths]
        return ds

    return split_parts(len(paths), validation_split, subset, shuffle, make)
