"""`keras.utils.timeseries_dataset_from_array`, `split_dataset` and the (x, y, sample_weight) packing helpers,
on NumPy arrays.

Keras 3 returns `tf.data` datasets from the first two; flexflow_keras has no `tf.data`, so the windows come
as a `PyDataset` of batches (which `fit`, `evaluate` and `predict` take, and which iterates as
``for x, y in ds`` and ``ds.take(1)`` do in the keras-io examples; a batch's arrays answer ``.numpy()``), and a
split as NumPy arrays of the same structure as its input (what `fit` takes).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.data.dataset import _tensor
from flexflow_keras.errors import DataError
from flexflow_keras.utils.py_dataset import PyDataset


class TimeseriesDataset(PyDataset):
    """Batches of sliding windows over `data` (and the target of each window's first step); see
    `timeseries_dataset_from_array`."""

    def __init__(self, data, targets, starts: np.ndarray, offsets: np.ndarray, batch_size: int | None):
        super().__init__()
        self.data, self.targets = data, targets
        self.starts, self.offsets = starts, offsets
        self.batch_size = batch_size

    def __len__(self) -> int:
        if self.batch_size is None:
            return len(self.starts)
        return -(-len(self.starts) // self.batch_size)

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"batch {index} of a timeseries dataset of {len(self)} batches")
        index %= len(self)
        if self.batch_size is None:
            starts = self.starts[index:index + 1]
        else:
            starts = self.starts[index * self.batch_size:(index + 1) * self.batch_size]
        x = _tensor(self.data[starts[:, None] + self.offsets[None, :]])
        if self.batch_size is None:
            x = x[0]
        if self.targets is None:
            return x
        y = _tensor(self.targets[starts])
        return x, (y[0] if self.batch_size is None else y)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def take(self, count: int) -> list:
        """The first `count` batches (``for batch in ds.take(1)``, as with tf.data)."""
        return [self[i] for i in range(min(int(count), len(self)))]

    def as_numpy_iterator(self):
        from flexflow_keras.data.numpy_iterator import NumpyIterator

        return NumpyIterator(self)

    def cardinality(self) -> np.int64:
        from flexflow_keras.ops.eager_tensor import eager

        return eager(np.int64(len(self)))


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None):
    """Sliding windows over a time series, batched (Keras 3's semantics, on NumPy arrays).

    Window i holds ``data[start_index + s_i + j * sampling_rate]`` for j < `sequence_length`, where the
    starts s_i run from 0 in steps of `sequence_stride` while the window stays before `end_index`; its
    target is ``targets[start_index + s_i]`` (None: windows only). `shuffle` shuffles the windows once,
    with `seed`. `batch_size` None gives single windows.

    Returns:
        A `TimeseriesDataset` (a `keras.utils.PyDataset` of (x, y) batches).
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
        np.random.default_rng(seed).shuffle(starts)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
    return TimeseriesDataset(data, targets, starts + start, offsets, None if batch_size is None else int(batch_size))


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
    order = np.random.default_rng(seed).permutation(total) if shuffle else np.arange(total)
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
