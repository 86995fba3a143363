"""TensorFlow's array functions that public tf.keras scripts call and `python -m flexflow_keras` runs as
`keras.ops` (tf_compat.py's `mapped_call` looks here): creation, reordering, selection and masks.

Each takes TensorFlow's argument names and defaults and gives TensorFlow's result and dtype; each runs
eagerly and, where its keras.ops functions do, on symbolic tensors in a model. An argument only TensorFlow's
function has is left out of the signature, so the runner refuses it with a `RawTensorFlowError`; a value
this framework cannot give TensorFlow's meaning (a symbolic `tf.boolean_mask`, whose length depends on
the data) is refused the same way, naming the call.

Mapped: `tf.fill`, `tf.reverse`, `tf.boolean_mask`, `tf.sequence_mask`, `tf.broadcast_to`, `tf.roll`,
`tf.rank`, `tf.size`, `tf.sort`, `tf.argsort`, `tf.meshgrid`, `tf.linalg.band_part`,
`tf.nn.embedding_lookup`, `tf.ensure_shape`, `tf.slice` and `tf.strided_slice` (every mask; on a model's
symbolic tensor the batch axis stays whole), `tf.convert_to_tensor` (a tensor, symbolic ones included, comes
back as it is).
"""

from __future__ import annotations

import builtins

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid, refuse
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_convert import tensor as _tensor


def _refuse(call: str, why: str):
    refuse(call, why, "Use the keras.ops function it names, or run the script with TensorFlow itself.")


def _axes(axis, who: str) -> tuple[int, ...]:
    values = np.asarray(axis).reshape(-1)
    if values.dtype.kind not in "iu":
        _refuse(who, f"expects integer axes, received axis={axis!r}.")
    return tuple(int(a) for a in values)


def fill(dims, value, name=None):
    """`tf.fill(dims, value)`: `dims` filled with `value`, of the dtype TensorFlow gives the value (a Python
    float float32, a Python int int32); keras.ops.full (``ops.shape(x)[0]`` in dims: one row per sample)."""
    from flexflow_keras.tf_compat import _converted_dtype

    if np.ndim(value) != 0:
        _refuse("tf.fill", f"expects a scalar value, received one of shape {np.shape(value)}.")
    if isinstance(value, KerasTensor):
        _refuse("tf.fill", "takes a number for value here, not a symbolic tensor (keras.ops.full_like).")
    dtype = getattr(value, "dtype", None) or _converted_dtype(value)
    shape = tuple(dims) if isinstance(dims, list | tuple) else tuple(np.asarray(dims).reshape(-1).tolist())
    return _ops().full(shape, np.asarray(value).item(), dtype=str(np.dtype(dtype)))


def reverse(tensor, axis, name=None):
    """`tf.reverse(tensor, axis)`: reversed along each of the (list of) axes; keras.ops.flip."""
    return _ops().flip(_tensor(tensor), axis=_axes(axis, "tf.reverse"))


def boolean_mask(tensor, mask, axis=None, name=None):
    """`tf.boolean_mask(tensor, mask, axis=0)`: the entries of `tensor` where the k-dim `mask` is True (over
    dims axis .. axis+k-1, flattened into one). Eager only (the length depends on the mask's values); a
    GradientTape sees it (a keras.ops.take of the kept positions)."""
    ops = _ops()
    if isinstance(tensor, KerasTensor) or isinstance(mask, KerasTensor):
        _refuse("tf.boolean_mask", "gives a tensor whose length depends on the mask's values, which a model's "
                                   "graph cannot hold; multiply by the mask (x * ops.cast(mask, x.dtype)) or "
                                   "use ops.where(mask, x, 0) in a model, or select with NumPy before fit.")
    tensor, mask = _tensor(tensor), np.asarray(mask, dtype=bool)
    axis = 0 if axis is None else int(axis)
    shape = tuple(np.shape(tensor))
    axis = axis + len(shape) if axis < 0 else axis
    k = mask.ndim
    if k == 0 or shape[axis:axis + k] != mask.shape:
        _refuse("tf.boolean_mask", f"expects a mask of shape {shape[axis:axis + k] or '(at least 1 dim)'} "
                                   f"(the tensor's dims from axis {axis}), received {mask.shape}.")
    flat = ops.reshape(tensor, shape[:axis] + (-1,) + shape[axis + k:])
    return ops.take(flat, np.flatnonzero(mask).astype("int32"), axis=axis)


def sequence_mask(lengths, maxlen=None, dtype="bool", name=None):
    """`tf.sequence_mask(lengths, maxlen)`: ``mask[..., j] = j < lengths[...]``, maxlen the largest length by
    default (a symbolic `lengths` needs maxlen)."""
    ops = _ops()
    if maxlen is None:
        if isinstance(lengths, KerasTensor):
            _refuse("tf.sequence_mask", "needs maxlen on a symbolic tensor (the longest length is known only "
                                        "at run time).")
        lengths_np = np.asarray(lengths)
        maxlen = int(lengths_np.max()) if lengths_np.size else 0
    mask = ops.less(ops.arange(int(maxlen)), ops.expand_dims(ops.cast(lengths, "int32"), -1))
    return mask if np.dtype(dtype) == np.bool_ else ops.cast(mask, str(np.dtype(dtype)))


def broadcast_to(input, shape, name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.broadcast_to(input, shape)`; keras.ops.broadcast_to."""
    return _ops().broadcast_to(_tensor(input), tuple(int(s) for s in np.asarray(shape).reshape(-1)))


def roll(input, shift, axis, name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.roll(input, shift, axis)`: each of the (lists of) shifts along its axis; keras.ops.roll."""
    shifts, axes = _axes(shift, "tf.roll"), _axes(axis, "tf.roll")
    if len(shifts) != len(axes):
        _refuse("tf.roll", f"expects one shift per axis, received shift={shift!r} and axis={axis!r}.")
    out = _tensor(input)
    for s, a in zip(shifts, axes, strict=True):
        out = _ops().roll(out, s, axis=a)
    return out


def rank(input, name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.rank(x)`: the number of dims, an int32 scalar tensor."""
    from flexflow_keras.ops.eager_tensor import eager

    return eager(np.int32(len(np.shape(input)) if not isinstance(input, KerasTensor) else input.ndim))


def size(input, out_type="int32", name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.size(x)`: the number of elements, a scalar of `out_type` (eager: a model's batch is unknown)."""
    return _ops().cast(_ops().size(input), str(np.dtype(out_type)))


def _direction(direction: str, who: str) -> bool:
    if str(direction).upper() not in ("ASCENDING", "DESCENDING"):
        _refuse(who, f"expects direction 'ASCENDING' or 'DESCENDING', received {direction!r}.")
    return str(direction).upper() == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`tf.sort(values, axis, direction)`; keras.ops.sort, reversed for DESCENDING."""
    ops = _ops()
    out = ops.sort(_tensor(values), axis=axis)
    return ops.flip(out, axis=axis) if _direction(direction, "tf.sort") else out


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """`tf.argsort(values, axis, direction, stable)`: int32 indices; ties keep their order (stable), in
    either direction, as TensorFlow's stable sort."""
    from flexflow_keras.ops.eager_tensor import eager

    if isinstance(values, KerasTensor):
        return _ops().argsort(_ops().negative(values) if _direction(direction, "tf.argsort") else values, axis)
    v = np.asarray(values)
    if _direction(direction, "tf.argsort"):
        # descending and stable: sort the reversed array ascending-stably by negated rank, then map back
        n = v.shape[axis]
        rev = np.flip(v, axis=axis)
        order = np.flip(np.argsort(rev, axis=axis, kind="stable"), axis=axis)
        return eager((n - 1 - order).astype(np.int32))
    return eager(np.argsort(v, axis=axis, kind="stable").astype(np.int32))


def meshgrid(*tensors, indexing="xy", name=None):
    """`tf.meshgrid(*tensors, indexing="xy")`; keras.ops.meshgrid."""
    return list(_ops().meshgrid(*(_tensor(t) for t in tensors), indexing=indexing))


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.linalg.band_part(x, num_lower, num_upper)`: x's last two dims kept within `num_lower` below and
    `num_upper` above the diagonal (negative: all of that side), zeros elsewhere; the causal mask of
    attention is ``band_part(ones((n, n)), -1, 0)``."""
    ops = _ops()
    input = _tensor(input)  # noqa: A001 (TensorFlow's argument name)
    rows, cols = (int(d) for d in tuple(input.shape if isinstance(input, KerasTensor) else np.shape(input))[-2:])
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    lower, upper = int(num_lower), int(num_upper)
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return ops.where(keep, input, ops.zeros_like(input))


def embedding_lookup(params, ids, name=None):
    """`tf.nn.embedding_lookup(params, ids)`: rows of `params` (one table) at `ids`; keras.ops.take on axis 0.
    A list of tables (sharded params) is not mapped."""
    if isinstance(params, list | tuple):
        if len(params) != 1:
            _refuse("tf.nn.embedding_lookup", "takes one table here, not a list of shards.")
        params = params[0]
    return _ops().take(_tensor(params), ids, axis=0)


def ensure_shape(x, shape, name=None):
    """`tf.ensure_shape(x, shape)`: x itself when its shape is compatible with `shape` (None entries, and a
    model's unknown batch dim, match any size; `shape` None matches any rank); otherwise TensorFlow's
    InvalidArgumentError naming both shapes."""
    from flexflow_keras.tf_compat import InvalidArgumentError

    x = _tensor(x)
    if shape is None:
        return x
    want = [None if d is None or (not isinstance(d, KerasTensor) and int(d) < 0) else int(d) for d in shape]
    have = list(x.shape) if isinstance(x, KerasTensor) else list(np.shape(x))
    if len(have) != len(want) or any(h is not None and w is not None and h != w
                                     for h, w in zip(have, want, strict=True)):
        def text(dims):
            return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
        raise InvalidArgumentError(f"Shape of tensor {name or 'input'} {text(have)} is not compatible with "
                                   f"expected shape {text(want)}. [Op:EnsureShape] tf.ensure_shape checks a "
                                   f"tensor's shape: reshape the tensor or fix the expected shape.")
    return x


def _shape_of(x) -> tuple:
    return tuple(x.shape) if isinstance(x, KerasTensor) else np.shape(x)


def _int_vector(v, who: str, what: str) -> list[int]:
    values = np.asarray(v)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        _refuse(who, f"expects {what} as a 1-D list of integers, received {what}={v!r}.")
    return [int(i) for i in values]


def _index(x, key, who: str):
    """x[key] (ints, slices, None, ...) as keras.ops.get_item, which a GradientTape sees; on a model's
    symbolic tensor the key must keep the batch axis whole (its first entry ``:`` or ``...``)."""
    key = tuple(builtins.slice(k.start, k.stop, None if k.step == 1 else k.step) if isinstance(k, builtins.slice)
                else k for k in key)  # a step of 1 as Python's default (a symbolic batch axis is ``:``)
    if isinstance(x, KerasTensor):
        first = key[0] if key else Ellipsis
        whole = first is Ellipsis or (isinstance(first, builtins.slice) and first.start in (None, 0)
                                      and first.stop is None and first.step in (None, 1))
        if not whole:
            _refuse(who, f"on a model's symbolic tensor {_shape_of(x)} keeps the batch axis whole (begin 0 and "
                         f"size -1 / the begin and end mask bit 0 set); slice the batch outside the model, or "
                         f"slice only the other axes.")
        if isinstance(first, builtins.slice):
            key = (builtins.slice(None),) + key[1:]
    return _ops().get_item(x, key)


def slice(input_, begin, size, name=None):  # noqa: A001 (TensorFlow's name)
    """`tf.slice(input_, begin, size)`: the block of `size` starting at `begin` (a size of -1: to the end
    of that axis); TensorFlow's InvalidArgumentError when the block leaves the tensor. On a model's symbolic
    tensor, the batch axis only as begin 0, size -1."""
    input_ = _tensor(input_)
    dims = _shape_of(input_)
    begin, size = _int_vector(begin, "tf.slice", "begin"), _int_vector(size, "tf.slice", "size")
    if len(begin) != len(dims) or len(size) != len(dims):
        invalid(f"Expected begin and size arguments to be 1-D tensors of size {len(dims)}, but got shapes "
                f"[{len(begin)}] and [{len(size)}] instead. [Op:Slice] tf.slice takes one begin and one size per "
                f"axis of the input.")
    key = []
    for axis, (b, n, d) in enumerate(zip(begin, size, dims, strict=True)):
        if d is None:  # a model's batch axis
            key.append(builtins.slice(None) if (b, n) == (0, -1) else (b, n))
            continue
        if not 0 <= b <= d:
            invalid(f"Expected begin[{axis}] in [0, {d}], but got {b} [Op:Slice]")
        if n == -1:
            n = d - b
        if not 0 <= n <= d - b:
            invalid(f"Expected size[{axis}] in [0, {d - b}], but got {n} [Op:Slice]")
        key.append(builtins.slice(b, b + n))
    if key and not isinstance(key[0], builtins.slice):
        _refuse("tf.slice", f"on a model's symbolic tensor {dims} keeps the batch axis whole (begin 0 and size "
                            f"-1 on axis 0), received begin={begin}, size={size}; slice the batch outside the model.")
    return _index(input_, tuple(key), "tf.slice")


def _bits(mask: int, n: int) -> list[bool]:
    return [bool(int(mask) >> i & 1) for i in range(n)]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, name=None):
    """`tf.strided_slice(input_, begin, end, strides)`: Python's ``x[b0:e0:s0, ...]`` with TensorFlow's masks:
    bit i of `begin_mask` / `end_mask` leaves out begin[i] / end[i] (the whole axis that way), of
    `shrink_axis_mask` takes the one index begin[i] (the axis removed), of `new_axis_mask` inserts an axis,
    of `ellipsis_mask` stands for the axes left. Out-of-range begins and ends are clamped as in Python; an
    out-of-range shrunk index is TensorFlow's InvalidArgumentError. A GradientTape sees it; on a model's
    symbolic tensor the batch axis stays whole."""
    input_ = _tensor(input_)
    begin, end = _int_vector(begin, "tf.strided_slice", "begin"), _int_vector(end, "tf.strided_slice", "end")
    strides = [1] * len(begin) if strides is None else _int_vector(strides, "tf.strided_slice", "strides")
    n = len(begin)
    if len(end) != n or len(strides) != n:
        invalid(f"Expected begin, end, and strides to be 1D equal size tensors, but got shapes [{n}], "
                f"[{len(end)}], and [{len(strides)}] instead. [Op:StridedSlice]")
    ellipsis, new_axis = _bits(ellipsis_mask, n), _bits(new_axis_mask, n)
    shrink, no_begin, no_end = _bits(shrink_axis_mask, n), _bits(begin_mask, n), _bits(end_mask, n)
    if sum(ellipsis) > 1:
        invalid("Multiple ellipses in slice spec not allowed [Op:StridedSlice]")
    key = []
    for i in range(n):
        if ellipsis[i]:
            key.append(Ellipsis)
        elif new_axis[i]:
            key.append(None)
        elif strides[i] == 0:
            invalid(f"strides[{i}] must be non-zero [Op:StridedSlice]")
        elif shrink[i]:
            key.append(begin[i])
        else:
            key.append(builtins.slice(None if no_begin[i] else begin[i], None if no_end[i] else end[i], strides[i]))
    dims = _shape_of(input_)
    spec_axes = sum(1 for k in key if k is not None and k is not Ellipsis)
    if spec_axes > len(dims):
        invalid(f"Index out of range using input dim {len(dims)}; input has only {len(dims)} dims "
                f"[Op:StridedSlice]")
    _check_shrunk(key, dims)
    return _index(input_, tuple(key), "tf.strided_slice")


def _check_shrunk(key: list, dims: tuple):
    """TensorFlow's error for a shrunk index outside its axis (Python's IndexError otherwise)."""
    axis = 0
    for pos, k in enumerate(key):
        if k is Ellipsis:
            axis = len(dims) - sum(1 for j in key[pos + 1:] if j is not None and j is not Ellipsis)
        elif k is not None:
            if isinstance(k, int) and dims[axis] is not None and not -dims[axis] <= k < dims[axis]:
                invalid(f"slice index {k} of dimension {axis} out of bounds. [Op:StridedSlice]")
            axis += 1


_HINT_KINDS = {"b": "biuf", "i": "iuf", "u": "iuf", "f": "f"}  # a Python value's kind -> hint kinds it takes


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """`tf.convert_to_tensor`: a tensor (a model's symbolic tensor in a layer's call or a loss, an eager one)
    comes back as it is, a `dtype` other than its own being TensorFlow's ValueError; a Variable is read; other
    values become eager tensors as `tf.constant` makes them, `dtype_hint` giving the dtype of NumPy values and
    of Python values of a kind that converts to it (ints to ints or floats, floats to floats, bools to any;
    TensorFlow keeps the default dtype otherwise: [1.0] with an int32 hint stays float32)."""
    from flexflow_keras import tf_compat, tf_signal_graph
    from flexflow_keras.ops.eager_tensor import EagerTensor
    from flexflow_keras.ops.graph import Variable

    wanted = None if dtype is None else np.dtype(getattr(dtype, "name", dtype))
    if isinstance(value, KerasTensor | EagerTensor | Variable | tf_signal_graph.SymbolicComplex):
        own = str(value.dtype)
        if wanted is not None and own != wanted.name:
            raise ValueError(f"Tensor conversion requested dtype {wanted.name} for Tensor with dtype {own}: "
                             f"{value!r}. tf.convert_to_tensor does not cast a tensor; use tf.cast(x, "
                             f"{wanted.name!r}).")
        return _ops().convert_to_tensor(value) if isinstance(value, Variable) else value
    if wanted is None and dtype_hint is not None:
        hint = np.dtype(getattr(dtype_hint, "name", dtype_hint))
        kind = np.asarray(value).dtype.kind
        if isinstance(value, np.ndarray | np.generic) or hint.kind in _HINT_KINDS.get(kind, ""):
            wanted = hint
    return tf_compat._constant(value, None if wanted is None else wanted.name)


CALLS = {
    "tf.convert_to_tensor": convert_to_tensor,
    "tf.fill": fill, "tf.reverse": reverse, "tf.boolean_mask": boolean_mask, "tf.sequence_mask": sequence_mask,
    "tf.broadcast_to": broadcast_to, "tf.roll": roll, "tf.rank": rank, "tf.size": size,
    "tf.sort": sort, "tf.argsort": argsort, "tf.meshgrid": meshgrid,
    "tf.linalg.band_part": band_part, "tf.nn.embedding_lookup": embedding_lookup, "tf.ensure_shape": ensure_shape,
    "tf.slice": slice, "tf.strided_slice": strided_slice,
}
