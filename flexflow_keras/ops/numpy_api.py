"""More of Keras 3's `keras.ops` (the NumPy-like API): creation, shapes, indexing, selection, scans and
statistics. Symbolic on KerasTensors (recording graph ops with backward passes), eager on arrays.

``ops.shape(x)`` of a symbolic tensor gives its batch as a `BatchDim` (printed ``None``) that remembers x,
so a shape built from it (``ops.zeros((ops.shape(x)[0], 4))``, ``ops.reshape(y, (ops.shape(x)[0], -1))``)
takes its batch from x at run time, and ``ops.cast(ops.shape(x)[0], "float32")`` is the batch size.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import assign_in_call
from flexflow_keras.ops import dynamic_dims as _dyn
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.array_ops import (
    ArgReduceOp,
    BroadcastToOp,
    GatherOp,
    IndexOp,
    OneHotOp,
    RepeatOp,
    TakeAlongAxisOp,
    TileOp,
    TopKOp,
)
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.dtype_rules import python_dtype
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor, StaticBatch, Variable
from flexflow_keras.ops.random_ops import BatchSizeOp, FillOp
from kernels.reduce import normalize_axes

__all__ = ["BatchDim", "full", "ones", "zeros", "full_like", "ones_like", "zeros_like", "arange", "eye", "identity",
           "convert_to_tensor", "convert_to_numpy", "is_tensor", "shape", "reshape", "stack", "split",
           "broadcast_to", "tile", "repeat", "swapaxes", "get_item", "slice", "flip", "take", "gather",
           "take_along_axis", "argmax", "argmin", "one_hot", "top_k", "in_top_k", "dot", "einsum", "cast", "logical_not"]

_sym = F._symbolic
_slice = builtins.slice
_t = F._tensor


@_dyn.no_arithmetic
class BatchDim:
    """The batch entry of ``ops.shape(x)`` for a symbolic x: unknown until run time, tied to x."""

    _is_dim = True  # (ops/dynamic_dims.py: shapes, ranges and batch repeats built from unknown dims)

    def __init__(self, ref: KerasTensor):
        self.ref = ref

    def __repr__(self) -> str:
        return "None"

    def _dim_words(self) -> str:
        return "ops.shape(x)[0] of a symbolic tensor (the batch size)"

    def __index__(self):
        raise TypeError("ops.shape(x)[0] of a symbolic tensor is the batch size, unknown while the graph is "
                        "built; pass it to ops functions (zeros, reshape, random.normal, cast) rather than to "
                        "Python code that needs a number.")


def _as_batch_dim(s):
    """`s` itself, or the `BatchDim` a 0-d tensor holds when it is the batch size cast to a number
    (``tf.cast(tf.shape(y_true)[0], "int64")``, as keras.io's CTC losses write it before ``tf.ones``)."""
    from flexflow_keras.ops.math_ops import CastOp

    if isinstance(s, StaticBatch):  # x.shape[0] of an Input(batch_shape=(16, ...)): the batch, as ops.shape(x)[0]
        return BatchDim(s.ref) if s.ref is not None else int(s)
    node = s.node if isinstance(s, KerasTensor) and s.ndim == 0 else None
    while node is not None and isinstance(node.op, CastOp) and np.dtype(node.op.dtype).kind in "iuf":
        node = node.inputs[0].node if node.inputs[0].ndim == 0 else None
    if node is not None and isinstance(node.op, BatchSizeOp):
        return BatchDim(node.inputs[0])
    return s


def _shape_and_ref(shape, who: str):
    """(shape with None for the batch, the reference tensor or None)."""
    if isinstance(shape, int | np.integer | BatchDim | KerasTensor):
        shape = (shape,)
    ref, out = None, []
    for i, s in enumerate(tuple(shape)):
        s = _as_batch_dim(s) if i == 0 else _as_batch_dim(s) if not isinstance(s, StaticBatch) else int(s)
        if isinstance(s, BatchDim):
            if i != 0:
                raise ShapeError(f"{who}: the batch size (ops.shape(x)[0]) can only be the first dim of a shape, "
                                 f"received it at position {i}.")
            ref = s.ref
            out.append(None)
        elif s is None:
            raise ShapeError(f"{who}: shape {tuple(shape)} has an unknown dim; use ops.shape(x)[0] for the batch.")
        elif isinstance(s, KerasTensor):
            raise ShapeError(f"{who}: shape entry {i} is a symbolic tensor computed in the model ({s.name}); a "
                             f"shape takes numbers, or the batch size ops.shape(x)[0] (cast or not) first.")
        else:
            out.append(int(s))
    return tuple(out), ref


# --- creation ----------------------------------------------------------------------------------------------
def full(shape, fill_value, dtype=None):
    """A tensor of `shape` filled with `fill_value` (eager unless the shape holds ``ops.shape(x)[0]``)."""
    dims, ref = _shape_and_ref(shape, "full")
    dtype = str(np.dtype(dtype or ("float32" if isinstance(fill_value, float) else np.asarray(fill_value).dtype)))
    if ref is None:
        return np.full(dims, fill_value, dtype=dtype)
    return apply_op(FillOp(dims, float(fill_value), dtype), [ref])


def ones(shape, dtype=None):
    """A tensor of ones (float32 by default)."""
    return full(shape, 1.0, dtype or "float32")


def zeros(shape, dtype=None):
    """A tensor of zeros (float32 by default)."""
    return full(shape, 0.0, dtype or "float32")


def full_like(x, fill_value, dtype=None):
    """A tensor of x's shape filled with `fill_value` (x's dtype by default)."""
    dtype = str(np.dtype(dtype or x.dtype))
    if isinstance(x, KerasTensor):
        ref = [x] if x.ndim and x.shape[0] is None else []
        return apply_op(FillOp(tuple(x.shape), float(fill_value), dtype), ref)
    return np.full(np.shape(x), fill_value, dtype=dtype)


def ones_like(x, dtype=None):
    """Ones of x's shape and dtype."""
    return full_like(x, 1, dtype)


def zeros_like(x, dtype=None):
    """Zeros of x's shape and dtype."""
    return full_like(x, 0, dtype)


def arange(start, stop=None, step=1, dtype=None):
    """``np.arange`` (eager): int32 for integer arguments, float32 otherwise; over an open length of a symbolic
    tensor (``ops.shape(x)[1]``) a tensor of that length (ops/dynamic_dims.py)."""
    if _dyn.is_dim(start) or _dyn.is_dim(stop):
        return _dyn.arange(start, stop, step, dtype)
    out = np.arange(start, stop, step) if stop is not None else np.arange(start)
    return out.astype(dtype or ("int32" if out.dtype.kind in "iu" else "float32"))


def eye(N, M=None, k=0, dtype=None):
    """An identity-like matrix (eager)."""
    return np.eye(N, M, k, dtype=dtype or "float32")


def identity(n, dtype=None):
    """The n x n identity matrix, as Keras 3's `keras.ops.identity` (eager; float32 unless `dtype`)."""
    return np.identity(n, dtype=dtype or "float32")


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """x as a tensor: KerasTensors as they are (cast to `dtype`), everything else an `EagerTensor`, which a
    GradientTape can watch. Python numbers and lists of them take TensorFlow's dtypes (`python_dtype`: ints
    int32, floats float32, bools bool); NumPy float64 values are narrowed to float32."""
    if isinstance(x, Variable) and (F._symbolic_calls[0] > 0):
        # a weight in a layer's call(): the graph's read of it, so the model computes on its value at each
        # step (as its value it was a constant of the build-time weights, which set_weights and training
        # never reached: keras.io FNet's PositionEmbedding)
        x = F._tensor(x, True)
    if isinstance(x, KerasTensor):
        return x if dtype is None or np.dtype(dtype) == np.dtype(x.dtype) else F.cast(x, dtype)
    if dtype is None:
        dtype = python_dtype(x)
    arr = np.asarray(x.value if isinstance(x, Variable) else x, dtype=dtype)
    return eager(arr.astype("float32") if dtype is None and arr.dtype == np.float64 else arr)


def convert_to_numpy(x):
    """x as a NumPy array (a KerasTensor is symbolic and raises, saying so)."""
    return np.asarray(x)


def is_tensor(x) -> bool:
    """Whether x is a tensor (an array or a symbolic tensor)."""
    return isinstance(x, np.ndarray | KerasTensor)


# --- shapes ------------------------------------------------------------------------------------------------
def shape(x) -> tuple:
    """x's shape; the batch of a symbolic tensor is a `BatchDim` (see the module docstring)."""
    if isinstance(x, KerasTensor) and x.dtype == "string":  # the graph reads a string input's shape from
        from flexflow_keras.layers.host_shape_step import numeric_stand_in  # numbers made on the host

        x = numeric_stand_in(x)
    if isinstance(x, KerasTensor):
        return tuple((BatchDim(x) if i == 0 else _dyn.SeqDim(x, i)) if s is None else s for i, s in enumerate(x.shape))
    return tuple(int(s) for s in np.shape(x))


def reshape(x, new_shape, name=None):
    """Reshape to `new_shape` (the whole shape, batch first; -1, None or ops.shape(x)[0] for the batch)."""
    if isinstance(new_shape, int | np.integer):
        new_shape = (int(new_shape),)
    if isinstance(new_shape, _dyn.ShapeVector) or any(isinstance(s, _dyn.SeqDim) for s in new_shape):
        return _dyn.reshape(x, tuple(new_shape))
    dims = [-1 if isinstance(s, BatchDim) else s for s in new_shape]
    if dims and isinstance(dims[0], StaticBatch) and _sym(x) and x.spec.shape[:1] == (None,):
        ref = getattr(dims[0], "ref", None)  # another tensor's declared batch: its rows per sample, as below
        if isinstance(ref, KerasTensor) and -1 in dims[1:] and ref.batch_scale != x.batch_scale:
            dims = _rows_of(ref, x, dims)
        else:
            dims = _declared_batch_reshape(x, dims)
    elif dims and isinstance(new_shape[0], BatchDim) and _sym(x) and -1 in dims[1:] and \
            (getattr(new_shape[0].ref, "batch_scale", 1) != x.batch_scale or x.batch_scale > 1):
        dims = _rows_of(new_shape[0].ref, x, dims)  # the rows of the tensor whose batch size it names
    return F.reshape(x, dims, name)


def _rows_of(ref: KerasTensor, x: KerasTensor, dims: list) -> list:
    """``ops.reshape(x, (ops.shape(ref)[0], -1, ...))`` where x and ref count their batch rows differently (a
    reshape folded blocks of each sample into one of them: ops/graph.py's `batch_scale`): the target with
    the other -1 resolved so the output has ref's rows per sample, as the batch size of ref would give."""
    rest = list(dims[1:])
    if None in x.spec.shape[1:]:
        return dims
    per_sample = math.prod(int(s) for s in x.spec.shape[1:]) * x.batch_scale
    block = ref.batch_scale * math.prod(int(s) for s in rest if s != -1)
    if not block or per_sample % block:
        raise ShapeError(f"reshape: {x.name} {tuple(x.spec.shape)} holds {per_sample} elements per sample, which do "
                         f"not divide into {ref.batch_scale} rows of {tuple(dims[1:])} (the rows per sample of "
                         f"{ref.name}, whose batch size the target's first entry is).")
    rest[rest.index(-1)] = per_sample // block
    return [-1] + rest


def _declared_batch_reshape(x, dims: list) -> list:
    """``ops.reshape(x, (x.shape[0], -1))`` where x.shape[0] is a declared batch (16): the graph's open batch
    first, and the other -1 (if any) from x's per-sample size, so every batch size fits as the graph does."""
    rest = list(dims[1:])
    if -1 in rest and None not in x.spec.shape[1:]:
        known = math.prod(int(s) for s in rest if s != -1)
        rest[rest.index(-1)] = math.prod(x.spec.shape[1:]) // max(known, 1)
    return [-1] + rest


def stack(xs, axis=0):
    """Join tensors along a new `axis`; dims of ``ops.shape(x)`` make a shape vector."""
    xs = list(xs)
    if any(_dyn.is_dim(x) or isinstance(x, _dyn.ShapeVector) for x in xs):
        return _dyn.vector(xs)
    nd = F._ndim(xs[0]) + 1
    if axis % nd == 0 and builtins.any(isinstance(x, KerasTensor) and x.shape and x.shape[0] is None for x in xs):
        return BatchSecondStack(xs)
    return F.concatenate([F.expand_dims(x, axis % nd) for x in xs], axis=axis % nd)


class StackedBeforeBatchError(ShapeError, AttributeError):
    """A use of a `BatchSecondStack` other than the transpose that puts the batch first: a ShapeError, and an
    AttributeError for a missing attribute, so ``hasattr(s, "numpy")`` is False."""


class BatchSecondStack:
    """``stack(xs, axis=0)`` of symbolic tensors whose first dim is the batch: a graph tensor keeps the batch
    first, so the parts are kept until a transpose puts the batch back in front (``tf.transpose(s, [1, 0, 2])``
    after stacking a decoder's step outputs, as TensorFlow's time-series tutorial's FeedBack model does; also
    ``moveaxis(s, 0, 1)`` and ``swapaxes(s, 0, 1)``); that transpose stacks them on axis 1, and
    ``unstack(s, axis=0)`` gives the parts back. Indexing on axis 0 and softmax / log_softmax / reductions
    along an axis work too (ops/batch_second.py). Any other use is an error that says how to write it."""

    def __init__(self, parts: list):
        self.parts = parts

    @property
    def shape(self) -> tuple:
        return (len(self.parts),) + tuple(self.parts[0].shape)

    def error(self) -> StackedBeforeBatchError:
        return StackedBeforeBatchError(
            f"stack: {len(self.parts)} symbolic tensors of shape {tuple(self.parts[0].shape)} stacked on axis 0 put "
            f"the new axis before the batch dim; flexflow_keras keeps the batch first in every tensor of a model, "
            f"so such a stack can only be transposed to put the batch first again (tf.transpose(s, [1, 0, 2]), "
            f"ops.moveaxis(s, 0, 1), ops.swapaxes(s, 0, 1)), unstacked on axis 0, indexed on axis 0 (s[i], s[a:b]), or "
            f"given to softmax, log_softmax or a reduction (sum, mean, max, min, prod, logsumexp) along an axis. "
            f"Stack on axis=1 and index [:, i] instead (keras.ops.stack(xs, axis=1)).")

    def transposed(self, perm) -> KerasTensor:
        """The stack transposed by `perm` (whose first entry must be 1, the batch)."""
        nd = len(self.shape)
        perm = [int(p) % nd for p in perm]
        if sorted(perm) != list(range(nd)) or perm[0] != 1:
            raise self.error()
        moved = [{0: 1, 1: 0}.get(p, p) for p in perm]  # the axes of the batch-first stack
        out = stack(self.parts, axis=1)
        return out if moved == list(range(nd)) else F.transpose(out, moved)

    def unstacked(self, axis) -> list:
        """The parts (unstack on axis 0, the stacking axis)."""
        if int(axis) % len(self.shape) != 0:
            raise self.error()
        return list(self.parts)

    def __getitem__(self, key):
        """``s[i]`` is part i, ``s[a:b]`` a stack of parts (ops/batch_second.py)."""
        from flexflow_keras.ops import batch_second

        return batch_second.item(self, key)

    def __len__(self) -> int:
        return len(self.parts)

    def __iter__(self):
        return iter(self.parts)

    def __getattr__(self, name):
        raise self.error()

    def _refuse(self, *args, **kwargs):
        raise self.error()

    __array__ = __bool__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _refuse
    __neg__ = __pos__ = __abs__ = _refuse


def split(x, indices_or_sections, axis=0):
    """Split along `axis` into equal sections (an int) or at the given indices."""
    size = shape(x)[axis]
    if isinstance(indices_or_sections, int | np.integer):
        n = int(indices_or_sections)
        if not isinstance(size, int) or size % n:
            raise ShapeError(f"split: axis {axis} of size {size} does not divide into {n} equal sections.")
        cuts = [size // n * i for i in range(1, n)]
    else:
        cuts = [int(i) for i in indices_or_sections]
    bounds = [0, *cuts, size]
    nd = F._ndim(x)
    out = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        key = [_slice(None)] * nd
        key[axis % nd] = _slice(a, b)
        out.append(get_item(x, tuple(key)))
    return out


def broadcast_to(x, shape, name=None):
    """x broadcast to `shape` (None or ops.shape(y)[0] for a symbolic batch)."""
    if isinstance(shape, tuple | list) and shape and isinstance(shape[0], StaticBatch):
        shape = (_as_batch_dim(shape[0]),) + tuple(shape[1:])  # a declared batch: the batch fed, as ops.shape
    if _dyn.holds_dims(shape) and not (_sym(x) and tuple(x.shape)[:1] == (None,)):
        return _dyn.broadcast_to(_t(x, True), shape)
    dims = tuple(None if isinstance(s, BatchDim) or s is None else int(s) for s in shape)
    if not _sym(x) and not _tape.recording():
        return np.broadcast_to(np.asarray(x), dims).copy()
    return apply_op(BroadcastToOp(dims), [x if _sym(x) else np.asarray(x)], name=name)


def tile(x, repeats):
    """x repeated `repeats` times along each dim (NumPy's rule when the lengths differ); repeats holding
    ``ops.shape(y)[0]`` repeat a leading 1 over y's batch (ops/dynamic_dims.py)."""
    if _dyn.holds_dims(repeats) or (isinstance(repeats, np.ndarray) and repeats.dtype == object):
        return _dyn.tile(_t(x, True), list(repeats))
    reps = (int(repeats),) if isinstance(repeats, int | np.integer) else tuple(int(r) for r in repeats)
    nd = F._ndim(x)
    if len(reps) > nd:
        if _sym(x):
            raise ShapeError(f"tile: {len(reps)} repeats for a {nd}-D symbolic tensor would add dims before its "
                             f"batch dim; give one repeat per dim.")
        x = np.reshape(np.asarray(x), (1,) * (len(reps) - nd) + np.shape(x))
        nd = len(reps)
    reps = (1,) * (nd - len(reps)) + reps
    return apply_op(TileOp(reps), [_t(x, _sym(x))])


def repeat(x, repeats, axis=None):
    """Each element repeated `repeats` (an int) times along `axis` (None: the flattened x, eager only)."""
    if isinstance(repeats, BatchDim):
        return _dyn.repeat(_t(x, True), repeats, axis)
    if axis is None:
        if _sym(x):
            raise ShapeError("repeat(axis=None) flattens the batch into the data; give an axis >= 1.")
        if not _tape.recording():
            return np.repeat(np.asarray(x), repeats)
        x, axis = F.reshape(x, (-1,)), 0
    return apply_op(RepeatOp(int(repeats), int(axis)), [_t(x, _sym(x))])


def swapaxes(x, axis1, axis2):
    """Swap two dims."""
    nd = len(x.shape) if isinstance(x, BatchSecondStack) else F._ndim(x)
    perm = list(range(nd))
    perm[axis1 % nd], perm[axis2 % nd] = perm[axis2 % nd], perm[axis1 % nd]
    return F.transpose(x, perm)


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


# --- products ---------------------------------------------------------------------------------------------------
def dot(a, b):
    """``np.dot`` for 1-D and 2-D operands, and N-D x 2-D (the last axis of a with b's first)."""
    return F.matmul(a, b)


def einsum(subscripts, *operands):
    """Einstein summation over one or two operands (see `EinsumOp`)."""
    from flexflow_keras.ops.einsum_op import einsum as _einsum

    return _einsum(subscripts, *operands)


def cast(x, dtype, name=None):
    """``x`` converted to `dtype`; the batch size (``ops.shape(x)[0]``) becomes a 0-d tensor. To "string",
    string data is returned as it is (TensorFlow's `tf.cast` of strings to strings); numbers are refused,
    as TensorFlow refuses them."""
    if str(dtype) == "string":
        return _cast_to_string(x)
    if isinstance(x, BatchDim):
        rows = int(getattr(x.ref, "batch_scale", 1) or 1)  # a folded tensor's rows: k per sample
        return F.cast(apply_op(BatchSizeOp(rows=rows), [x.ref]), dtype, name)
    if isinstance(x, _dyn.SeqDim):
        ones = F.add(F.multiply(_dyn.arange(0, x, 1, "float32"), 0.0), 1.0)  # (n,) ones: n is their sum
        return F.cast(F.sum(ones, axis=0), dtype, name)
    return F.cast(x, dtype, name)


def _cast_to_string(x):
    numeric = isinstance(x, (KerasTensor, Variable, BatchDim, _dyn.SeqDim))
    if getattr(x, "dtype", None) == "string" or (not numeric and np.asarray(x).dtype.kind in "OSU"):
        return x
    from flexflow_keras.errors import ArgumentError

    raise ArgumentError(f"cast(x, 'string') received {getattr(x, 'dtype', type(x).__name__)} data; TensorFlow "
                        f"casts only strings to 'string' (it returns them as they are). Convert numbers with "
                        f"tf.strings.as_string(x), or keep them numeric.")


def logical_not(x):
    """Element-wise not (bool)."""
    return F.equal(x, False)
