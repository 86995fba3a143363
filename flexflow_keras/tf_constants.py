"""TensorFlow's error classes, dtype conventions and constants under `python -m flexflow_keras` (tf_compat.py's
`CONSTANTS`): `tf.errors.InvalidArgumentError`, `NotFoundError` and `AlreadyExistsError`, `tf.dtypes.X` (a dtype's name, as
`tf.float32` is here), `tf.newaxis`, `tf.UnconnectedGradients`, `tf.image.ResizeMethod` and `tf.TensorShape`;
and the dtype rules the mapped calls share: TensorFlow's names of dtypes in its messages ("float" for float32),
the dtype of one of our tensors, and the dtype TensorFlow gives a Python value it converts (floats float32,
ints int32).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ConfigError, FlexFlowKerasError


def _is_int(x) -> bool:
    return np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype).kind in "iub"


class InvalidArgumentError(FlexFlowKerasError, ValueError):
    """`tf.errors.InvalidArgumentError`: an op received arguments it cannot compute on (tensors of two dtypes)."""


class NotFoundError(FlexFlowKerasError, LookupError):
    """`tf.errors.NotFoundError`: TensorFlow has no kernel for the op on this device (tf_space_ops.py), or a
    path does not exist (tf_gfile.py)."""


class AlreadyExistsError(FlexFlowKerasError, FileExistsError):
    """`tf.errors.AlreadyExistsError`: a file operation's target exists (tf_gfile.py's rename and copy)."""


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


CONSTANTS = {f"tf.dtypes.{name}": name for name in (  # tf.dtypes.float32 is tf.float32: its name
    "bfloat16", "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "string", "complex64", "complex128")}
CONSTANTS.update({"tf.errors.InvalidArgumentError": InvalidArgumentError,
                  "tf.errors.NotFoundError": NotFoundError, "tf.errors.AlreadyExistsError": AlreadyExistsError,
                  "tf.UnconnectedGradients": _UnconnectedGradients, "tf.newaxis": None,
                  "tf.image.ResizeMethod": _ResizeMethod, "tf.TensorShape": _tensor_shape})
