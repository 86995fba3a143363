"""The raw TensorFlow calls that `python -m flexflow_keras` runs rather than refuses (keras_alias.py).

Public tf.keras scripts open with a few TensorFlow calls that have an exact meaning here, and use TensorFlow
math functions that are `keras.ops` functions under another module: refusing them stopped scripts whose
Keras part runs (`tf.random.set_seed(42)` on their first line). `mapped_call(path)` finds the function;
each module's docstring lists what it maps:

- tf_setup.py: seeds, `tf.function`, logging, device listing and `tf.test`'s GPU questions.
- tf_data.py: `tf.data`'s dataset constructors, transformations for `ds.apply`, options and constants,
  and `tf.TensorSpec`.
- here: `tf.X` / `tf.math.X` for the names in `_SAME_OPS`, whose `keras.ops` function has the same
  arguments, order and meaning (`tf.reduce_sum(x, axis, keepdims)` is `keras.ops.sum`); and, with
  TensorFlow's argument names and dtypes, `tf.shape`, `tf.range`, `tf.print` (stderr, once on symbolic
  tensors), `tf.compat.as_bytes` / `as_str`, `tf.reduce_mean` (an integer mean is an integer), `tf.divide`
  (integers in float64), `tf.constant` (a Python int is int32), `tf.concat`, `tf.where(cond, x, y)`,
  `tf.argmax` / `argmin` (axis 0, int64), `tf.math.top_k` / `tf.nn.top_k` (a TopKV2), `tf.one_hot`,
  `tf.split`, `tf.repeat`, `tf.clip_by_value`, `tf.gather`, `tf.add_n`, `tf.linalg.einsum`, `tf.matmul`
  (transpose flags), `tf.math.l2_normalize`, `tf.eye`, `tf.pad`, `tf.expand_dims`, `tf.tile`,
  `tf.identity`, `tf.tensordot`, `tf.image.extract_patches`, `tf.nn.sigmoid_cross_entropy_with_logits`,
  `tf.nn.moments`, `tf.random.normal` / `uniform` / `gamma`,
  `tf.random_normal_initializer` / `random_uniform_initializer` / `constant_initializer` / `zeros_initializer` /
  `ones_initializer`, `tf.numpy_function` / `tf.py_function` (on values: in a dataset's map or
  on arrays), and the constants (`tf.newaxis`, `tf.dtypes.X`, `tf.UnconnectedGradients`,
  `tf.image.ResizeMethod`, `tf.errors.InvalidArgumentError`).
- forwarded: `tf.nn.conv*` / `atrous_conv2d` and the pools (ops/conv_api.py; the transposed, depthwise and
  separable ones through tf_conv_ops.py); `tf.Variable` and
  `tf.Module` (variables.py); `tf.GradientTape` (ops/tape.py); CTC decoders and `tf.sparse.to_dense`
  (ops/ctc_beam.py); `tf.lookup` (tf_lookup.py); `tf.train` checkpoints (tf_checkpoint.py); `tf.summary`
  (tf_summary.py).
- their own modules: tf_array_ops.py (creation, reordering, selection, masks, tf.slice and
  tf.strided_slice), tf_math_ops.py (scans, reductions, norms, tf.nn losses, dropout, batch normalization,
  global-norm clipping, xlogy / xdivy, lgamma / digamma / erfc, squared_difference), tf_scatter_ops.py
  (gather_nd, scatter_nd), tf_space_ops.py (tf.nn.depth_to_space, space_to_depth), tf_count_ops.py
  (unique, searchsorted, bincount, confusion_matrix, in_top_k),
  tf_linalg_ops.py (inv, det, diag, trace, matvec), tf_linalg_decomp.py (qr, svd, eig(h), cholesky, solve,
  triangular_solve, lstsq, pinv, logdet, slogdet, matrix_rank), tf_segment.py (segment reductions), tf_nest.py
  (keras.tree), tf_strings.py, tf_io.py and tf_image.py (host pipelines), tf_signal.py (audio, Fourier
  transforms, complex numbers), tf_control_flow.py (cond, case, switch_case, while_loop, scan, map_fn,
  vectorized_map, foldl, foldr on keras.ops' control flow).

An argument only TensorFlow's function has is a `RawTensorFlowError` naming the call. Names whose
TensorFlow meaning or argument order differs from Keras' and that are not mapped stay refused, with the
Keras spelling in the message.
"""

from __future__ import annotations

import sys
from collections import namedtuple

import numpy as np

from flexflow_keras import tf_data as _data
from flexflow_keras import tf_setup as _setup
from flexflow_keras.errors import ArgumentError, ConfigError, FlexFlowKerasError

# TensorFlow name (under tf. and tf.math.) -> keras.ops name, for same arguments and same meaning
_SAME_OPS = {name: name for name in (
    "abs", "add", "subtract", "multiply", "maximum", "minimum", "pow", "square", "sqrt", "exp",
    "log", "log1p", "sin", "cos", "tan", "sign", "floor", "ceil", "negative", "reciprocal", "erf",
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
    "logical_not", "cast", "reshape", "transpose", "expand_dims", "squeeze", "stack", "tile", "matmul",
    "einsum", "ones_like", "zeros_like", "zeros", "ones", "linspace", "unstack")}
_SAME_OPS.update({"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod",
                  "reduce_std": "std", "reduce_variance": "var",
                  "pow": "power", "repeat": "repeat",
                  "stop_gradient": "stop_gradient", "floordiv": "floor_divide", "floormod": "mod", "mod": "mod"})
_SAME_RANDOM = ("normal", "uniform", "categorical")





def _is_int(x) -> bool:
    return np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype).kind in "iub"


def _reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """TensorFlow's integer mean is an integer (the float mean truncated toward zero)."""
    from flexflow_keras import ops

    mean = ops.mean(input_tensor, axis=axis, keepdims=keepdims)
    if _is_int(input_tensor):
        return ops.cast(mean, str(getattr(input_tensor, "dtype", None) or np.asarray(input_tensor).dtype))
    return mean


def _divide(x, y, name=None):
    """TensorFlow divides two integer tensors in float64 (float32 on symbolic tensors here)."""
    from flexflow_keras import ops
    from flexflow_keras.ops.graph import KerasTensor

    if _is_int(x) and _is_int(y):
        to = "float32" if isinstance(x, KerasTensor) or isinstance(y, KerasTensor) else "float64"
        x, y = ops.cast(x, to), ops.cast(y, to)
    return ops.divide(x, y)


class InvalidArgumentError(FlexFlowKerasError, ValueError):
    """`tf.errors.InvalidArgumentError`: an op received arguments it cannot compute on (tensors of two dtypes)."""


class NotFoundError(FlexFlowKerasError, LookupError):
    """`tf.errors.NotFoundError`: TensorFlow has no kernel for the op on this device (tf_space_ops.py)."""


_TF_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half", "int32": "int32", "int64": "int64",
                   "bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "complex64": "complex64"}


def _tensor_dtype(x):
    """The dtype of one of our tensors (eager, symbolic, a variable), or None for other values (lists, NumPy
    arrays, numbers), which TensorFlow converts to the tensors' dtype."""
    from flexflow_keras.ops.eager_tensor import EagerTensor
    from flexflow_keras.ops.graph import KerasTensor, Variable

    return np.dtype(x.dtype) if isinstance(x, EagerTensor | KerasTensor | Variable) else None


def _converted_dtype(value) -> np.dtype:
    """The dtype TensorFlow gives a value it converts: a NumPy array's own; Python floats float32, ints int32."""
    if isinstance(value, np.ndarray | np.generic):
        return np.dtype(value.dtype)
    kind = np.asarray(value).dtype
    return {"f": np.dtype("float32"), "i": np.dtype("int32")}.get(kind.kind, kind)


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


def _host_function(who: str, as_tensors: bool):
    """`tf.numpy_function(func, inp, Tout)` / `tf.py_function`: `func` runs in Python on the values of `inp`
    (NumPy arrays; tensors with .numpy() for py_function), its results cast to `Tout`. Here a dataset's `map`
    runs on host arrays, as these calls do in TensorFlow; a model's symbolic tensors have no values to give."""

    def call(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TensorFlow's argument name
        from flexflow_keras.ops.eager_tensor import eager
        from flexflow_keras.ops.graph import KerasTensor

        args = list(inp) if isinstance(inp, (list, tuple)) else [inp]
        if any(isinstance(a, KerasTensor) for a in args):
            raise ArgumentError(f"{who} runs a Python function on values; inside a model the tensors are "
                                     f"symbolic. Call it in a tf.data map or on arrays, or write the computation "
                                     f"with keras.ops in a layer.")
        values = [eager(np.asarray(a)) if as_tensors else np.asarray(a) for a in args]
        out = func(*values)
        if not isinstance(Tout, (list, tuple)):
            return _as_tout(out, Tout, who)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(outs) != len(Tout):
            raise ArgumentError(f"{who}: the function returned {len(outs)} value(s) for Tout={list(Tout)!r} "
                                f"({len(Tout)} dtypes); return one value per dtype.")
        return [_as_tout(o, t, who) for o, t in zip(outs, Tout, strict=True)]

    return call


def _as_tout(value, dtype, who: str):
    """A host function's result as a tensor of the dtype it declared (tf.string: bytes or str as they are)."""
    from flexflow_keras.ops.eager_tensor import eager

    name = str(getattr(dtype, "name", dtype))
    if name in ("string", "str", "object"):
        return np.asarray(value, dtype=object)
    try:
        return eager(np.asarray(value, dtype=np.dtype(name)))
    except TypeError as e:
        raise ArgumentError(f"{who}: Tout={dtype!r} is not a dtype flexflow_keras knows ({e}); use a NumPy "
                            f"dtype name such as tf.float32 or tf.int64.") from None


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


def _print(*inputs, output_stream=None, sep=" ", end="\n", summarize=None, name=None) -> None:
    """`tf.print`: the values to standard error, as TensorFlow's default stream. On symbolic tensors (in
    a layer's call) it prints once, when the graph is recorded, where TensorFlow prints at every step."""
    stream = output_stream if hasattr(output_stream, "write") else sys.stderr
    text = sep.join(str(np.asarray(x)) if isinstance(x, np.ndarray) else str(x) for x in inputs)
    stream.write(text + end)


def _as_bytes(bytes_or_text, encoding="utf-8"):
    return bytes_or_text.encode(encoding) if isinstance(bytes_or_text, str) else bytes(bytes_or_text)
















def _where(condition, x, y, name=None):
    """`tf.where(cond, x, y)`; the one-argument form (coordinates of the true entries) is not mapped (its
    missing x and y make the call a RawTensorFlowError naming keras.ops.where)."""
    from flexflow_keras import ops

    return ops.where(condition, x, y)


def _arg_reduce(fn: str):
    def arg(input, axis=None, output_type="int64", name=None):  # noqa: A002 (TensorFlow's argument names)
        """TensorFlow's `tf.argmax`/`tf.argmin`: axis 0 when not given (Keras flattens), int64 indices."""
        from flexflow_keras import ops

        return ops.cast(getattr(ops, fn)(input, axis=0 if axis is None else int(axis)), str(output_type))
    arg.__name__ = fn
    return arg


def _one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """`tf.one_hot`: `keras.ops.one_hot` with TensorFlow's on/off values (1 and 0 by default)."""
    from flexflow_keras import ops

    out = ops.one_hot(indices, int(depth), axis=-1 if axis is None else int(axis), dtype=dtype or "float32")
    if on_value is None and off_value is None:
        return out
    on, off = (1.0 if on_value is None else float(on_value)), (0.0 if off_value is None else float(off_value))
    return ops.add(ops.multiply(out, on - off), off)


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


def _sigmoid_cross_entropy(labels=None, logits=None, name=None):
    from flexflow_keras.ops.loss_functions import sigmoid_cross_entropy_with_logits

    return sigmoid_cross_entropy_with_logits(labels, logits)


def _moments(x, axes, shift=None, keepdims=False, name=None):
    """`tf.nn.moments`: (mean, variance) over `axes` (keras.ops.moments); `shift` only steadies
    TensorFlow's arithmetic and is ignored, as TensorFlow 2's own implementation does."""
    from flexflow_keras import ops

    return ops.moments(x, [int(a) for a in np.atleast_1d(axes)], keepdims=bool(keepdims))


def _matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
            b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    """`tf.matmul` with its transpose flags (real tensors: adjoint is transpose)."""
    from flexflow_keras import ops

    def swap(x):
        nd = len(np.shape(x))
        return ops.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))
    return ops.matmul(swap(a) if transpose_a or adjoint_a else a, swap(b) if transpose_b or adjoint_b else b)


def _l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """`tf.math.l2_normalize`: ``x / sqrt(max(sum(x**2, axis), epsilon))`` (axis None: all of x)."""
    from flexflow_keras import ops

    axis = dim if axis is None else axis
    return ops.multiply(x, ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), epsilon)))


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


def _random_normal_initializer(mean=0.0, stddev=0.05, seed=None):
    from flexflow_keras import initializers

    return initializers.RandomNormal(mean=mean, stddev=stddev, seed=seed)


def _random_uniform_initializer(minval=-0.05, maxval=0.05, seed=None):
    from flexflow_keras import initializers

    return initializers.RandomUniform(minval=minval, maxval=maxval, seed=seed)


def _constant_initializer(value=0):
    from flexflow_keras import initializers

    return initializers.Constant(value)






def _gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """`tf.gather`: keras.ops.take along `axis` (TensorFlow's default axis 0, not a flattened take)."""
    if int(batch_dims) != 0:
        raise ArgumentError(f"tf.gather(batch_dims={batch_dims}) is not mapped under python -m flexflow_keras (only "
                            f"batch_dims=0, keras.ops.take); gather per sample with keras.ops.take_along_axis, or "
                            f"run the script with TensorFlow itself.")
    from flexflow_keras import ops

    return ops.take(params, indices, axis=0 if axis is None else int(axis))


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




TopKV2 = namedtuple("TopKV2", ["values", "indices"])


def _top_k(input, k=1, sorted=True, index_type="int32", name=None):  # noqa: A002 (TensorFlow's argument names)
    """`tf.math.top_k` / `tf.nn.top_k`: keras.ops.top_k under TensorFlow's defaults (k=1) and result, a
    ``TopKV2(values, indices)`` tuple whose indices have `index_type` (int32 unless int64 is asked)."""
    from flexflow_keras import ops

    index_type = str(np.dtype(getattr(index_type, "name", index_type)))
    if index_type not in ("int16", "int32", "int64"):
        raise ArgumentError(f"tf.math.top_k: index_type must be int16, int32 or int64, received {index_type!r}.")
    values, indices = ops.top_k(input, k, sorted=sorted)
    return TopKV2(values, indices if index_type == "int32" else ops.cast(indices, index_type))


CALLS = {
    "tf.Variable": lambda *a, **k: _variable(*a, **k),
    "tf.one_hot": _one_hot, "tf.split": _split, "tf.matmul": _matmul, "tf.linalg.matmul": _matmul,
    "tf.math.l2_normalize": _l2_normalize, "tf.nn.l2_normalize": _l2_normalize, "tf.eye": _eye,
    "tf.pad": _pad, "tf.expand_dims": _expand_dims, "tf.tile": _tile, "tf.random_normal_initializer": _random_normal_initializer,
    "tf.random_uniform_initializer": _random_uniform_initializer, "tf.constant_initializer": _constant_initializer,
    "tf.zeros_initializer": lambda: _constant_initializer(0.0), "tf.ones_initializer": lambda: _constant_initializer(1.0),
    "tf.summary.create_file_writer": lambda *a, **k: _summary("create_file_writer")(*a, **k),
    "tf.summary.scalar": lambda *a, **k: _summary("scalar")(*a, **k),
    "tf.summary.histogram": lambda *a, **k: _summary("histogram")(*a, **k),
    "tf.summary.flush": lambda *a, **k: _summary("flush")(*a, **k),
    "tf.summary.experimental.set_step": lambda *a, **k: _summary("set_step")(*a, **k),
    "tf.summary.experimental.get_step": lambda *a, **k: _summary("get_step")(*a, **k),
    "tf.train.Checkpoint": lambda *a, **k: _checkpoint("Checkpoint")(*a, **k),
    "tf.train.CheckpointManager": lambda *a, **k: _checkpoint("CheckpointManager")(*a, **k),
    "tf.train.latest_checkpoint": lambda *a, **k: _checkpoint("latest_checkpoint")(*a, **k),
    "tf.nn.sigmoid_cross_entropy_with_logits": _sigmoid_cross_entropy,
    "tf.nn.moments": _moments,
    "tf.lookup.StaticHashTable": lambda *a, **k: _lookup().StaticHashTable(*a, **k),
    "tf.lookup.KeyValueTensorInitializer": lambda *a, **k: _lookup().KeyValueTensorInitializer(*a, **k),
    "tf.argmax": _arg_reduce("argmax"), "tf.math.argmax": _arg_reduce("argmax"),
    "tf.argmin": _arg_reduce("argmin"), "tf.math.argmin": _arg_reduce("argmin"),
    "tf.where": _where, "tf.shape": _shape, "tf.range": _range, "tf.print": _print,
    "tf.compat.as_bytes": _as_bytes, "tf.compat.as_str": lambda b, encoding="utf-8": (
        b.decode(encoding) if isinstance(b, bytes) else str(b)),
    "tf.reduce_mean": _reduce_mean, "tf.math.reduce_mean": _reduce_mean,
    "tf.divide": _divide, "tf.math.divide": _divide, "tf.truediv": _divide, "tf.math.truediv": _divide,
    "tf.constant": _constant,
    "tf.nn.conv2d": lambda *a, **k: _ops_fn("tf_conv")(*a, **k), "tf.nn.conv1d": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    "tf.nn.convolution": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    "tf.nn.conv3d": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    **{f"tf.nn.{mode}_pool{d}": (lambda *a, _mode=mode, **k: _ops_fn("tf_pool")(_mode)(*a, **k))
       for mode in ("max", "avg") for d in ("", "1d", "2d", "3d")},
    "tf.nn.atrous_conv2d": lambda value, filters, rate, padding, name=None: _ops_fn("tf_conv")(
        value, filters, 1, padding, dilations=rate),
    "tf.linalg.einsum": lambda *a, **k: _ops_fn("einsum")(*a, **k),
    "tf.add_n": lambda inputs, name=None: _add_n(inputs), "tf.math.add_n": lambda inputs, name=None: _add_n(inputs),
    "tf.clip_by_value": lambda *a, **k: _clip_by_value(*a, **k),
    "tf.math.top_k": _top_k, "tf.nn.top_k": _top_k,
    "tf.gather": _gather, "tf.compat.v1.gather": _gather,
    "tf.identity": _identity, "tf.image.extract_patches": _extract_patches,
    "tf.tensordot": lambda a, b, axes, name=None: _ops_fn("tensordot")(a, b, axes),
    "tf.linalg.tensordot": lambda a, b, axes, name=None: _ops_fn("tensordot")(a, b, axes),
    "tf.random.gamma": lambda *a, **k: _tf_gamma(*a, **k),
    "tf.concat": _concat,
    "tf.numpy_function": _host_function("tf.numpy_function", False),
    "tf.py_function": _host_function("tf.py_function", True),
    "tf.nn.ctc_beam_search_decoder": lambda *a, **k: _ctc_beam().ctc_beam_search_decoder(*a, **k),
    "tf.compat.v1.nn.ctc_beam_search_decoder": lambda *a, **k: _ctc_beam().ctc_beam_search_decoder_v1(*a, **k),
    **{f"tf.{space}nn.ctc_greedy_decoder": (lambda *a, **k: _ctc_beam().greedy_decoder(*a, **k))
       for space in ("", "compat.v1.")},
    **{f"tf.{space}sparse.to_dense": (lambda *a, **k: _ctc_beam().sparse_to_dense(*a, **k))
       for space in ("", "compat.v1.")},
}
CONSTANTS = dict(_setup.CONSTANTS)


class _UnconnectedGradients:
    NONE, ZERO = "none", "zero"


class _ResizeMethod:
    """`tf.image.ResizeMethod`: the names tf.image.resize takes (tf_image.py computes bilinear and nearest)."""

    BILINEAR, NEAREST_NEIGHBOR, BICUBIC, AREA = "bilinear", "nearest", "bicubic", "area"
    LANCZOS3, LANCZOS5, GAUSSIAN, MITCHELLCUBIC = "lanczos3", "lanczos5", "gaussian", "mitchellcubic"


def _tensor_shape(dims=None):
    """`tf.TensorShape(dims)`: the dims as a tuple with TensorShape's `as_list` and `rank` (ops/shape_tuple.py)."""
    from flexflow_keras.ops.shape_tuple import ShapeTuple

    if dims is None:
        raise ConfigError("tf.TensorShape(None) (an unknown rank) has no equivalent here: give the dims, with None "
                          "for an unknown one, e.g. tf.TensorShape([None, 32]).")
    dims = getattr(dims, "dims", dims)
    dims = [dims] if isinstance(dims, int) else dims
    return ShapeTuple(None if d is None else int(d) for d in dims)


CONSTANTS.update({f"tf.dtypes.{name}": name for name in (  # tf.dtypes.float32 is tf.float32: its name
    "bfloat16", "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "string", "complex64", "complex128")})
CONSTANTS.update({"tf.errors.InvalidArgumentError": InvalidArgumentError,
                  "tf.errors.NotFoundError": NotFoundError,
                  "tf.UnconnectedGradients": _UnconnectedGradients, "tf.newaxis": None,
                  "tf.image.ResizeMethod": _ResizeMethod, "tf.TensorShape": _tensor_shape, **_data.CONSTANTS})


def _ops_fn(name: str):
    from flexflow_keras import ops
    from flexflow_keras.ops import conv_api

    return getattr(conv_api, name, None) or getattr(ops, name)


def _lookup():
    from flexflow_keras import tf_lookup

    return tf_lookup


def _ctc_beam():
    from flexflow_keras.ops import ctc_beam

    return ctc_beam


def _add_n(inputs):
    """`tf.add_n`: the sum of a list of tensors of one shape."""
    from flexflow_keras import ops

    inputs = list(inputs)
    if not inputs:
        raise ConfigError("tf.add_n needs at least one tensor.")
    out = inputs[0]
    for t in inputs[1:]:
        out = ops.add(out, t)
    return out


def _tf_gamma(shape, alpha, beta=None, dtype="float32", seed=None, name=None):
    """`tf.random.gamma`: samples of shape ``shape + broadcast(alpha, beta).shape``; beta is a rate (TensorFlow's
    inverse scale), drawn from this framework's generator (`tf.random.set_seed` seeds it)."""
    from flexflow_keras import random

    alpha = np.asarray(alpha, np.float64)
    rate = np.ones_like(alpha) if beta is None else np.asarray(beta, np.float64)
    alpha, rate = np.broadcast_arrays(alpha, rate)
    full = tuple(int(s) for s in np.asarray(shape).reshape(-1)) + alpha.shape
    draws = np.asarray(random.gamma(full, np.broadcast_to(alpha, full), dtype="float64", seed=seed))
    return _random_result(draws / np.broadcast_to(rate, full), dtype)


def _random_result(values, dtype):
    from flexflow_keras.ops.eager_tensor import eager

    return eager(np.asarray(values).astype(str(dtype)))


def _clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`tf.clip_by_value` with TensorFlow's argument names."""
    from flexflow_keras import ops

    return ops.clip(t, clip_value_min, clip_value_max)


def _summary(name: str):
    from flexflow_keras import tf_summary

    return getattr(tf_summary, name)


def _checkpoint(name: str):
    from flexflow_keras import tf_checkpoint

    return getattr(tf_checkpoint, name)


def _variable(*args, **kwargs):
    from flexflow_keras.variables import tf_variable

    return tf_variable(*args, **kwargs)





def mapped_call(path: str):
    """The function that runs raw TensorFlow `path` ("tf.math.exp"), or None when it stays refused."""
    if path in CALLS:
        return CALLS[path]
    from flexflow_keras import (
        tf_array_ops,
        tf_control_flow,
        tf_conv_ops,
        tf_count_ops,
        tf_linalg_decomp,
        tf_linalg_ops,
        tf_math_ops,
        tf_nest,
        tf_scatter_ops,
        tf_space_ops,
        tf_stateless_random,
    )

    for module in (_setup, _data, tf_array_ops, tf_math_ops, tf_scatter_ops, tf_count_ops, tf_linalg_ops, tf_nest,
                   tf_control_flow, tf_linalg_decomp, tf_conv_ops, tf_stateless_random, tf_space_ops):
        if path in module.CALLS:
            return module.CALLS[path]
    parts = path.split(".")
    if len(parts) == 3 and parts[1] in ("signal", "audio"):
        from flexflow_keras import tf_signal

        names = tf_signal.SIGNAL_NAMES if parts[1] == "signal" else tf_signal.AUDIO_NAMES
        return getattr(tf_signal, parts[2]) if parts[2] in names else None
    if len(parts) == 3 and parts[1] == "math" and "segment_" in parts[2]:
        from flexflow_keras import tf_segment

        return tf_segment.CALLS.get(path)
    if len(parts) == 2 or (len(parts) == 3 and parts[1] == "math"):
        from flexflow_keras import tf_signal

        if parts[-1] in tf_signal.MATH_NAMES:  # complex numbers; tf.abs of a complex tensor is its magnitude
            return tf_signal.MATH_NAMES[parts[-1]]
        name = _SAME_OPS.get(parts[-1])
        if name is not None:
            from flexflow_keras import ops, tf_keywords

            return tf_keywords.wrap(parts[-1], getattr(ops, name, None))  # TensorFlow's parameter names
    if len(parts) == 3 and parts[1] == "ragged" and parts[2] == "constant":
        from flexflow_keras import tf_ragged

        return tf_ragged.constant
    if len(parts) == 3 and parts[1] == "strings":
        from flexflow_keras import tf_strings

        return getattr(tf_strings, parts[2]) if parts[2] in tf_strings.NAMES else None
    if len(parts) == 3 and parts[1] in ("io", "image"):
        from flexflow_keras import tf_image, tf_io

        if parts[2] in (tf_io.IO_NAMES if parts[1] == "io" else tf_io.DECODE_NAMES):
            return getattr(tf_io, parts[2])
        return getattr(tf_image, parts[2]) if parts[1] == "image" and parts[2] in tf_image.IMAGE_NAMES else None
    if len(parts) == 3 and parts[1] == "random" and parts[2] in _SAME_RANDOM:
        from flexflow_keras import random

        return getattr(random, parts[2])
    return None
