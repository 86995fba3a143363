"""TensorFlow's counting and ordering functions under `python -m flexflow_keras` (tf_compat.py's
`mapped_call` looks here): `tf.unique` / `tf.unique_with_counts`, `tf.searchsorted`, `tf.math.bincount`,
`tf.math.confusion_matrix` and `tf.math.in_top_k` / `tf.nn.in_top_k`.

TensorFlow's arguments, defaults and dtypes: unique's values in order of first appearance (keras.ops.unique
sorts by default) and its `out_idx` indices in `Unique` / `UniqueWithCounts` namedtuples; searchsorted over
the last dim of N-D tensors (keras.ops': 1-D) with `out_type`; bincount's `weights`, `minlength`,
`maxlength`, `dtype`, `axis` and `binary_output` (keras.ops': weights, minlength, sparse). Their results'
sizes depend on the data (or, for searchsorted and confusion_matrix, are computed on the host), so they run
eagerly on arrays, as keras.ops' do; `tf.searchsorted` and `in_top_k` also run on symbolic tensors in a model,
composed from comparisons and sums. None has a gradient, as in TensorFlow. Bad values are TensorFlow's
`InvalidArgumentError` with its words (a negative bincount input, labels out of range).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid as _invalid
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_convert import refuse

Unique = namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _refuse(call: str, why: str):
    refuse(call, why, "Compute it on NumPy arrays (before fit or outside the model), or run the script "
                      "with TensorFlow itself.")


def _array(call: str, x) -> np.ndarray:
    """x's values as TensorFlow converts them (Python floats float32, ints int32); symbolic: refused."""
    if isinstance(x, KerasTensor):
        _refuse(call, "gives a result whose size depends on the data, which a model's graph cannot hold.")
    if isinstance(x, np.ndarray) or hasattr(x, "value"):
        return np.asarray(x)
    from flexflow_keras.tf_compat import _constant

    return np.asarray(_constant(x))


def _eager(value, dtype):
    from flexflow_keras.ops.eager_tensor import eager

    return eager(np.asarray(value).astype(_dtype_name(dtype)))


def _dtype_name(dtype) -> str:
    return str(np.dtype(getattr(dtype, "name", dtype)))


def _index_type(call: str, out_idx) -> str:
    name = _dtype_name(out_idx)
    if name not in ("int32", "int64"):
        _refuse(call, f"expects out_idx int32 or int64, received {out_idx!r}.")
    return name


def _unique_parts(call: str, x, out_idx):
    values = _array(call, x)
    if values.ndim != 1:
        _invalid(f"{call}: unique expects a 1D vector, received shape {list(values.shape)} [Op:Unique]. Flatten "
                 f"it first with tf.reshape(x, [-1]).")
    first_values, first, inverse, counts = np.unique(values, return_index=True, return_inverse=True,
                                                     return_counts=True)
    order = np.argsort(first, kind="stable")  # TensorFlow's order: first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    kind = _index_type(call, out_idx)
    return (_eager(first_values[order], values.dtype), _eager(rank[inverse.reshape(-1)], kind),
            _eager(counts[order], kind))


def unique(x, out_idx="int32", name=None):
    """`tf.unique(x, out_idx=tf.int32)`: ``Unique(y, idx)``, the distinct values of the 1-D x in order of first
    appearance and each entry's position in y (``x == tf.gather(y, idx)``)."""
    y, idx, _ = _unique_parts("tf.unique", x, out_idx)
    return Unique(y, idx)


def unique_with_counts(x, out_idx="int32", name=None):
    """`tf.unique_with_counts(x, out_idx=tf.int32)`: ``UniqueWithCounts(y, idx, count)``, as `tf.unique` plus
    how often each value occurs (of dtype `out_idx`)."""
    return UniqueWithCounts(*_unique_parts("tf.unique_with_counts", x, out_idx))


def _tf_dtype_name(dtype: np.dtype) -> str:
    from flexflow_keras.tf_compat import _TF_DTYPE_NAMES

    return _TF_DTYPE_NAMES.get(dtype.name, dtype.name)


def searchsorted(sorted_sequence, values, side="left", out_type="int32", name=None):
    """`tf.searchsorted(sorted_sequence, values, side="left", out_type=tf.int32)`: for each value, the index
    in its row of `sorted_sequence` (the last dim; the leading dims flatten to rows, one per row of `values`)
    where it would be inserted to keep the row sorted (`side` "right": after equal entries)."""
    ops = _ops()
    if side not in ("left", "right"):
        _refuse("tf.searchsorted", f"expects side 'left' or 'right', received side={side!r}.")
    kind = _index_type("tf.searchsorted", out_type)
    if isinstance(sorted_sequence, KerasTensor) or isinstance(values, KerasTensor):
        # how many entries of the row come before each value: a comparison and a sum (same rows: same dims)
        before = ops.less if side == "left" else ops.less_equal
        seq = ops.expand_dims(sorted_sequence, -2)
        return ops.cast(ops.sum(ops.cast(before(seq, ops.expand_dims(values, -1)), "int32"), axis=-1), kind)
    seq, vals = np.asarray(_tensor_like(sorted_sequence)), np.asarray(_tensor_like(values))
    if seq.dtype != vals.dtype:
        _invalid(f"cannot compute {'LowerBound' if side == 'left' else 'UpperBound'} as input #1(zero-based) was "
                 f"expected to be a {_tf_dtype_name(seq.dtype)} tensor but is a {_tf_dtype_name(vals.dtype)} "
                 f"tensor. tf.searchsorted takes sorted_sequence and values of one dtype: cast one of them.")
    if seq.ndim == 0 or vals.ndim == 0:
        _invalid("tf.searchsorted: sorted_sequence and values must have at least 1 dim.")
    rows, width = seq.reshape(-1, seq.shape[-1]), vals.shape[-1]
    if vals.size // max(width, 1) != rows.shape[0] and vals.size:
        _invalid(f"tf.searchsorted: the leading dims of sorted_sequence {list(seq.shape)} and values "
                 f"{list(vals.shape)} must give the same number of rows.")
    flat = vals.reshape(rows.shape[0], -1)
    out = np.stack([np.searchsorted(r, v, side=side) for r, v in zip(rows, flat, strict=True)]) if flat.size else \
        np.zeros(vals.shape)
    return _eager(out.reshape(vals.shape), kind)


def _tensor_like(x):
    if isinstance(x, np.ndarray) or hasattr(x, "value"):
        return x
    from flexflow_keras.tf_compat import _constant

    return _constant(x)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype="int32", name=None, axis=None,
             binary_output=False):
    """`tf.math.bincount(arr, weights=None, minlength=None, maxlength=None, dtype=tf.int32, axis=None,
    binary_output=False)`: how often each value 0, 1, ... occurs in `arr` (all of it; ``axis=-1``: each row
    of a 2-D arr), or the sum of its `weights` (then of the weights' dtype), or 1 where it occurs
    (`binary_output`). The length is ``max(arr) + 1``, at least `minlength`, at most `maxlength` (larger values
    are not counted)."""
    values = _array("tf.math.bincount", arr)
    if values.dtype.kind not in "iu":
        _invalid(f"tf.math.bincount expects integer values, received dtype {values.dtype}; cast them with "
                 f"tf.cast(arr, tf.int32).")
    if axis not in (None, 0, -1) or (axis == -1 and values.ndim != 2):
        _refuse("tf.math.bincount", f"counts all of arr (axis=None or 0) or each row of a 2-D arr (axis=-1), "
                                    f"received axis={axis!r} for shape {list(values.shape)}.")
    if weights is not None and binary_output:
        _invalid("tf.math.bincount: arguments binary_output and weights are mutually exclusive; give one.")
    if values.size and values.min() < 0:
        _invalid("tf.math.bincount: Input arr must be non-negative! [Op:DenseBincount]")
    length = int(values.max()) + 1 if values.size else 0
    length = max(length, int(minlength)) if minlength is not None else length
    length = min(length, int(maxlength)) if maxlength is not None else length
    w = None if weights is None else _array("tf.math.bincount", weights)
    if w is not None and w.shape != values.shape:
        _invalid(f"tf.math.bincount: weights must have arr's shape {list(values.shape)}, received "
                 f"{list(w.shape)}.")
    per_row = axis == -1
    rows = values.reshape(values.shape[0], -1) if per_row else values.reshape(1, -1)
    wrows = None if w is None else w.reshape(rows.shape)
    out = np.zeros((rows.shape[0], length), np.float64 if w is not None else np.int64)
    for i, row in enumerate(rows):
        keep = row < length
        counted = np.bincount(row[keep], None if wrows is None else wrows[i][keep], length)
        out[i] = np.minimum(counted, 1) if binary_output else counted
    out = out if per_row else out[0]
    return _eager(out, w.dtype if w is not None else dtype)


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype="int32", name=None):
    """`tf.math.confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=tf.int32)`: the
    (num_classes, num_classes) matrix whose entry [i, j] counts (or sums the `weights` of) the samples of
    label i predicted as j; num_classes ``max(labels, predictions) + 1`` by default."""
    true, pred = (_array("tf.math.confusion_matrix", v).reshape(-1).astype(np.int64) for v in (labels, predictions))
    if true.shape != pred.shape:
        _invalid(f"tf.math.confusion_matrix: labels and predictions must have the same number of entries, "
                 f"received {true.size} and {pred.size}.")
    for what, v in (("labels", true), ("predictions", pred)):
        if v.size and v.min() < 0:
            _invalid(f"tf.math.confusion_matrix: `{what}` contains negative values (minimum {v.min()}).")
    n = int(max(true.max(initial=-1), pred.max(initial=-1)) + 1) if num_classes is None else int(num_classes)
    for what, v in (("labels", true), ("predictions", pred)):
        if v.size and v.max() >= n:
            _invalid(f"tf.math.confusion_matrix: `{what}` out of bound: {v.max()} is not below num_classes={n}; "
                     f"give a larger num_classes or fix the {what}.")
    w = np.ones(true.shape) if weights is None else _array("tf.math.confusion_matrix", weights).reshape(-1)
    out = np.zeros((n, n), np.float64)
    np.add.at(out, (true, pred), w)
    return _eager(out, dtype)


def in_top_k(targets, predictions, k, name=None):
    """`tf.math.in_top_k(targets, predictions, k)`: per row, whether the prediction of class `targets[i]` is
    among the k largest; classes tied with the k-th all count as in it (TensorFlow's rule), and a target out
    of range or a row with a non-finite prediction (NaN, inf) is False."""
    ops = _ops()
    if not isinstance(predictions, KerasTensor):
        predictions = ops.convert_to_tensor(_tensor_like(predictions))
    if not isinstance(targets, KerasTensor):
        targets = np.asarray(_tensor_like(targets))
    classes = int(predictions.shape[-1])
    t = ops.cast(targets, "int32")
    valid = ops.logical_and(ops.greater_equal(t, 0), ops.less(t, classes))
    own = ops.take_along_axis(predictions, ops.expand_dims(ops.clip(t, 0, classes - 1), -1), axis=-1)
    above = ops.sum(ops.cast(ops.greater(predictions, own), "int32"), axis=-1)
    finite = ops.all(ops.isfinite(predictions), axis=-1)
    return ops.logical_and(ops.logical_and(valid, finite), ops.less(above, int(k)))


CALLS = {
    "tf.unique": unique, "tf.unique_with_counts": unique_with_counts, "tf.searchsorted": searchsorted,
    "tf.math.bincount": bincount, "tf.math.confusion_matrix": confusion_matrix,
    "tf.math.in_top_k": in_top_k, "tf.nn.in_top_k": in_top_k,
}
