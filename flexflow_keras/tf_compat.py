"""The raw TensorFlow calls that `python -m flexflow_keras` runs rather than refuses (keras_alias.py).

Public tf.keras scripts open with a few TensorFlow calls that have an exact meaning here, and use TensorFlow
math functions that are `keras.ops` functions under another module: refusing them stopped scripts whose
Keras part runs (`tf.random.set_seed(42)` on their first line). This module is the router: `mapped_call(path)`
finds the function, `CALLS` and `CONSTANTS` are every table below in one. Each module's docstring lists what
it maps:

- here: `tf.X` / `tf.math.X` for the names in `_SAME_OPS`, whose `keras.ops` function has the same
  arguments, order and meaning (`tf.reduce_sum(x, axis, keepdims)` is `keras.ops.sum`; TensorFlow's parameter
  names through tf_keywords.py), and the calls
  forwarded to the module that implements them: `tf.nn.conv*` / `atrous_conv2d` and the pools
  (ops/conv_api.py; the transposed, depthwise and separable ones through tf_conv_ops.py); `tf.Variable`,
  `tf.IndexedSlices` and `tf.Module` (variables.py); `tf.GradientTape` (ops/tape.py); `tf.custom_gradient`
  (ops/custom_gradient.py); CTC decoders and `tf.sparse.to_dense` (ops/ctc_beam.py); `tf.sparse.from_dense`, `tf.edit_distance` and `tf.cast` of sparse values
  (tf_sparse.py); `tf.io.gfile` (tf_gfile.py); `tf.lookup` (tf_lookup.py); `tf.train` checkpoints (tf_checkpoint.py); `tf.summary`
  (tf_summary.py); `tf.linalg.einsum`, `tf.tensordot`.
- tf_setup.py: seeds, `tf.function`, logging, device listing and `tf.test`'s GPU questions; tf_distribute.py:
  `tf.distribute.get_strategy`, `OneDeviceStrategy`, `MirroredStrategy` (scopes; placement stays ours).
- tf_data.py: `tf.data`'s dataset constructors, transformations for `ds.apply`, options and constants,
  and `tf.TensorSpec`.
- tf_constants.py: `tf.errors.InvalidArgumentError` / `NotFoundError`, `tf.dtypes.X`, `tf.newaxis`,
  `tf.UnconnectedGradients`, `tf.image.ResizeMethod`, `tf.TensorShape`, and the dtype rules the calls share.
- tf_tensor_basics.py: with TensorFlow's argument names and dtypes, `tf.constant` (a Python int is int32),
  `tf.concat`, `tf.shape`, `tf.range`, `tf.where(cond, x, y)`, `tf.one_hot`, `tf.split`, `tf.eye`, `tf.pad`,
  `tf.expand_dims`, `tf.tile`, `tf.gather`, `tf.identity`, `tf.image.extract_patches`.
- tf_math_basics.py: `tf.reduce_mean` (an integer mean is an integer), `tf.divide` (integers in float64),
  `tf.argmax` / `argmin` (axis 0, int64), `tf.math.top_k` / `tf.nn.top_k` (a TopKV2), `tf.matmul` (transpose
  flags), `tf.math.l2_normalize`, `tf.nn.moments`, `tf.nn.sigmoid_cross_entropy_with_logits`, `tf.add_n`,
  `tf.clip_by_value`.
- tf_host_calls.py: `tf.print` (stderr, once on symbolic tensors), `tf.compat.as_bytes` / `as_str`,
  `tf.numpy_function` / `tf.py_function` (on values: in a dataset's map or on arrays).
- tf_random_init.py: `tf.random.normal` / `uniform` / `categorical` (TensorFlow's defaults and op seeds),
  `tf.random.gamma`, `tf.random_normal_initializer` / `random_uniform_initializer` /
  `constant_initializer` / `zeros_initializer` / `ones_initializer`.
- their own modules: tf_array_ops.py (creation, reordering, selection, masks, tf.slice and
  tf.strided_slice), tf_math_ops.py (scans, reductions, norms, tf.nn losses, dropout, batch normalization,
  global-norm clipping, xlogy / xdivy, lgamma / digamma / erfc, squared_difference), tf_scatter_ops.py
  (gather_nd, scatter_nd), tf_space_ops.py (tf.nn.depth_to_space, space_to_depth), tf_count_ops.py
  (unique, searchsorted, bincount, confusion_matrix, in_top_k),
  tf_linalg_ops.py (inv, det, diag, trace, matvec), tf_linalg_decomp.py (qr, svd, eig(h), cholesky, solve,
  triangular_solve, lstsq, pinv, logdet, slogdet, matrix_rank), tf_segment.py (segment reductions), tf_nest.py
  (keras.tree), tf_numpy.py (`tf.experimental.numpy` as keras.ops), tf_strings.py, tf_io.py and tf_image.py
  (host pipelines), tf_signal.py (audio, Fourier transforms, complex numbers), tf_control_flow.py (cond, case,
  switch_case, while_loop, scan, map_fn, vectorized_map, foldl, foldr on keras.ops' control flow),
  tf_stateless_random.py, tf_conv_ops.py.

An argument only TensorFlow's function has is a `RawTensorFlowError` naming the call. Names whose
TensorFlow meaning or argument order differs from Keras' and that are not mapped stay refused, with the
Keras spelling in the message.
"""

from __future__ import annotations

from flexflow_keras import tf_constants as _constants
from flexflow_keras import tf_data as _data
from flexflow_keras import tf_host_calls as _host
from flexflow_keras import tf_math_basics as _math
from flexflow_keras import tf_numpy as _tnp
from flexflow_keras import tf_random_init as _random_init
from flexflow_keras import tf_setup as _setup
from flexflow_keras import tf_tensor_basics as _tensors

# The names other modules and scripts import from here (tf_array_ops, tf_count_ops, tf_convert, tf_segment,
# tf_linalg_ops, tf_space_ops: the errors, `_constant` and the dtype rules), and every function that lived here
from flexflow_keras.tf_constants import (  # noqa: F401
    _TF_DTYPE_NAMES,
    InvalidArgumentError,
    NotFoundError,
    _converted_dtype,
    _is_int,
    _ResizeMethod,
    _tensor_dtype,
    _tensor_shape,
    _UnconnectedGradients,
)
from flexflow_keras.tf_host_calls import _as_bytes, _as_tout, _host_function, _print  # noqa: F401
from flexflow_keras.tf_math_basics import (  # noqa: F401
    TopKV2,
    _add_n,
    _arg_reduce,
    _clip_by_value,
    _divide,
    _l2_normalize,
    _matmul,
    _moments,
    _reduce_mean,
    _sigmoid_cross_entropy,
    _top_k,
)
from flexflow_keras.tf_random_init import (  # noqa: F401
    _constant_initializer,
    _random_normal_initializer,
    _random_result,
    _random_uniform_initializer,
    _tf_gamma,
)
from flexflow_keras.tf_tensor_basics import (  # noqa: F401
    _concat,
    _constant,
    _expand_dims,
    _extract_patches,
    _eye,
    _gather,
    _identity,
    _one_hot,
    _pad,
    _range,
    _shape,
    _split,
    _tile,
    _where,
)

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


# TensorFlow's kernels of these take floating (and complex) tensors only: an integer or bool one (a Python int
# too, int32) is its InvalidArgumentError, where keras.ops computes in float (ZTM's TensorFlow course notebook
# 00 shows tf.sqrt of an int64 tensor failing, then casts it)
_FLOAT_ONLY = {"sqrt": "Sqrt", "exp": "Exp", "log": "Log", "log1p": "Log1p", "sin": "Sin", "cos": "Cos",
               "tan": "Tan", "floor": "Floor", "ceil": "Ceil", "erf": "Erf"}


def _float_only(tf_name: str, fn):
    """`fn` (keras.ops') refusing the integer and bool inputs TensorFlow's `tf.<tf_name>` refuses (`fn`'s
    signature kept, which the runner checks calls against)."""
    import functools

    @functools.wraps(fn)
    def call(*args, **kwargs):
        x = args[0] if args else kwargs.get("x")
        dtype = _constants._tensor_dtype(x) or _constants._converted_dtype(x)
        if dtype.kind in "iub":
            raise InvalidArgumentError(
                f"Value for attr 'T' of {dtype} is not in the list of allowed values: bfloat16, half, float, "
                f"double, complex64, complex128 [Op:{_FLOAT_ONLY[tf_name]}]: tf.{tf_name} takes floating tensors; "
                f"cast first, e.g. tf.{tf_name}(tf.cast(x, tf.float32)).")
        return fn(*args, **kwargs)

    return call


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


def _summary(name: str):
    from flexflow_keras import tf_summary

    return getattr(tf_summary, name)


def _checkpoint(name: str):
    from flexflow_keras import tf_checkpoint

    return getattr(tf_checkpoint, name)


def _custom_gradient(f=None):
    from flexflow_keras.ops.custom_gradient import custom_gradient

    return custom_gradient if f is None else custom_gradient(f)


def _indexed_slices(*args, **kwargs):
    from flexflow_keras.variables import IndexedSlices

    return IndexedSlices(*args, **kwargs)


def _variable(*args, **kwargs):
    from flexflow_keras.variables import tf_variable

    return tf_variable(*args, **kwargs)


# Calls forwarded to the module that implements them (imported when first called), then each table above
CALLS = {
    "tf.Variable": lambda *a, **k: _variable(*a, **k),
    "tf.custom_gradient": lambda *a, **k: _custom_gradient(*a, **k),
    "tf.IndexedSlices": lambda *a, **k: _indexed_slices(*a, **k),
    "tf.summary.create_file_writer": lambda *a, **k: _summary("create_file_writer")(*a, **k),
    "tf.summary.scalar": lambda *a, **k: _summary("scalar")(*a, **k),
    "tf.summary.histogram": lambda *a, **k: _summary("histogram")(*a, **k),
    "tf.summary.image": lambda *a, **k: _summary("image")(*a, **k),
    "tf.summary.text": lambda *a, **k: _summary("text")(*a, **k),
    "tf.summary.audio": lambda *a, **k: _summary("audio")(*a, **k),
    "tf.summary.flush": lambda *a, **k: _summary("flush")(*a, **k),
    "tf.summary.experimental.set_step": lambda *a, **k: _summary("set_step")(*a, **k),
    "tf.summary.experimental.get_step": lambda *a, **k: _summary("get_step")(*a, **k),
    "tf.train.Checkpoint": lambda *a, **k: _checkpoint("Checkpoint")(*a, **k),
    "tf.train.CheckpointManager": lambda *a, **k: _checkpoint("CheckpointManager")(*a, **k),
    "tf.train.latest_checkpoint": lambda *a, **k: _checkpoint("latest_checkpoint")(*a, **k),
    "tf.lookup.StaticHashTable": lambda *a, **k: _lookup().StaticHashTable(*a, **k),
    "tf.lookup.KeyValueTensorInitializer": lambda *a, **k: _lookup().KeyValueTensorInitializer(*a, **k),
    "tf.nn.conv2d": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    "tf.nn.conv1d": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    "tf.nn.convolution": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    "tf.nn.conv3d": lambda *a, **k: _ops_fn("tf_conv")(*a, **k),
    **{f"tf.nn.{mode}_pool{d}": (lambda *a, _mode=mode, **k: _ops_fn("tf_pool")(_mode)(*a, **k))
       for mode in ("max", "avg") for d in ("", "1d", "2d", "3d")},
    "tf.nn.atrous_conv2d": lambda value, filters, rate, padding, name=None: _ops_fn("tf_conv")(
        value, filters, 1, padding, dilations=rate),
    "tf.linalg.einsum": lambda *a, **k: _ops_fn("einsum")(*a, **k),
    "tf.tensordot": lambda a, b, axes, name=None: _ops_fn("tensordot")(a, b, axes),
    "tf.linalg.tensordot": lambda a, b, axes, name=None: _ops_fn("tensordot")(a, b, axes),
    "tf.nn.ctc_beam_search_decoder": lambda *a, **k: _ctc_beam().ctc_beam_search_decoder(*a, **k),
    "tf.compat.v1.nn.ctc_beam_search_decoder": lambda *a, **k: _ctc_beam().ctc_beam_search_decoder_v1(*a, **k),
    **{f"tf.{space}nn.ctc_greedy_decoder": (lambda *a, **k: _ctc_beam().greedy_decoder(*a, **k))
       for space in ("", "compat.v1.")},
    **_tensors.CALLS, **_math.CALLS, **_host.CALLS, **_random_init.CALLS,
}
CONSTANTS = {**_setup.CONSTANTS, **_constants.CONSTANTS, **_data.CONSTANTS, **_tnp.CONSTANTS}


def mapped_call(path: str):
    """The function that runs raw TensorFlow `path` ("tf.math.exp"), or None when it stays refused."""
    if path in CALLS:
        return CALLS[path]
    from flexflow_keras import (
        tf_array_ops,
        tf_control_flow,
        tf_conv_ops,
        tf_count_ops,
        tf_distribute,
        tf_gfile,
        tf_linalg_decomp,
        tf_linalg_ops,
        tf_math_ops,
        tf_nest,
        tf_scatter_ops,
        tf_space_ops,
        tf_sparse,
        tf_stateless_random,
    )

    for module in (_setup, _data, tf_distribute, tf_sparse, tf_array_ops, tf_math_ops, tf_scatter_ops, tf_count_ops,
                   tf_linalg_ops, tf_nest, tf_control_flow, tf_linalg_decomp, tf_conv_ops, tf_stateless_random,
                   tf_space_ops, tf_gfile):
        if path in module.CALLS:
            return module.CALLS[path]
    parts = path.split(".")
    if len(parts) == 4 and parts[1:3] == ["experimental", "numpy"]:
        return _tnp.call(parts[3])
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

            fn = tf_keywords.wrap(parts[-1], getattr(ops, name, None))  # TensorFlow's parameter names
            return _float_only(parts[-1], fn) if parts[-1] in _FLOAT_ONLY and fn is not None else fn
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
    return None
