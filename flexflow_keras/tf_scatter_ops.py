"""TensorFlow's N-dimensional gathers and scatters under `python -m flexflow_keras` (tf_compat.py's
`mapped_call` looks here): `tf.gather_nd` (batch_dims too), `tf.scatter_nd`, `tf.tensor_scatter_nd_update`,
`tf.tensor_scatter_nd_add` and `tf.tensor_scatter_nd_sub`.

Each is composed from keras.ops functions, so it runs eagerly, on symbolic tensors in a model, and under a
GradientTape: an index vector (the last dim of `indices`) becomes one flat row number, ``sum(index *
strides)``; a gather is `keras.ops.take` of those rows, a scatter is `keras.ops.segment_sum` into them
(duplicate indices add up, as TensorFlow's scatter_nd does). TensorFlow's CPU kernels refuse an index out of
range; so does this on eager indices, with TensorFlow's `InvalidArgumentError`. Symbolic indices cannot be
checked before they have values. `tensor_scatter_nd_update` with repeated indices keeps the last update (on
eager indices; TensorFlow leaves the order unspecified). The dims of the indexed tensor other than a model's
batch dim must be known, and a scatter's `shape` must be numbers (not a symbolic `tf.shape(x)`); other
calls are a `RawTensorFlowError` naming the call, as are TensorFlow-only arguments (`bad_indices_policy`).
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid as _invalid
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_convert import refuse
from flexflow_keras.tf_convert import tensor as _tensor


def _refuse(call: str, why: str):
    refuse(call, why, "Use keras.ops.take / keras.ops.segment_sum with flat indices, or run the script "
                      "with TensorFlow itself.")


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, KerasTensor) else tuple(np.shape(x))


def _dims(text) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in text) + "]"


def _check_indices(call: str, indices, inner: tuple, what: str) -> None:
    """TensorFlow's CPU check: every index vector lies inside `inner` (negative indices too are refused)."""
    if isinstance(indices, KerasTensor):
        return
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        _invalid(f"{call} expects integer indices (int32 or int64), received dtype {idx.dtype}; cast them with "
                 f"tf.cast(indices, tf.int32).")
    flat = idx.reshape(-1, idx.shape[-1])
    bounds = np.asarray([np.iinfo(np.int64).max if d is None else d for d in inner], np.int64)
    bad = np.flatnonzero(((flat < 0) | (flat >= bounds)).any(axis=1)) if flat.size else []
    if len(bad):
        row = flat[bad[0]].tolist()
        _invalid(f"indices[{bad[0]}] = {row} does not index into {what} [Op:{call}]. Indices must be in "
                 f"[0, dim) for each dim they index (TensorFlow's CPU rule); fix or clip them.")


def _int_indices(call: str, indices):
    indices = _tensor(indices)
    if not isinstance(indices, KerasTensor):
        indices = np.asarray(indices)
        if indices.dtype.kind not in "iu":
            _invalid(f"{call} expects integer indices (int32 or int64), received dtype {indices.dtype}; cast "
                     f"them with tf.cast(indices, tf.int32).")
    if len(_shape(indices)) < 1 or _shape(indices)[-1] is None:
        _refuse(f"tf.{call}", f"needs indices whose last dim (the index depth) is known, received shape "
                              f"{_dims(_shape(indices))}.")
    return indices


def _flat_rows(indices, inner: tuple):
    """Each index vector (the last dim of `indices`) as one row number of `inner` laid out row-major."""
    ops = _ops()
    strides = [math.prod(inner[j + 1:]) for j in range(len(inner))]
    wide = max(strides, default=1) * max(inner, default=1) > np.iinfo(np.int32).max
    weights = np.asarray(strides, np.int64 if wide else np.int32)
    return ops.sum(ops.multiply(ops.cast(indices, str(weights.dtype)), weights), axis=-1)


def gather_nd(params, indices, batch_dims=0, name=None):
    """`tf.gather_nd(params, indices, batch_dims=0)`: the slices of `params` at the index vectors in the last
    dim of `indices`; result shape ``indices.shape[:-1] + params.shape[batch_dims + depth:]``. With
    `batch_dims` b, the first b dims of both are batch dims and each batch indexes its own slice of params.

    Example: ``tf.gather_nd(logits, tf.stack([tf.range(n), labels], axis=1))`` picks each row's label score.
    """
    ops = _ops()
    params, indices = _tensor(params), _int_indices("GatherNd", indices)
    pshape, ishape, b = _shape(params), _shape(indices), int(batch_dims)
    depth = ishape[-1]
    if not 0 <= b < len(ishape) or b + depth > len(pshape):
        _refuse("tf.gather_nd", f"expects 0 <= batch_dims < rank(indices) and batch_dims + index depth <= "
                                f"rank(params), received batch_dims={batch_dims}, indices shape {_dims(ishape)}, "
                                f"params shape {_dims(pshape)}.")
    if any(p is not None and i is not None and p != i for p, i in zip(pshape[:b], ishape[:b], strict=True)):
        _invalid(f"gather_nd: the first batch_dims={b} dims of params {_dims(pshape)} and indices "
                 f"{_dims(ishape)} must be equal.")
    inner, rest = pshape[b:b + depth], pshape[b + depth:]
    if b == 0 and depth and pshape[0] is None:
        _refuse("tf.gather_nd", f"with batch_dims=0 indexes across a model's batch dim (params {_dims(pshape)}), "
                                f"which a sample cannot see; give batch_dims=1 to index within each sample.")
    if any(d is None for d in pshape[1:]):
        _refuse("tf.gather_nd", f"needs params whose dims after the first are known, received {_dims(pshape)}.")
    _check_indices("GatherNd", indices, inner, f"param shape {_dims(pshape)}")
    rows = _flat_rows(indices, inner)
    if not b:
        return ops.take(ops.reshape(params, (-1,) + tuple(rest)), rows, axis=0)
    # each batch gathers from its own rows: take_along_axis over the flattened indexed dims (the batch kept)
    if any(d is None for d in ishape[1:-1]):
        _refuse("tf.gather_nd", f"needs indices whose dims after the first are known, received {_dims(ishape)}.")
    table = ops.reshape(params, (-1,) + tuple(pshape[1:b]) + (math.prod(inner),) + tuple(rest))
    picks = ops.reshape(rows, (-1,) + tuple(ishape[1:b]) + (math.prod(ishape[b:-1]),) + (1,) * len(rest))
    out = ops.take_along_axis(table, picks, axis=b)
    return ops.reshape(out, (-1,) + tuple(ishape[1:-1]) + tuple(rest))


def _scatter(call: str, indices, updates, shape: tuple):
    """`updates` summed into zeros of `shape` at the index vectors of `indices` (keras.ops.segment_sum)."""
    ops = _ops()
    ishape, ushape = _shape(indices), _shape(updates)
    depth = ishape[-1]
    if depth > len(shape):
        _invalid(f"{call}: the index depth {depth} (indices' last dim) exceeds the rank of shape {_dims(shape)}.")
    inner, rest = shape[:depth], shape[depth:]
    want = tuple(ishape[:-1]) + tuple(rest)
    if len(ushape) != len(want) or any(u is not None and w is not None and u != w
                                       for u, w in zip(ushape, want, strict=True)):
        _invalid(f"{call}: updates must have shape indices.shape[:-1] + shape[{depth}:] = {_dims(want)}, "
                 f"received updates shape {_dims(ushape)} [Op:{call}].")
    _check_indices(call, indices, inner, f"shape {_dims(shape)}")
    rows = ops.reshape(_flat_rows(indices, inner), (-1,))
    table = ops.segment_sum(ops.reshape(updates, (-1,) + tuple(rest)), rows, num_segments=math.prod(inner))
    return ops.reshape(table, tuple(shape))


def _static_shape(call: str, shape) -> tuple:
    try:
        if isinstance(shape, KerasTensor) or any(isinstance(s, KerasTensor) for s in np.asarray(
                shape, dtype=object).reshape(-1)):
            raise TypeError
        return tuple(int(s) for s in np.asarray(shape, dtype=object).reshape(-1))
    except TypeError:
        _refuse(f"tf.{call}", f"needs its output shape as numbers here, received {shape!r} (a symbolic shape, "
                              f"such as a model's tf.shape(x) with its batch size unknown).")


def scatter_nd(indices, updates, shape, name=None):
    """`tf.scatter_nd(indices, updates, shape)`: zeros of `shape` with `updates` added at the index vectors of
    `indices` (repeated indices add up); the dtype of `updates`."""
    shape = _static_shape("scatter_nd", shape)
    return _scatter("ScatterNd", _int_indices("ScatterNd", indices), _tensor(updates), shape)


def _known(call: str, tensor) -> tuple:
    shape = _shape(tensor)
    if any(d is None for d in shape):
        _refuse(f"tf.{call}", f"needs a tensor of known shape here, received {_dims(shape)} (a model's batch dim "
                              f"is unknown until it runs); scatter into the rows of one sample instead.")
    return shape


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """`tf.tensor_scatter_nd_add(tensor, indices, updates)`: `tensor` with `updates` added at the index
    vectors of `indices` (repeated indices add up)."""
    tensor = _tensor(tensor)
    added = _scatter("TensorScatterAdd", _int_indices("TensorScatterAdd", indices), _tensor(updates),
                     _known("tensor_scatter_nd_add", tensor))
    return _ops().add(tensor, added)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """`tf.tensor_scatter_nd_sub(tensor, indices, updates)`: `tensor` with `updates` subtracted at `indices`."""
    tensor = _tensor(tensor)
    taken = _scatter("TensorScatterSub", _int_indices("TensorScatterSub", indices), _tensor(updates),
                     _known("tensor_scatter_nd_sub", tensor))
    return _ops().subtract(tensor, taken)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """`tf.tensor_scatter_nd_update(tensor, indices, updates)`: `tensor` with the slices at the index vectors
    of `indices` replaced by `updates` (a repeated index keeps its last update). The gradient reaches
    `tensor` where it was kept and `updates` where they were written, as TensorFlow's."""
    ops = _ops()
    tensor, indices, updates = _tensor(tensor), _int_indices("TensorScatterUpdate", indices), _tensor(updates)
    shape = _known("tensor_scatter_nd_update", tensor)
    depth = _shape(indices)[-1]
    if not isinstance(indices, KerasTensor) and depth <= len(shape):  # a repeated index: its last update
        _check_indices("TensorScatterUpdate", indices, shape[:depth], f"shape {_dims(shape)}")
        flat = np.ravel_multi_index(tuple(indices.reshape(-1, depth).T), shape[:depth]) if depth else \
            np.zeros(int(np.prod(indices.shape[:-1])), np.int64)
        _, first_from_end = np.unique(flat[::-1], return_index=True)
        if len(first_from_end) < len(flat):
            keep = np.sort(len(flat) - 1 - first_from_end)
            rest = shape[depth:]
            indices = indices.reshape(-1, depth)[keep]
            updates = ops.take(ops.reshape(updates, (-1,) + tuple(rest)), keep.astype(np.int32), axis=0)
    written = _scatter("TensorScatterUpdate", indices, updates, shape)
    ones = ops.ones_like(ops.sum(ops.cast(indices, "float32"), axis=-1))
    hits = _scatter("TensorScatterUpdate", indices, ones, shape[:depth])
    mask = ops.reshape(ops.greater(hits, 0.0), tuple(shape[:depth]) + (1,) * (len(shape) - depth))
    return ops.where(mask, written, tensor)


CALLS = {
    "tf.gather_nd": gather_nd, "tf.scatter_nd": scatter_nd,
    "tf.tensor_scatter_nd_update": tensor_scatter_nd_update, "tf.tensor_scatter_nd_add": tensor_scatter_nd_add,
    "tf.tensor_scatter_nd_sub": tensor_scatter_nd_sub,
}
