"""The raw TensorFlow calls that `python -m flexflow_keras` runs rather than refuses (keras_alias.py).

Public tf.keras scripts open with a few TensorFlow calls that have an exact meaning here, and use a few
TensorFlow math functions that are `keras.ops` functions under another module: refusing them stopped
scripts whose Keras part runs (`tf.random.set_seed(42)` on their first line). Mapped:

- setup calls: `tf.random.set_seed` seeds the framework's generator (initializers, dropout, dataset
  shuffles), as it seeds TensorFlow's ops, and leaves Python's and NumPy's; `tf.function` returns the
  function (this framework traces the training step itself); `tf.get_logger()` is flexflow_keras'
  logger (so ``setLevel("ERROR")`` quiets this framework's messages too), and
  `tf.compat.v1.logging.set_verbosity` / `tf.autograph.set_verbosity` set its level or do nothing;
  `tf.config.list_physical_devices("GPU")` lists the GPUs `-ll:gpu` gives (so ``if gpus:`` branches
  behave) and `set_memory_growth` does nothing (GPU memory is -ll:fsize's); choosing devices in code
  (`set_visible_devices`) is an error that names the flags.
- data: ``tf.data.Dataset.from_tensor_slices(...)`` and the chain tutorials give it (shuffle, batch,
  map, take, skip, prefetch, cache, padded_batch, filter, unbatch, concatenate, enumerate; data/slices.py),
  ``tf.data.Dataset.list_files`` (a glob's paths, shuffled unless ``shuffle=False``),
  ``tf.data.Dataset.zip`` / ``range`` / ``from_generator``, ``tf.data.TextLineDataset`` (data/derived.py),
  ``tf.data.Dataset.sample_from_datasets`` / ``choose_from_datasets`` (data/grouping.py; also under
  tf.data.experimental), tf.data.experimental's ``bucket_by_sequence_length``, ``group_by_window``, ``scan``,
  ``unique``, ``ignore_errors`` (for ``ds.apply(...)``) and ``get_single_element``, ``tf.data.Options`` and
  ``tf.data.experimental.AutoShardPolicy`` & co (data/options.py), ``tf.data.AUTOTUNE``, and
  ``tf.data.experimental.cardinality(ds)`` (the dataset's `cardinality()`, of any of our datasets),
  ``tf.data.experimental.make_csv_dataset`` and ``CsvDataset`` (data/csv_dataset.py).
- `tf.test.gpu_device_name()` / `is_gpu_available()`: the `-ll:gpu` devices, as the device listing;
  `tf.test.is_built_with_cuda()` is True (every op here has a CUDA kernel; whether a GPU is there is
  the two others' question).
- math: `tf.X`, `tf.math.X` for the names in `_SAME_OPS`, whose `keras.ops` function has the same
  arguments in the same order and the same meaning (`tf.reduce_sum(x, axis, keepdims)` is
  `keras.ops.sum`); `tf.shape`, `tf.range` (TensorFlow's argument names); `tf.print` (to stderr, once
  on symbolic tensors); `tf.compat.as_bytes` / `as_str`; `tf.reduce_mean`, `tf.divide` and `tf.constant` with TensorFlow's dtypes (an integer
  mean is an integer, integers divide in float64, a Python int is int32); `tf.where(cond, x, y)`;
  `tf.argmax` / `tf.argmin` (TensorFlow's default axis 0, int64 indices);
  `tf.math.top_k` / `tf.nn.top_k` (k=1 by default, a TopKV2 tuple); `tf.newaxis`; `tf.dtypes.X` (as `tf.X`);
  `tf.unstack`; `tf.lookup.StaticHashTable` with `KeyValueTensorInitializer` (tf_lookup.py: on the host);
  `tf.math.floordiv` / `floormod` / `mod` (keras.ops.floor_divide / mod: integers stay integers);
  `tf.math.unsorted_segment_*` and `tf.math.segment_*` (tf_segment.py: keras.ops.segment_*'s op with
  TensorFlow's rules for empty segments, negative ids and sorted ids);
  `tf.Variable` and `tf.Module` (variables.py); `tf.GradientTape` (ops/tape.py) and
  `tf.UnconnectedGradients`; `tf.one_hot` (on/off values), `tf.split` (sizes or a count),
  `tf.repeat`, `tf.clip_by_value` (TensorFlow's argument names), `tf.gather` (keras.ops.take on axis 0 by
  default), `tf.math.reduce_std` / `reduce_variance`, `tf.add_n`, `tf.linalg.einsum`,
  `tf.nn.conv1d` / `conv2d` / `conv3d` / `convolution` / `atrous_conv2d` (keras.ops.conv), `tf.nn.max_pool` /
  `avg_pool` and their 1d/2d/3d forms (keras.ops.max_pool / average_pool; ops/conv_api.py),
  `tf.image.ResizeMethod`,
  `tf.numpy_function` / `tf.py_function` (on values: in a dataset's map or on arrays),
  `tf.nn.sigmoid_cross_entropy_with_logits`, `tf.stop_gradient`, `tf.nn.moments` (keras.ops.moments),
  `tf.nn.ctc_beam_search_decoder` (and tf.compat.v1's, which merges repeats) and `tf.nn.ctc_greedy_decoder` on
  arrays (ops/ctc_beam.py), whose sparse paths `tf.sparse.to_dense` densifies,
  `tf.matmul` with its transpose flags, `tf.math.l2_normalize`, `tf.eye`, `tf.pad` (constant, reflect,
  symmetric), `tf.random_normal_initializer`; `tf.train.Checkpoint`,
  `CheckpointManager` and `latest_checkpoint` (tf_checkpoint.py, this framework's own files);
  `tf.summary.create_file_writer`, `scalar`, `histogram` (tf_summary.py, TensorBoard's event files);
  `tf.strings.lower`, `regex_replace`, `split`, `reduce_join` and the rest of tf_strings.py's, on NumPy arrays;
  `tf.io.read_file`, the `decode_*` functions and `tf.image`'s resizing, dtype conversion, flips, crops and
  colour adjustments (tf_io.py, tf_image.py), on NumPy arrays, for image pipelines in a `Dataset.map`;
  `tf.audio.decode_wav`, `tf.signal`'s Fourier transforms, frames, windows, `stft` and mel matrix,
  `tf.complex` and complex `tf.abs` (tf_signal.py), on NumPy arrays, for audio pipelines;
  `tf.random.normal` / `uniform`; `tf.identity`; `tf.tensordot` (keras.ops.tensordot); `tf.image.extract_patches` (keras.ops.image's patches under
  TensorFlow's [1, h, w, 1] arguments);
  `tf.fill`, `tf.reverse`, `tf.boolean_mask` (eager), `tf.sequence_mask`, `tf.broadcast_to`, `tf.roll`,
  `tf.rank`, `tf.size`, `tf.sort` / `tf.argsort` (direction), `tf.meshgrid`, `tf.linalg.band_part`,
  `tf.nn.embedding_lookup` (tf_array_ops.py); `tf.cumsum` / `tf.math.cumprod` (TensorFlow's axis 0,
  exclusive, reverse), `tf.math.count_nonzero`, `tf.reduce_any` / `reduce_all` / `reduce_logsumexp`,
  `tf.math.is_nan` / `is_inf` / `is_finite`, `divide_no_nan`, `rsqrt`, `tf.round`, `tf.norm` /
  `tf.linalg.norm`, `tf.clip_by_norm`, `tf.math.log_sigmoid`, `atan2`, `atan`, `asin`, `acos`, `sinh`,
  `cosh`, `logical_xor`, `tf.nn.l2_loss`, `bias_add`, `softmax_cross_entropy_with_logits`,
  `sparse_softmax_cross_entropy_with_logits`, `tf.nn.dropout`, `tf.random.truncated_normal` / `shuffle`,
  `tf.nn.batch_normalization`, `tf.clip_by_global_norm` ((clipped list, global norm)), `tf.linalg.global_norm`
  (tf_math_ops.py); `tf.ensure_shape` (tf_array_ops.py); `tf.gather_nd` (batch_dims), `tf.scatter_nd`,
  `tf.tensor_scatter_nd_update` / `_add` / `_sub` (tf_scatter_ops.py: keras.ops.take / segment_sum, eager,
  symbolic and differentiable); `tf.unique` / `tf.unique_with_counts` (namedtuples, out_idx),
  `tf.searchsorted` (side, out_type; also symbolic), `tf.math.bincount` (weights, minlength, maxlength, dtype,
  axis, binary_output), `tf.math.confusion_matrix`, `tf.math.in_top_k` / `tf.nn.in_top_k` (also symbolic)
  (tf_count_ops.py; eager on arrays); `tf.linalg.inv` / `det` (eager; first derivatives under a tape),
  `diag` / `diag_part` (k=0), `trace`, `matvec` (tf_linalg_ops.py); `tf.nest.flatten` / `map_structure` /
  `pack_sequence_as` / `is_nested` (tf_nest.py: keras.tree's). An argument TensorFlow's function takes
  and Keras' does not
  (an argument only TensorFlow's function has) is a `RawTensorFlowError` naming the call. Names whose
  TensorFlow meaning or argument order differs from Keras' and that are not written out above are not
  mapped: they stay refused, with the Keras spelling in the message.
"""

from __future__ import annotations

import logging
import sys
from collections import namedtuple

import numpy as np

from flexflow_keras.data import options as _data_options
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

PhysicalDevice = namedtuple("PhysicalDevice", ["name", "device_type"])
_LOG_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "WARNING": logging.WARNING,
               "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def _set_seed(seed) -> None:
    """TensorFlow takes any integer, and None for an unseeded state."""
    from flexflow_keras.utils import rng

    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ConfigError(f"tf.random.set_seed expects an integer or None, received {seed!r}.")
    rng.set_framework_seed(None if seed is None else int(seed) % (1 << 63))


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
    """TensorFlow's dtypes: Python ints int32, Python floats float32, NumPy arrays their own."""
    from flexflow_keras.ops.eager_tensor import eager

    if dtype is None and not isinstance(value, np.ndarray):
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


def _memory_growth(device, enable) -> None:
    """GPU memory is the -ll:fsize flag's size, allocated as needed within it: nothing to set."""


def _visible_devices(*args, **kwargs):
    raise ConfigError("tf.config.set_visible_devices / set_logical_device_configuration: under flexflow_keras "
                      "the devices are the -ll:gpu N and -ll:cpu N command-line flags (and -ll:fsize for GPU "
                      "memory); remove the call and give the flags (e.g. -ll:gpu 1).")


def _function(func=None, *args, **kwargs):
    """`tf.function` as a decorator (bare or with arguments) or a call: the function itself."""
    if func is None or not callable(func):
        return lambda f: f
    return func


def _logger() -> logging.Logger:
    return logging.getLogger("flexflow_keras")


def _set_verbosity(level) -> None:
    _logger().setLevel(int(level))


def _no_op(*args, **kwargs) -> None:
    return None


def _devices(device_type=None) -> list:
    from flexflow_keras import config

    gpus = [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(config.get().gpus)]
    cpus = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    kind = (device_type or "").upper()
    return gpus if kind == "GPU" else cpus if kind == "CPU" else cpus + gpus


def _squared_difference(x, y):
    from flexflow_keras import ops

    return ops.square(ops.subtract(x, y))


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


def _tensor_spec(shape, dtype):
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


def _gpus() -> list:
    return _devices("GPU")


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


def _gpu_device_name() -> str:
    """`tf.test.gpu_device_name()`: the first `-ll:gpu` device's name, or "" without GPUs (as TensorFlow)."""
    return "/device:GPU:0" if _gpus() else ""


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
    "tf.random.set_seed": _set_seed, "tf.compat.v1.set_random_seed": _set_seed,
    "tf.function": _function,
    "tf.get_logger": _logger,
    "tf.compat.v1.logging.set_verbosity": _set_verbosity, "tf.autograph.set_verbosity": _no_op,
    "tf.config.list_physical_devices": _devices, "tf.config.experimental.list_physical_devices": _devices,
    "tf.config.list_logical_devices": _devices,
    "tf.squared_difference": _squared_difference, "tf.math.squared_difference": _squared_difference,
    "tf.Variable": lambda *a, **k: _variable(*a, **k),
    "tf.one_hot": _one_hot, "tf.split": _split, "tf.matmul": _matmul, "tf.linalg.matmul": _matmul,
    "tf.math.l2_normalize": _l2_normalize, "tf.nn.l2_normalize": _l2_normalize, "tf.eye": _eye,
    "tf.pad": _pad, "tf.expand_dims": _expand_dims, "tf.tile": _tile, "tf.random_normal_initializer": _random_normal_initializer,
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
    "tf.constant": _constant, "tf.convert_to_tensor": _constant,
    "tf.config.experimental.set_memory_growth": _memory_growth,
    "tf.config.set_visible_devices": _visible_devices, "tf.config.experimental.set_visible_devices": _visible_devices,
    "tf.config.set_logical_device_configuration": _visible_devices,
    "tf.data.Dataset.from_tensor_slices": lambda *a, **k: _slices().from_tensor_slices(*a, **k),
    "tf.data.Dataset.from_tensors": lambda *a, **k: _slices().from_tensors(*a, **k),
    "tf.TensorSpec": lambda shape=None, dtype="float32", name=None: _tensor_spec(shape, dtype),
    "tf.data.Dataset.zip": lambda *a, **k: _slices().zip(*a, **k),
    "tf.data.Dataset.range": lambda *a, **k: _slices().range(*a, **k),
    "tf.data.Dataset.from_generator": lambda *a, **k: _slices().from_generator(*a, **k),
    "tf.data.Dataset.list_files": lambda *a, **k: _slices().list_files(*a, **k),
    "tf.data.TextLineDataset": lambda *a, **k: _derived().text_line_dataset(*a, **k),
    "tf.data.experimental.cardinality": _cardinality,
    "tf.data.experimental.make_csv_dataset": lambda *a, **k: _csv().make_csv_dataset(*a, **k),
    "tf.data.experimental.CsvDataset": lambda *a, **k: _csv().csv_dataset(*a, **k),
    **{f"tf.data.{space}.{name}": (lambda *a, _name=name, **k: getattr(_slices(), _name)(*a, **k))
       for space in ("Dataset", "experimental") for name in ("sample_from_datasets", "choose_from_datasets")},
    # tf.data.experimental's transformations, for ds.apply(...)
    **{f"tf.data.experimental.{name}": (lambda *a, _name=name, **k: lambda ds: getattr(ds, _name)(*a, **k))
       for name in ("bucket_by_sequence_length", "group_by_window", "scan", "unique", "ignore_errors")},
    "tf.data.experimental.get_single_element": lambda dataset: dataset.get_single_element(),
    "tf.test.gpu_device_name": _gpu_device_name, "tf.test.is_gpu_available": lambda *a, **k: bool(_gpus()),
    "tf.test.is_built_with_cuda": lambda: True,
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
CONSTANTS = {f"tf.compat.v1.logging.{k}": v for k, v in _LOG_LEVELS.items()}
class _UnconnectedGradients:
    NONE, ZERO = "none", "zero"


class _ResizeMethod:
    """`tf.image.ResizeMethod`: the names tf.image.resize takes (tf_image.py computes bilinear and nearest)."""

    BILINEAR, NEAREST_NEIGHBOR, BICUBIC, AREA = "bilinear", "nearest", "bicubic", "area"
    LANCZOS3, LANCZOS5, GAUSSIAN, MITCHELLCUBIC = "lanczos3", "lanczos5", "gaussian", "mitchellcubic"


CONSTANTS.update({f"tf.dtypes.{name}": name for name in (  # tf.dtypes.float32 is tf.float32: its name
    "bfloat16", "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "string", "complex64", "complex128")})
CONSTANTS.update({"tf.errors.InvalidArgumentError": InvalidArgumentError,
                  "tf.UnconnectedGradients": _UnconnectedGradients, "tf.newaxis": None,
                  "tf.image.ResizeMethod": _ResizeMethod,
                  "tf.data.AUTOTUNE": -1, "tf.data.experimental.AUTOTUNE": -1,
                  "tf.data.INFINITE_CARDINALITY": -1, "tf.data.experimental.INFINITE_CARDINALITY": -1,
                  "tf.data.UNKNOWN_CARDINALITY": -2, "tf.data.experimental.UNKNOWN_CARDINALITY": -2})
CONSTANTS.update({"tf.data.Options": _data_options.Options, "tf.data.ThreadingOptions": _data_options.ThreadingOptions,
                  **{f"tf.data.experimental.{name}": getattr(_data_options, name) for name in (
                      "AutoShardPolicy", "ExternalStatePolicy", "AutotuneAlgorithm", "AutotuneOptions",
                      "DistributeOptions", "OptimizationOptions", "ThreadingOptions")}})


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


def _derived():
    from flexflow_keras.data import derived

    return derived


def _csv():
    from flexflow_keras.data import csv_dataset

    return csv_dataset


def _slices():
    from flexflow_keras.data.slices import SliceDataset

    return SliceDataset


def mapped_call(path: str):
    """The function that runs raw TensorFlow `path` ("tf.math.exp"), or None when it stays refused."""
    if path in CALLS:
        return CALLS[path]
    from flexflow_keras import tf_array_ops, tf_count_ops, tf_linalg_ops, tf_math_ops, tf_nest, tf_scatter_ops

    for module in (tf_array_ops, tf_math_ops, tf_scatter_ops, tf_count_ops, tf_linalg_ops, tf_nest):
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
            from flexflow_keras import ops

            return getattr(ops, name, None)
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
