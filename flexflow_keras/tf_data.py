"""`tf.data` under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks here): the dataset
constructors and the chain tutorials give them, run by this framework's datasets.

- ``tf.data.Dataset.from_tensor_slices(...)`` / ``from_tensors`` / ``zip`` / ``range`` / ``from_generator``
  and their chain (shuffle, batch, map, take, skip, prefetch, cache, padded_batch, filter, unbatch,
  concatenate, enumerate; data/slices.py); ``tf.data.Dataset.list_files`` (a glob's paths, shuffled unless
  ``shuffle=False``); ``tf.data.TextLineDataset``, ``Dataset.counter`` / ``experimental.Counter``
  (data/derived.py).
- ``tf.data.Dataset.sample_from_datasets`` / ``choose_from_datasets`` (data/grouping.py; also under
  tf.data.experimental); tf.data.experimental's ``bucket_by_sequence_length``, ``group_by_window``, ``scan``,
  ``unique``, ``ignore_errors``, ``rejection_resample`` (data/resample.py), ``assert_cardinality`` (for
  ``ds.apply(...)``), ``snapshot`` (the dataset's ``cache()``) and ``get_single_element``.
- ``tf.data.experimental.cardinality(ds)`` (the dataset's `cardinality()`, of any of our datasets),
  ``tf.data.experimental.make_csv_dataset`` and ``CsvDataset`` (data/csv_dataset.py).
- ``tf.data.Options`` and ``tf.data.experimental.AutoShardPolicy`` & co (data/options.py), ``tf.data.AUTOTUNE``
  and the cardinality constants; ``tf.TensorSpec`` for ``from_generator(output_signature=...)``.
- ``isinstance(ds, tf.data.Dataset)`` (`TYPES`, answered by keras_alias.py).
"""

from __future__ import annotations

from flexflow_keras.data import options as _data_options
from flexflow_keras.errors import DataError


def _tensor_spec(shape=None, dtype="float32", name=None):
    """`tf.TensorSpec(shape, dtype)`, as `Dataset.from_generator(output_signature=...)` takes it (the stand-in
    reads the elements' own shapes; the spec documents them)."""
    from flexflow_keras.ops.graph import TensorSpec

    dims = () if shape is None else tuple(None if d is None else int(d) for d in shape)
    return TensorSpec(dims, str(getattr(dtype, "name", dtype)))


def _cardinality(dataset):
    """`tf.data.experimental.cardinality(ds)`: the dataset's own `cardinality()` (its number of batches)."""
    if not hasattr(dataset, "cardinality"):
        raise TypeError(f"tf.data.experimental.cardinality expects a dataset, received {type(dataset).__name__}.")
    return dataset.cardinality()


def _assert_cardinality(expected_cardinality):
    """`tf.data.experimental.assert_cardinality(n)`, for ``ds.apply(...)``: the dataset itself, once its number of
    elements is n (`tf.data.INFINITE_CARDINALITY` for an endless one). Our datasets know their length, so a
    wrong n fails here, where TensorFlow fails when the iteration reaches the mismatch."""
    expected = int(expected_cardinality)

    def apply(dataset):
        endless = getattr(dataset, "is_endless", None)
        actual = -1 if endless is not None and endless() else int(_cardinality(dataset))
        if actual != expected:
            raise DataError(
                f"tf.data.experimental.assert_cardinality: the dataset was expected to contain {expected} "
                f"element(s) (-1: endless), but it contains {actual}. Pass the dataset's own length, "
                f"int(ds.cardinality()), or drop the assertion.")
        return dataset
    return apply


def _derived():
    from flexflow_keras.data import derived

    return derived


def _csv():
    from flexflow_keras.data import csv_dataset

    return csv_dataset


def _slices():
    from flexflow_keras.data.slices import SliceDataset

    return SliceDataset


def _snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    """`tf.data.experimental.snapshot(path)` for ``ds.apply``: the dataset's `cache()`, the same elements in the
    same order read again from memory (TensorFlow also persists them under `path` for other processes; the
    reader and shard functions only arrange those files)."""
    return lambda ds: ds.cache()


def _dataset_types() -> tuple[type, ...]:
    from flexflow_keras.data.dataset import ImageDataset
    from flexflow_keras.data.slices import SliceDataset

    return SliceDataset, ImageDataset


# TensorFlow classes whose instances here are ours: `isinstance(ds, tf.data.Dataset)` (keras_alias.py)
TYPES = {"tf.data.Dataset": _dataset_types}

CALLS = {
    "tf.TensorSpec": _tensor_spec,
    "tf.data.Dataset.from_tensor_slices": lambda *a, **k: _slices().from_tensor_slices(*a, **k),
    "tf.data.Dataset.from_tensors": lambda *a, **k: _slices().from_tensors(*a, **k),
    "tf.data.Dataset.zip": lambda *a, **k: _slices().zip(*a, **k),
    "tf.data.Dataset.range": lambda *a, **k: _slices().range(*a, **k),
    "tf.data.Dataset.from_generator": lambda *a, **k: _slices().from_generator(*a, **k),
    "tf.data.Dataset.list_files": lambda *a, **k: _slices().list_files(*a, **k),
    "tf.data.TextLineDataset": lambda *a, **k: _derived().text_line_dataset(*a, **k),
    **{path: (lambda *a, **k: _derived().counter(*a, **k))
       for path in ("tf.data.Dataset.counter", "tf.data.experimental.Counter")},
    "tf.data.experimental.cardinality": _cardinality,
    "tf.data.experimental.make_csv_dataset": lambda *a, **k: _csv().make_csv_dataset(*a, **k),
    "tf.data.experimental.CsvDataset": lambda *a, **k: _csv().csv_dataset(*a, **k),
    **{f"tf.data.{space}.{name}": (lambda *a, _name=name, **k: getattr(_slices(), _name)(*a, **k))
       for space in ("Dataset", "experimental") for name in ("sample_from_datasets", "choose_from_datasets")},
    # tf.data.experimental's transformations, for ds.apply(...)
    **{f"tf.data.experimental.{name}": (lambda *a, _name=name, **k: lambda ds: getattr(ds, _name)(*a, **k))
       for name in ("bucket_by_sequence_length", "group_by_window", "scan", "unique", "ignore_errors",
                    "rejection_resample")},
    "tf.data.experimental.get_single_element": lambda dataset: dataset.get_single_element(),
    "tf.data.experimental.snapshot": _snapshot,
    "tf.data.experimental.assert_cardinality": _assert_cardinality,
}
CONSTANTS = {
    "tf.data.AUTOTUNE": -1, "tf.data.experimental.AUTOTUNE": -1,
    "tf.data.INFINITE_CARDINALITY": -1, "tf.data.experimental.INFINITE_CARDINALITY": -1,
    "tf.data.UNKNOWN_CARDINALITY": -2, "tf.data.experimental.UNKNOWN_CARDINALITY": -2,
    "tf.data.Options": _data_options.Options, "tf.data.ThreadingOptions": _data_options.ThreadingOptions,
    **{f"tf.data.experimental.{name}": getattr(_data_options, name) for name in (
        "AutoShardPolicy", "ExternalStatePolicy", "AutotuneAlgorithm", "AutotuneOptions", "DistributeOptions",
        "OptimizationOptions", "ThreadingOptions")},
}
