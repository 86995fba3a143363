"""Keras 3's `keras.ops` indexing, gathers and selection (the NumPy-like API, re-exported by numpy_api.py):
``x[key]`` (`get_item`: ints, slices, None and ``...``; the batch dim of a symbolic x stays whole), `slice`,
`flip`, `take` / `gather` (a trainable 2-D weight's rows as an embedding lookup), `take_along_axis`, `argmax` /
`argmin`, `one_hot`, `top_k` and `in_top_k`. Symbolic on KerasTensors (recording graph ops with backward
passes), eager on arrays, and recorded ops on arrays while a GradientTape records.
"""

from __future__ import annotations

import builtins

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import assign_in_call
from flexflow_keras.ops import dynamic_dims as _dyn
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.array_ops import ArgReduceOp, GatherOp, IndexOp, OneHotOp, TakeAlongAxisOp, TopKOp
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.graph import KerasTensor, Variable
from kernels.reduce import normalize_axes

__all__ = ["get_item", "slice", "flip", "take", "gather", "take_along_axis", "argmax", "argmin", "one_hot", "top_k",
           "in_top_k"]

_sym = F._symbolic
_slice = builtins.slice
_t = F._tensor


# --- indexing ----------------------------------------------------------------------------------------------
def _static_key(key, nd: int) -> tuple:
    key = key if isinstance(key, tuple) else (key,)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([(None, None, None)] * (nd - n_real))
        elif isinstance(k, _slice):
            out.append((k.start, k.stop, k.step))
        elif k is None or isinstance(k, int | np.integer):
            out.append(None if k is None else int(k))
        else:
            raise TypeError(f"Indexing a tensor supports ints, slices, None and ..., received {type(k).__name__} "
                            f"{k!r}; use ops.take(x, indices, axis) for an array of indices.")
    return tuple(out)


def get_item(x, key):
    """``x[key]`` for ints, slices, None and ``...``; the batch dim of a symbolic x stays whole."""
    if not _sym(x):
        if _tape.recording() and _basic(key):  # an eager index a GradientTape sees (ops/tape.py)
            value = x.value if _tape._is_variable(x) else np.asarray(x)  # a variable's own buffer: its key
            return apply_op(IndexOp(_static_key(_ints(key), np.ndim(value))), [value])
        return np.asarray(x)[key]
    if isinstance(x, Variable):  # a weight indexed in a layer's call(): a graph read of it, not its value now
        x = F._tensor(x, True)
    static = _static_key(key, x.ndim)
    if any(d is None for d in x.shape[1:]) and all(k is None or k == (None, None, None) for k in static):
        # only new axes around open sizes (``mask[:, None, :]`` of a variable-length mask): no slicing needed
        y = x
        for pos, k in enumerate(static):
            if k is None:
                y = apply_op(_dyn.InsertAxisOp(pos), [y])
        return y
    return apply_op(IndexOp(static), [x])


def _ints(key):
    """`key` with 0-d integer arrays (``tf.argmax(...)`` results, ``tf.shape(x)[1] - 1``) as ints, in slices
    too (``x[:, :h - 1]``, keras.io's Zero-DCE smoothness loss)."""
    if isinstance(key, tuple):
        return tuple(_ints(k) for k in key)
    if isinstance(key, _slice):
        return _slice(_ints(key.start), _ints(key.stop), _ints(key.step))
    if isinstance(key, np.ndarray) and key.ndim == 0 and key.dtype.kind in "iu":
        return int(key)
    return key


def _basic(key) -> bool:
    """Whether `key` is a basic index (ints, slices, None, ...), which `IndexOp` runs."""
    parts = _ints(key) if isinstance(key, tuple) else (_ints(key),)
    return all(k is None or k is Ellipsis or isinstance(k, _slice | int | np.integer) and not isinstance(k, bool)
               for k in parts)


def slice(inputs, start_indices, shape):  # noqa: A001 - the Keras ops name
    """The block of `shape` starting at `start_indices` (batch: start 0 and None/-1 for symbolic)."""
    from flexflow_keras.ops.numpy_api import BatchDim  # (numpy_api imports this module)

    key = tuple(_slice(int(s), None if n in (None, -1) or isinstance(n, BatchDim) else int(s) + int(n))
                for s, n in zip(start_indices, shape, strict=True))
    return get_item(inputs, key)


def flip(x, axis=None):
    """Reverse the order of elements along `axis` (None: every non-batch axis)."""
    nd = F._ndim(x)
    axes = normalize_axes(axis, nd) if axis is not None else tuple(range(1 if _sym(x) else 0, nd))
    return get_item(x, tuple(_slice(None, None, -1) if i in axes else _slice(None) for i in range(nd)))


def take(x, indices, axis=None):
    """Elements of x at integer `indices` along `axis` (None: the flattened x, eager only)."""
    sym = _sym(x, indices)
    if axis is None:
        if sym:
            raise ShapeError("take(axis=None) flattens the batch into the data; give an axis (e.g. 1).")
        if not _tape.recording():
            return np.take(np.asarray(x), np.asarray(indices))
        x, axis = F.reshape(x, (-1,)), 0
    idx = indices if isinstance(indices, KerasTensor) else np.asarray(indices)
    if not isinstance(idx, KerasTensor) and idx.dtype.kind not in "iu":
        idx = idx.astype(np.int32)
    if _row_lookup(x, axis, sym):
        return _lookup_rows(x, idx)
    return apply_op(GatherOp(int(axis)), [_t(x, sym), _t(idx, sym)])


def _row_lookup(x, axis, sym: bool) -> bool:
    """Whether ``take(x, ids, axis=0)`` reads rows of a trainable 2-D weight (in a graph, or eagerly under a
    GradientTape): TensorFlow's gradient of that gather is IndexedSlices, one row per lookup, whose moments
    Keras 3's optimizers take per lookup (execution/sparse_moments.py), as for an Embedding's table."""
    return (isinstance(x, Variable) and x.trainable and x.ndim == 2 and int(axis) % 2 == 0
            and (sym or _tape.recording()) and assign_in_call.read(x) is None)


def _lookup_rows(table: Variable, idx):
    """Rows `idx` of `table` as an embedding lookup; negative ids count from the end, as Keras' take."""
    rows = table.shape[0]
    if isinstance(idx, KerasTensor):
        if np.dtype(idx.dtype).kind == "i":
            idx = F.where(F.less(idx, 0), F.add(idx, np.asarray(rows, idx.dtype)), idx)
    else:
        idx = np.where(idx < 0, idx + rows, idx)
    return F.embedding(idx, table)


gather = take


def take_along_axis(x, indices, axis=None):
    """``np.take_along_axis`` (axis None: flattened, eager only)."""
    sym = _sym(x, indices)
    if axis is None:
        if sym:
            raise ShapeError("take_along_axis(axis=None) flattens the batch; give an axis.")
        return np.take_along_axis(np.ravel(x), np.ravel(indices), 0)
    return apply_op(TakeAlongAxisOp(int(axis)), [_t(x, sym), _t(indices, sym)])


# --- selection -----------------------------------------------------------------------------------------------
def _arg(fn: str, x, axis, keepdims):
    if axis is None:
        if _sym(x):
            raise ShapeError(f"{fn}(axis=None) flattens the batch; give an axis (e.g. -1).")
        r = np.argmax(x) if fn == "argmax" else np.argmin(x)
        return np.asarray(r, dtype="int32")
    return apply_op(ArgReduceOp(fn, int(axis), bool(keepdims)), [_t(x, _sym(x))])


def argmax(x, axis=None, keepdims=False):
    """Index of the largest value along `axis` (int32)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    """Index of the smallest value along `axis` (int32)."""
    return _arg("argmin", x, axis, keepdims)


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """One-hot encoding of integer ids (float32); ids outside [0, num_classes) give zero rows."""
    if sparse:
        raise ValueError("one_hot(sparse=True) is not supported; use the dense result.")
    x = _t(x, _sym(x))
    if not isinstance(x, KerasTensor):
        x = np.asarray(x).astype(np.int64)
    return apply_op(OneHotOp(int(num_classes), int(axis), str(np.dtype(dtype or "float32"))), [x])


def top_k(x, k, sorted=True):  # noqa: A002 - the Keras argument name
    """(values, indices) of the `k` largest entries of the last axis, largest first."""
    return apply_op(TopKOp(int(k)), [_t(x, _sym(x))])


def in_top_k(targets, predictions, k):
    """Whether each target class id is among the `k` largest predictions of its row (bool)."""
    sym = _sym(targets, predictions)
    t = _t(targets, sym)
    if not sym:
        t = np.asarray(t).astype(np.int64)
    chosen = take_along_axis(predictions, F.expand_dims(t, -1), axis=-1)
    kth = get_item(top_k(predictions, k)[0], (_slice(None), _slice(k - 1, k)))
    return F.squeeze(F.greater_equal(chosen, kth), -1) if sym else np.squeeze(chosen >= kth, -1)
