"""Keras 3's `keras.ops` (the NumPy-like API): creation, shapes, products and casts, and the namespace that
re-exports its indexing and selection (numpy_indexing.py). Symbolic on KerasTensors (recording graph ops with
backward passes), eager on arrays.

``ops.shape(x)`` of a symbolic tensor gives its batch as a `BatchDim` (printed ``None``) that remembers x,
so a shape built from it (``ops.zeros((ops.shape(x)[0], 4))``, ``ops.reshape(y, (ops.shape(x)[0], -1))``)
takes its batch from x at run time, and ``ops.cast(ops.shape(x)[0], "float32")`` is the batch size.
``ops.stack(xs, axis=0)`` of batch-first symbolic tensors is a `BatchSecondStack` (ops/batch_second.py).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import dynamic_dims as _dyn
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.array_ops import BroadcastToOp, RepeatOp, TileOp
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.batch_second import BatchSecondStack, StackedBeforeBatchError  # noqa: F401
from flexflow_keras.ops.dtype_rules import dtype_of, python_dtype
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor, StaticBatch, Variable
from flexflow_keras.ops.numpy_indexing import (  # noqa: F401 - keras.ops' indexing and selection, re-exported
    _basic,
    _ints,
    _lookup_rows,
    _row_lookup,
    _static_key,
    argmax,
    argmin,
    flip,
    gather,
    get_item,
    in_top_k,
    one_hot,
    slice,
    take,
    take_along_axis,
    top_k,
)
from flexflow_keras.ops.random_ops import BatchSizeOp, FillOp

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
    """A tensor of x's shape filled with `fill_value` (x's dtype by default; a list or Python number has
    Keras' dtype: int32, float32 or bool)."""
    dtype = str(np.dtype(dtype or dtype_of(x)))
    if isinstance(x, KerasTensor):
        if None in tuple(x.shape)[1:] and x.dtype != "string":
            # open lengths past the batch (Input(shape=(None,)), a transformer's positions from
            # ops.cumsum(ops.ones_like(ids))): x == x or x != x is True everywhere, NaN too, at run-time shape
            from flexflow_keras import ops as K

            ones = K.cast(K.logical_or(K.equal(x, x), K.not_equal(x, x)), dtype)
            return ones if fill_value == 1 else K.multiply(ones, K.cast(fill_value, dtype))
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


def reshape(x, newshape, name=None):
    """Reshape to `newshape` (Keras 3's keyword): the whole shape, batch first; -1, None or ops.shape(x)[0]
    for the batch."""
    if isinstance(newshape, int | np.integer):
        newshape = (int(newshape),)
    if isinstance(newshape, _dyn.ShapeVector) or any(isinstance(s, _dyn.SeqDim) for s in newshape):
        return _dyn.reshape(x, tuple(newshape))
    dims = [-1 if isinstance(s, BatchDim) else s for s in newshape]
    if dims and isinstance(dims[0], StaticBatch) and _sym(x) and x.spec.shape[:1] == (None,):
        ref = getattr(dims[0], "ref", None)  # another tensor's declared batch: its rows per sample, as below
        if isinstance(ref, KerasTensor) and -1 in dims[1:] and ref.batch_scale != x.batch_scale:
            dims = _rows_of(ref, x, dims)
        else:
            dims = _declared_batch_reshape(x, dims)
    elif dims and isinstance(newshape[0], BatchDim) and _sym(x) and -1 in dims[1:] and \
            (getattr(newshape[0].ref, "batch_scale", 1) != x.batch_scale or x.batch_scale > 1):
        dims = _rows_of(newshape[0].ref, x, dims)  # the rows of the tensor whose batch size it names
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
