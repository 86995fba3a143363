"""TensorFlow's sparse values on the host under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks
in `CALLS`): what OCR scripts do with decoded labels in a callback (keras.io's handwriting recognition
scores its predictions with ``tf.edit_distance(tf.cast(tf.sparse.from_dense(pred), tf.int64), ...)``).

- `tf.SparseTensor(indices, values, dense_shape)` (TensorFlow's text generation tutorial builds its
  prediction mask with it and ``tf.sparse.to_dense``, which checks the indices as TensorFlow's does;
  ``tf.sparse.reorder`` sorts them).
- `tf.sparse.from_dense(x)`: a `SparseTensorValue` (ops/ctc_beam.py; `tf.sparse.to_dense` reads it back) of
  x's non-zero entries in row-major order, as TensorFlow's SparseTensor holds them.
- `tf.cast` of a sparse value casts its values (anything else is cast as before, tf_signal.cast).
- `tf.edit_distance(hypothesis, truth, normalize=True)`: the Levenshtein distance between the value sequences
  of each row (the last dimension's entries in order), float32 of shape dense_shape[:-1]; normalized by the
  truth's length, inf where the truth is empty and the hypothesis not (0 where both are), as TensorFlow.
All of them work on values (eager tensors, arrays); a model's symbolic tensor is refused with the reason.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from flexflow_keras.ops.ctc_beam import SparseTensorValue


def _values(call: str, x) -> np.ndarray:
    from flexflow_keras.tf_count_ops import _array

    return _array(call, x)


def from_dense(tensor, name=None) -> SparseTensorValue:
    """`tf.sparse.from_dense`: the non-zero entries of `tensor`, row-major."""
    dense = _values("tf.sparse.from_dense", tensor)
    indices = np.argwhere(dense != 0).astype(np.int64)
    return SparseTensorValue(indices, dense[tuple(indices.T)], np.asarray(dense.shape, np.int64))


def sparse_tensor(indices, values, dense_shape) -> SparseTensorValue:
    """`tf.SparseTensor(indices, values, dense_shape)`: a sparse value; Python numbers as TensorFlow converts
    them (float32, int32), indices and dense_shape int64. TensorFlow's shape checks: indices (n, rank),
    values (n,), dense_shape (rank,)."""
    from flexflow_keras.tf_array_ops import convert_to_tensor

    idx = np.asarray(_values("tf.SparseTensor", indices), dtype=np.int64)
    vals = np.asarray(convert_to_tensor(values))
    shape = np.asarray(_values("tf.SparseTensor", dense_shape), dtype=np.int64).reshape(-1)
    if idx.ndim != 2 or vals.ndim != 1 or idx.shape[0] != vals.shape[0] or idx.shape[1] != shape.shape[0]:
        raise ValueError(f"tf.SparseTensor expects indices of shape (n, rank), values of shape (n,) and dense_shape "
                         f"of shape (rank,); received indices {idx.shape}, values {vals.shape}, dense_shape "
                         f"{shape.shape}.")
    return SparseTensorValue(idx, vals, shape)


def _check_indices(sp: SparseTensorValue) -> None:
    """TensorFlow's SparseToDense checks (validate_indices=True): each index within the dense shape, and the
    indices in row-major order without repeats, with TensorFlow's error (InvalidArgumentError)."""
    from flexflow_keras.tf_constants import InvalidArgumentError

    shape = sp.dense_shape.tolist()
    prev = None
    for i, index in enumerate(sp.indices.tolist()):
        where = f"tf.sparse.to_dense: indices[{i}] = {index}"
        if any(not 0 <= v < s for v, s in zip(index, shape, strict=False)):
            raise InvalidArgumentError(f"{where} is out of bounds: need 0 <= index < {shape}.")
        if prev is not None and index == prev:
            raise InvalidArgumentError(f"{where} is repeated; give each index once.")
        if prev is not None and index < prev:
            raise InvalidArgumentError(f"{where} is out of order; sort the indices (tf.sparse.reorder) or pass "
                                       f"validate_indices=False.")
        prev = index


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """`tf.sparse.to_dense`: the dense array of a sparse value, its indices checked as TensorFlow does."""
    from flexflow_keras.ops.ctc_beam import sparse_to_dense

    if validate_indices and isinstance(sp_input, SparseTensorValue):
        _check_indices(sp_input)
    return sparse_to_dense(sp_input, default_value)


def reorder(sp_input, name=None) -> SparseTensorValue:
    """`tf.sparse.reorder`: the same entries with the indices in row-major order (as to_dense checks them)."""
    if not isinstance(sp_input, SparseTensorValue):
        raise TypeError(f"tf.sparse.reorder expects a sparse value (tf.SparseTensor(...)), received "
                        f"{type(sp_input).__name__}.")
    order = np.lexsort(sp_input.indices.T[::-1]) if len(sp_input.indices) else np.arange(0)
    return SparseTensorValue(sp_input.indices[order], sp_input.values[order], sp_input.dense_shape)


def cast(x, dtype, name=None):
    """`tf.cast`: a sparse value's values cast to `dtype`; anything else as tf_signal.cast."""
    from flexflow_keras import tf_keywords, tf_signal

    if isinstance(x, SparseTensorValue):
        dtype = tf_keywords.tf_dtype(dtype)
        return dataclasses.replace(x, values=x.values.astype(str(np.dtype(getattr(dtype, "name", dtype)))))
    return tf_signal.cast(x, dtype, name)


def _levenshtein(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, ai in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, bj in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ai != bj))
    return row[-1]


def _sequences(sp: SparseTensorValue) -> dict:
    """Each row's values in the order of their last index, keyed by the row's leading indices."""
    rows: dict = {}
    for index in np.lexsort(sp.indices.T[::-1]):  # row-major order
        rows.setdefault(tuple(int(i) for i in sp.indices[index][:-1]), []).append(sp.values[index].item())
    return rows


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """`tf.edit_distance` of two sparse values (see the module docstring)."""
    from flexflow_keras.ops.eager_tensor import eager

    for what, sp in (("hypothesis", hypothesis), ("truth", truth)):
        if not isinstance(sp, SparseTensorValue):
            raise TypeError(f"tf.edit_distance expects {what} to be a sparse value (tf.sparse.from_dense(x) or a "
                            f"CTC decoder's result), received {type(sp).__name__}.")
    if len(hypothesis.dense_shape) != len(truth.dense_shape):
        raise ValueError(f"tf.edit_distance: hypothesis and truth must have the same rank, received shapes "
                         f"{hypothesis.dense_shape.tolist()} and {truth.dense_shape.tolist()}.")
    shape = tuple(int(s) for s in np.maximum(hypothesis.dense_shape, truth.dense_shape)[:-1])
    hyp, tru = _sequences(hypothesis), _sequences(truth)
    out = np.zeros(shape, np.float32)
    for index in np.ndindex(*shape):
        a, b = hyp.get(index, []), tru.get(index, [])
        distance = float(_levenshtein(a, b))
        if normalize:
            distance = distance / len(b) if b else (np.inf if a else 0.0)
        out[index] = distance
    return eager(out)


CALLS = {
    "tf.SparseTensor": sparse_tensor,
    "tf.sparse.SparseTensor": sparse_tensor,
    "tf.sparse.from_dense": from_dense,
    "tf.sparse.reorder": reorder,
    **{f"tf.{space}sparse.to_dense": to_dense for space in ("", "compat.v1.")},
    "tf.edit_distance": edit_distance,
    **{f"tf.{space}cast": cast for space in ("", "math.", "dtypes.")},
}

__all__ = ["CALLS", "cast", "edit_distance", "from_dense", "reorder", "sparse_tensor", "to_dense"]
