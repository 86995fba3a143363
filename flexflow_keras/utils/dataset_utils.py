"""`keras.utils.timeseries_dataset_from_array`, `split_dataset` and the (x, y, sample_weight) packing helpers,
on NumPy arrays.

Keras 3 returns `tf.data` datasets from the first two. The windows come as flexflow_keras' tf.data stand-in
(data/slices.py), a dataset of windows then batched, so the chains scripts add work: ``ds.map(split_window)``
(TensorFlow's time-series tutorial), ``prefetch``, ``cache``, ``unbatch``, ``take``; `fit`, `evaluate` and
`predict` take it, and a batch's arrays answer ``.numpy()``. A window is read from the series when its batch
is, so no copy of every window is held. A split comes as NumPy arrays of the same structure as its input
(what `fit` takes).
"""

from __future__ import annotations

import random

import numpy as np

from flexflow_keras.data.slices import SliceDataset
from flexflow_keras.errors import DataError


class TimeseriesDataset(SliceDataset):
    """The sliding windows over `data` (with the target of each window's first step) as a tf.data stand-in
    dataset, one element a window; see `timeseries_dataset_from_array`, which batches it."""

    def __init__(self, data, targets, starts: np.ndarray, offsets: np.ndarray):
        super().__init__(None)
        self._series, self._targets = data, targets
        self._starts, self._offsets = starts, offsets

    def _count(self) -> int:
        return len(self._starts)

    def _raw_rows(self, rows):
        starts = self._starts[np.asarray(rows, dtype=np.int64)]
        x = self._series[starts[..., None] + self._offsets]
        return x if self._targets is None else (x, self._targets[starts])

    def _raw_element(self, i):
        return self._raw_rows(int(i))

    def __repr__(self) -> str:
        stages = "".join(f".{s[0]}()" for s in self._stages)
        return f"<Dataset timeseries_dataset_from_array(...){stages}>"


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None):
    """Sliding windows over a time series, batched (Keras 3's semantics, on NumPy arrays).

    Window i holds ``data[start_index + s_i + j * sampling_rate]`` for j < `sequence_length`, where the
    starts s_i run from 0 in steps of `sequence_stride` while the window stays before `end_index`; its
    target is ``targets[start_index + s_i]`` (None: windows only). `shuffle` shuffles the windows once,
    with `seed`, then anew each iteration (each epoch) within a buffer of ``8 * batch_size`` windows (1024
    without batches), as Keras 3 does. `batch_size` None gives single windows.

    Returns:
        A tf.data stand-in dataset (data/slices.py) of (x, y) batches, or of x batches without targets.
    """
    who = "timeseries_dataset_from_array"
    data = np.asarray(data)
    for name, value, low in (("sequence_length", sequence_length, 1), ("sequence_stride", sequence_stride, 1),
                             ("sampling_rate", sampling_rate, 1)):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise DataError(f"{who}: {name} must be a positive integer, received {value!r}.")
    if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size < 1):
        raise DataError(f"{who}: batch_size must be a positive integer or None, received {batch_size!r}.")
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    if not 0 <= start < len(data) or not start < end <= len(data):
        raise DataError(f"{who}: start_index {start_index!r} and end_index {end_index!r} must satisfy "
                        f"0 <= start_index < end_index <= len(data) = {len(data)}.")
    windows = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets)
        windows = min(windows, len(targets) - start)  # no window without a target
    starts = np.arange(0, max(0, windows), sequence_stride, dtype=np.int64)
    if shuffle:
        from flexflow_keras.utils import rng

        seed = rng.make_seed() if seed is None else int(seed)  # tf.random.set_seed repeats the orders
        np.random.default_rng(seed).shuffle(starts)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
    windows = TimeseriesDataset(data, targets, starts + start, offsets)
    if shuffle:  # Keras' local reshuffle on each iteration, after the one global shuffle
        windows = windows.shuffle(1024 if batch_size is None else 8 * int(batch_size), seed=seed)
    return windows if batch_size is None else windows.batch(int(batch_size))


def _structure(dataset, who: str):
    if isinstance(dataset, np.ndarray):
        return [dataset], False
    if isinstance(dataset, (tuple, list)) and dataset and all(hasattr(a, "__len__") for a in dataset):
        arrays = [np.asarray(a) for a in dataset]
        if len({len(a) for a in arrays}) != 1:
            raise DataError(f"{who}: the arrays of a tuple must have the same length, received lengths "
                            f"{[len(a) for a in arrays]}.")
        return arrays, True
    if isinstance(dataset, (tuple, list)):
        return [np.asarray(dataset)], False
    raise DataError(f"{who} takes a NumPy array or a tuple/list of arrays of the same length (flexflow_keras "
                    f"has no tf.data), received {type(dataset).__name__}.")


def _size(value, total: int, name: str, who: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and 0 < value < 1:
        return int(np.round(value * total))
    if isinstance(value, (int, np.integer)) and 0 < value <= total:
        return int(value)
    raise DataError(f"{who}: {name} must be a fraction in (0, 1) or a number of samples in [1, {total}], "
                    f"received {value!r}.")


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Split arrays into a left part from the start and a right part from the end (Keras 3's sizes: a
    fraction, rounded, or a count; the other part is the rest).

    With `shuffle`, the samples are shuffled first as Keras 3 does: ``random.seed(seed)`` then
    ``random.shuffle`` of Python's global `random` (a None seed is ``random.randint(0, 10**6)`` of it), so a
    seed picks the samples tf.keras picks, and Python's random is left where tf.keras leaves it.

    Returns:
        (left, right), each of the input's structure: an array, or a tuple of arrays. Keras 3 returns
        tf.data datasets; these are what `fit` takes.
    """
    who = "split_dataset"
    arrays, as_tuple = _structure(dataset, who)
    total = len(arrays[0])
    if left_size is None and right_size is None:
        raise DataError(f"{who}: give left_size, right_size or both (a fraction in (0, 1) or a number of "
                        f"samples); received neither.")
    left, right = _size(left_size, total, "left_size", who), _size(right_size, total, "right_size", who)
    if left is None:
        left = total - right
    if right is None:
        right = total - left
    if left + right > total or left < 1 or right < 1:
        raise DataError(f"{who}: left_size {left_size!r} and right_size {right_size!r} give {left} and {right} "
                        f"samples of {total}; both parts need at least one and together at most {total}.")
    order = list(range(total))
    if shuffle:  # Keras 3's shuffle: Python's global random, seeded with `seed` (drawn from it when None)
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.seed(seed)
        random.shuffle(order)
    order = np.asarray(order, np.int64)
    lo, hi = order[:left], order[total - right:]  # the right part from the end, as Keras takes it
    parts = [tuple(a[lo] for a in arrays), tuple(a[hi] for a in arrays)]
    return tuple(p if as_tuple else p[0] for p in parts)


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """``x``, ``(x, y)`` or ``(x, y, sample_weight)``: what a batch holds (Keras' packing)."""
    if y is None:  # a lone x stays unwrapped; a tuple or list of inputs is wrapped, so it reads as x
        return (x,) if isinstance(x, (tuple, list)) else x
    if sample_weight is None:
        return x, y
    return x, y, sample_weight


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) of a batch that is ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise DataError(f"unpack_x_y_sample_weight: a batch is x, (x,), (x, y) or (x, y, sample_weight), received a "
                    f"tuple of {len(data)}.")
