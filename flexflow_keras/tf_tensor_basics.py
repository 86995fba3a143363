"""The everyday `tf.*` tensor calls public tf.keras scripts make, as `keras.ops` under TensorFlow's argument
names, defaults and dtypes (tf_compat.py's `mapped_call` looks in `CALLS`): `tf.constant` (a Python int is
int32), `tf.concat` (one dtype, or TensorFlow's InvalidArgumentError), `tf.shape`, `tf.range`,
`tf.where(cond, x, y)` and `tf.where(cond)`, `tf.one_hot` (on/off values), `tf.split` (sizes, not cut
indices), `tf.eye`, `tf.pad`, `tf.expand_dims`, `tf.tile`, `tf.gather` (axis 0), `tf.identity` and `tf.image.extract_patches`.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.tf_constants import _TF_DTYPE_NAMES, InvalidArgumentError, _converted_dtype, _tensor_dtype


def _concat(values, axis, name="concat"):
    """`tf.concat(values, axis)`: TensorFlow's dtypes, not NumPy's promotion. Every tensor must have the first
    tensor's dtype (float32 with float64 is TensorFlow's InvalidArgumentError, naming the input); lists and NumPy
    arrays are converted to it; with no tensor, to the first value's dtype (Python floats as float32)."""
    from flexflow_keras import ops
    from flexflow_keras.ops import dynamic_dims

    values = list(values)
    dtypes = [_tensor_dtype(v) for v in values]
    if dynamic_dims.holds_dims(values) or any(d is not None and d.kind == "O" for d in dtypes):
        return ops.concatenate(values, axis=axis)  # a shape vector holding the batch size (ops/dynamic_dims.py)
    target = next((d for d in dtypes if d is not None), None)
    for i, d in enumerate(dtypes):
        if d is not None and d != target:
            raise InvalidArgumentError(
                f"cannot compute ConcatV2 as input #{i}(zero-based) was expected to be a "
                f"{_TF_DTYPE_NAMES.get(target.name, target.name)} tensor but is a "
                f"{_TF_DTYPE_NAMES.get(d.name, d.name)} tensor [Op:ConcatV2] name: {name}. tf.concat takes tensors "
                f"of one dtype: cast them first, e.g. tf.cast(x, {target.name!r}).")
    if target is None and values:
        target = _converted_dtype(values[0])
    values = [v if d is not None else np.asarray(v).astype(target) for v, d in zip(values, dtypes, strict=True)]
    return ops.concatenate(values, axis=axis)


def _constant(value, dtype=None, shape=None, name=None):
    """TensorFlow's dtypes: Python ints int32, Python floats float32, NumPy arrays and scalars their own."""
    from flexflow_keras.ops.eager_tensor import eager

    if dtype is None and not isinstance(value, np.ndarray | np.generic):
        kind = np.asarray(value).dtype.kind
        dtype = {"i": "int32", "f": "float32"}.get(kind)
    out = np.asarray(value, dtype=dtype)
    if shape is not None:
        out = np.broadcast_to(out, tuple(shape)).copy() if out.size == 1 else out.reshape(tuple(shape))
    return eager(out)


def _shape(input, out_type=None, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.shape(x)`: an int32 array of an array's dims (TensorFlow gives a tensor, so ``tf.shape(x) * 2``
    multiplies); Keras' `ops.shape` of a symbolic tensor (``tf.shape(x)[-1]`` reads a known dim, as the
    keras-io examples do)."""
    from flexflow_keras import ops
    from flexflow_keras.ops.eager_tensor import eager
    from flexflow_keras.ops.graph import KerasTensor

    if isinstance(input, KerasTensor):
        return ops.shape(input)
    return eager(np.asarray(np.shape(input), out_type or "int32"))


def _range(start, limit=None, delta=1, dtype=None, name=None):
    """`tf.range(start, limit, delta)`: keras.ops.arange under TensorFlow's argument names."""
    from flexflow_keras import ops

    return ops.arange(start, limit, delta, dtype=dtype)


def _where(condition, x=None, y=None, name=None):
    """`tf.where(cond, x, y)`, and `tf.where(cond)`: the coordinates of cond's true (non-zero) entries, one
    int64 row each in row-major order, as TensorFlow gives them (on values only: their number depends on the
    data, which a model's graph cannot hold)."""
    from flexflow_keras import ops

    if x is None and y is None:
        from flexflow_keras.tf_count_ops import _array, _eager

        return _eager(np.argwhere(_array("tf.where", condition)), "int64")
    if x is None or y is None:
        raise ValueError(f"tf.where: x and y must both be given or both be None, received "
                         f"{'x' if y is None else 'y'} only.")
    return ops.where(condition, x, y)


def _one_hot_value(value, role: str, want):
    """(array, dtype name) of an on/off value as TensorFlow converts it with `want` as its dtype hint: a
    tensor keeps its dtype; a NumPy number takes a number hint (cast, as TensorFlow: 0.5 -> 0 for int32), a
    Python one when it fits (an int any number dtype, a float a float one), else its own (Python ints int32,
    floats float32); a bool is bool and a string a string."""
    from flexflow_keras.tf_constants import _converted_dtype, _tensor_dtype

    own = _tensor_dtype(value)
    a = np.asarray(value)
    if a.ndim != 0:
        raise ValueError(f"tf.one_hot: {role} must be a scalar, received shape {a.shape}.")
    if own is not None:  # a tensor keeps its dtype
        return a, ("string" if own.kind in "USO" else str(own))
    if a.dtype.kind in "USO":
        return a.astype(str), "string"
    if a.dtype.kind == "b":
        return a, "bool"
    numpy = isinstance(value, np.ndarray | np.generic)  # TensorFlow casts these to the hint (0.5 -> 0)
    if want not in (None, "string", "bool") and (numpy or np.dtype(want).kind == "f" or a.dtype.kind in "iu"):
        return a.astype(want), want
    return a, str(_converted_dtype(value))


def _one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """`tf.one_hot` with TensorFlow's dtype rules: the result's dtype is `dtype`, else on_value's (or
    off_value's) as TensorFlow converts it (a Python int int32, a float float32, True bool, a string a
    string tensor), else float32; on and off default to 1 and 0 of that dtype, and a given dtype that does
    not match a given value's is TensorFlow's TypeError. Indices outside [0, depth) give rows of off_value."""
    from flexflow_keras import ops
    from flexflow_keras.ops.eager_tensor import eager
    from flexflow_keras.ops.graph import KerasTensor

    want = None if dtype is None else str(getattr(dtype, "name", dtype))
    want = want if want in (None, "string") else str(np.dtype(want))
    on = None if on_value is None else _one_hot_value(on_value, "on_value", want)
    off = None if off_value is None else _one_hot_value(off_value, "off_value", want)
    for value, role in ((on, "on_value"), (off, "off_value")):
        if value is not None and want is not None and value[1] != want:
            raise TypeError(f"tf.one_hot: dtype {value[1]} of {role} does not match dtype parameter {want}; pass "
                            f"dtype={value[1]!r} or a {role} of dtype {want}.")
    dtype = want or (on or off or (None, "float32"))[1]
    if on is not None and off is not None and on[1] != off[1]:
        raise TypeError(f"tf.one_hot: dtype {on[1]} of on_value does not match dtype {off[1]} of off_value; give "
                        f"both the same dtype.")
    if dtype in ("string", "bool") and (on is None or off is None):
        missing = "on_value" if on is None else "off_value"
        raise TypeError(f"tf.one_hot: a {dtype} one-hot needs {missing} too (TensorFlow cannot convert its default "
                        f"{'1' if on is None else '0'} to {dtype}); pass on_value and off_value.")
    on_v = on[0] if on is not None else np.asarray(1, dtype)
    off_v = off[0] if off is not None else np.asarray(0, dtype)
    axis = -1 if axis is None else int(axis)
    if isinstance(indices, KerasTensor):
        if dtype == "string":
            raise TypeError("tf.one_hot: a string one-hot of symbolic indices is not supported here; one-hot "
                            "encode numbers and map them to strings afterwards.")
        out = ops.one_hot(indices, int(depth), axis=axis, dtype="float32")
        if on is None and off is None and dtype != "bool":
            return ops.cast(out, dtype)
        out = ops.add(ops.multiply(out, float(on_v) - float(off_v)), float(off_v))
        return ops.cast(out, dtype)
    ids = np.asarray(indices).astype(np.int64)
    mask = ids[..., None] == np.arange(int(depth))  # out-of-range ids match no column
    if axis != -1:
        mask = np.moveaxis(mask, -1, axis)
    out = np.where(mask, on_v, off_v)
    return eager(out if dtype == "string" else out.astype(dtype))


def _split(value, num_or_size_splits, axis=0, num=None, name=None):
    """`tf.split`: a number of equal parts, or the parts' sizes (Keras' split takes the cut indices)."""
    from flexflow_keras import ops

    if isinstance(num_or_size_splits, int | np.integer):
        return ops.split(value, int(num_or_size_splits), axis=axis)
    sizes = [int(n) for n in np.asarray(num_or_size_splits).reshape(-1)]
    if -1 in sizes:  # TensorFlow: one size may be -1, the rest of the dim
        sizes[sizes.index(-1)] = np.shape(value)[axis] - (sum(sizes) + 1)
    if sum(sizes) != np.shape(value)[axis]:
        raise ValueError(f"tf.split: the sizes {sizes} add up to {sum(sizes)}, but axis {axis} has "
                         f"{np.shape(value)[axis]} elements.")
    return ops.split(value, [int(i) for i in np.cumsum(sizes)[:-1]], axis=axis)


def _eye(num_rows, num_columns=None, batch_shape=None, dtype="float32", name=None):
    from flexflow_keras import ops

    out = ops.eye(int(num_rows), None if num_columns is None else int(num_columns), dtype=dtype)
    if batch_shape:
        out = ops.broadcast_to(out, tuple(int(b) for b in batch_shape) + tuple(np.shape(out)))
    return out


def _pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    from flexflow_keras import ops

    return ops.pad(tensor, np.asarray(paddings).tolist(), mode=str(mode).lower(), constant_values=constant_values)


def _expand_dims(input, axis, name=None):  # noqa: A002 (TensorFlow's argument name)
    from flexflow_keras import ops

    return ops.expand_dims(ops.convert_to_tensor(input) if np.ndim(input) == 0 else input, axis)


def _tile(input, multiples, name=None):  # noqa: A002 (TensorFlow's argument names)
    from flexflow_keras import ops

    return ops.tile(input, multiples)


def _gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """`tf.gather`: keras.ops.take along `axis` (TensorFlow's default axis 0, not a flattened take). With
    `batch_dims` b, the first b dims of params and indices are batch dims and each batch gathers from its own
    slice (keras.io's masked autoencoder picks each image's patches so): `axis` (default b) is moved to b,
    taken by `tf.gather_nd` of the indices as depth-1 vectors, and the dims between moved back; the result
    is ``params.shape[:axis] + indices.shape[b:] + params.shape[axis + 1:]``."""
    from flexflow_keras import ops

    b = int(batch_dims)
    if b == 0:
        return ops.take(params, indices, axis=0 if axis is None else int(axis))
    from flexflow_keras.tf_scatter_ops import gather_nd

    rank_p, rank_i = len(params.shape), len(np.shape(indices) if not hasattr(indices, "shape") else indices.shape)
    b = b + rank_i if b < 0 else b
    ax = b if axis is None else int(axis)
    ax = ax + rank_p if ax < 0 else ax
    if not 0 <= b <= rank_i or not b <= ax < rank_p:
        raise ArgumentError(f"tf.gather expects 0 <= batch_dims <= rank(indices) and batch_dims <= axis < "
                            f"rank(params), received batch_dims={batch_dims}, axis={axis}, params of rank {rank_p} "
                            f"and indices of rank {rank_i}.")
    moved = params if ax == b else ops.transpose(params, [*range(b), ax, *(d for d in range(b, rank_p) if d != ax)])
    out = gather_nd(moved, ops.expand_dims(indices, -1), batch_dims=b)
    if ax == b:
        return out
    r, m = rank_i - b, ax - b  # the indices' own dims, then the params' dims between the batch and axis
    n = len(out.shape)
    return ops.transpose(out, [*range(b), *range(b + r, b + r + m), *range(b, b + r), *range(b + r + m, n)])


def _identity(input, name=None):  # noqa: A002 (TensorFlow's argument name)
    """`tf.identity(x)`: a tensor equal to x (a node of its own on a symbolic tensor; gradients pass through)."""
    from flexflow_keras import ops

    return ops.copy(input)


def _extract_patches(images, sizes, strides, rates, padding, name=None):
    """`tf.image.extract_patches`: TensorFlow's 4-element `sizes` / `strides` / `rates` ([1, h, w, 1]) and
    "SAME" / "VALID" padding; each patch a vector ordered (row, column, channel), as keras.ops.image's (which
    also computes strides and rates above 1 together, as TensorFlow does)."""
    from flexflow_keras.ops import image

    def pair(arg, value):
        vals = [int(v) for v in np.asarray(value).reshape(-1)]
        if len(vals) != 4 or vals[0] != 1 or vals[3] != 1 or min(vals) < 1:
            raise ArgumentError(f"tf.image.extract_patches expects {arg} as [1, rows, cols, 1] of positive "
                                f"integers, received {arg}={value!r}.")
        return tuple(vals[1:3])

    pad = str(padding).lower()
    if pad not in ("same", "valid"):
        raise ArgumentError(f"tf.image.extract_patches expects padding 'SAME' or 'VALID', received {padding!r}.")
    if len(getattr(images, "shape", np.shape(images))) != 4:
        raise ArgumentError(f"tf.image.extract_patches expects a 4-D batch of images (N, H, W, C), received shape "
                            f"{tuple(getattr(images, 'shape', np.shape(images)))}.")
    p, s, d = pair("sizes", sizes), pair("strides", strides), pair("rates", rates)
    return image._patches_nhwc("extract_patches", image._images("extract_patches", images), p, s, d, pad)


CALLS = {
    "tf.one_hot": _one_hot, "tf.split": _split, "tf.eye": _eye, "tf.pad": _pad,
    "tf.expand_dims": _expand_dims, "tf.tile": _tile, "tf.where": _where, "tf.shape": _shape,
    "tf.range": _range, "tf.constant": _constant, "tf.gather": _gather, "tf.compat.v1.gather": _gather,
    "tf.identity": _identity, "tf.image.extract_patches": _extract_patches, "tf.concat": _concat,
}
