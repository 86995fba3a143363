"""What every module of TensorFlow calls mapped under the runner shares (tf_array_ops.py, tf_math_ops.py,
tf_count_ops.py, tf_scatter_ops.py, tf_linalg_ops.py): `keras.ops` imported late, the refusal of an
argument or use only TensorFlow's function has, TensorFlow's InvalidArgumentError, and the conversion of a
Python value as TensorFlow converts it."""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.graph import KerasTensor


def ops():
    """flexflow_keras.ops (imported when a mapped call runs: tf_compat is imported before it)."""
    from flexflow_keras import ops as keras_ops

    return keras_ops


def refuse(call: str, why: str, instead: str):
    """Raise the runner's RawTensorFlowError for `call`: `why` it is refused and what to do `instead`."""
    from flexflow_keras.keras_alias import RawTensorFlowError

    raise RawTensorFlowError(f"{call}: {why} {instead}")


def invalid(message: str):
    """Raise TensorFlow's InvalidArgumentError (tf.errors.InvalidArgumentError under the runner)."""
    from flexflow_keras.tf_compat import InvalidArgumentError

    raise InvalidArgumentError(message)


def tensor(x):
    """x as TensorFlow converts it (a list of Python floats float32, of ints int32); tensors as they are."""
    if isinstance(x, KerasTensor | np.ndarray) or hasattr(x, "value"):
        return x
    from flexflow_keras.tf_compat import _constant

    return _constant(x)
