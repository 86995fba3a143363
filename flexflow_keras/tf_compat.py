"""The raw TensorFlow calls that `python -m flexflow_keras` runs rather than refuses (keras_alias.py).

Public tf.keras scripts open with a few TensorFlow calls that have an exact meaning here, and use a few
TensorFlow math functions that are `keras.ops` functions under another module: refusing them stopped
scripts whose Keras part runs (`tf.random.set_seed(42)` on their first line). Mapped:

- setup calls: `tf.random.set_seed` seeds the framework's generator (initializers, dropout), as it
  seeds TensorFlow's ops, and leaves Python's and NumPy's; `tf.function` returns the function (this
  framework traces the training step itself); `tf.get_logger()` is flexflow_keras' logger, and
  `tf.compat.v1.logging.set_verbosity` / `tf.autograph.set_verbosity` set its level or do nothing;
  `tf.config.list_physical_devices("GPU")` lists the GPUs `-ll:gpu` gives (so ``if gpus:`` branches
  behave), the CPU one CPU.
- data: ``tf.data.Dataset.from_tensor_slices(...)`` and the chain tutorials give it (shuffle, batch, map,
  take, skip, prefetch, cache; data/slices.py), and ``tf.data.AUTOTUNE``.
- math: `tf.X`, `tf.math.X` for the names in `_SAME_OPS`, whose `keras.ops` function has the same
  arguments in the same order and the same meaning (`tf.reduce_mean(x, axis, keepdims)` is
  `keras.ops.mean`); `tf.where(cond, x, y)`; and `tf.random.normal` / `uniform`. A keyword TensorFlow has and Keras does not
  (`tf.matmul(a, b, transpose_b=True)`) is a `RawTensorFlowError` naming the call. Names whose
  TensorFlow meaning or argument order differs from Keras' (`tf.split`'s sizes against `keras.ops.split`'s
  indices, `tf.argmax`'s and `tf.cumsum`'s default axis 0, `tf.one_hot`'s third argument) are not mapped: they stay refused, with the Keras spelling in the message.
"""

from __future__ import annotations

import logging
from collections import namedtuple

# TensorFlow name (under tf. and tf.math.) -> keras.ops name, for same arguments and same meaning
_SAME_OPS = {name: name for name in (
    "abs", "add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "square", "sqrt", "exp",
    "log", "log1p", "sin", "cos", "tan", "sign", "floor", "ceil", "negative", "reciprocal", "erf",
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
    "logical_not", "cast", "reshape", "transpose", "expand_dims", "squeeze", "stack", "tile", "matmul",
    "einsum", "ones_like", "zeros_like", "zeros", "ones")}
_SAME_OPS.update({"reduce_mean": "mean", "reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
                  "reduce_prod": "prod", "concat": "concatenate", "constant": "convert_to_tensor",
                  "convert_to_tensor": "convert_to_tensor", "truediv": "divide", "pow": "power"})
_SAME_RANDOM = ("normal", "uniform")

PhysicalDevice = namedtuple("PhysicalDevice", ["name", "device_type"])
_LOG_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "WARNING": logging.WARNING,
               "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def _set_seed(seed) -> None:
    from flexflow_keras.utils import rng

    rng.set_framework_seed(seed)


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


def _where(condition, x=None, y=None):
    """`tf.where(cond, x, y)`; the one-argument form (coordinates of the true entries) is not Keras'."""
    if x is None or y is None:
        raise TypeError("the one-argument form tf.where(condition) has no keras.ops equivalent here; give x "
                        "and y (keras.ops.where(condition, x, y))")
    from flexflow_keras import ops

    return ops.where(condition, x, y)


CALLS = {
    "tf.random.set_seed": _set_seed, "tf.compat.v1.set_random_seed": _set_seed,
    "tf.function": _function,
    "tf.get_logger": _logger,
    "tf.compat.v1.logging.set_verbosity": _set_verbosity, "tf.autograph.set_verbosity": _no_op,
    "tf.config.list_physical_devices": _devices, "tf.config.experimental.list_physical_devices": _devices,
    "tf.config.list_logical_devices": _devices,
    "tf.squared_difference": _squared_difference, "tf.math.squared_difference": _squared_difference,
    "tf.where": _where,
    "tf.data.Dataset.from_tensor_slices": lambda *a, **k: _slices().from_tensor_slices(*a, **k),
}
CONSTANTS = {f"tf.compat.v1.logging.{k}": v for k, v in _LOG_LEVELS.items()}
CONSTANTS.update({"tf.data.AUTOTUNE": -1, "tf.data.experimental.AUTOTUNE": -1})


def _slices():
    from flexflow_keras.data.slices import SliceDataset

    return SliceDataset


def mapped_call(path: str):
    """The function that runs raw TensorFlow `path` ("tf.math.exp"), or None when it stays refused."""
    if path in CALLS:
        return CALLS[path]
    parts = path.split(".")
    if len(parts) == 2 or (len(parts) == 3 and parts[1] == "math"):
        name = _SAME_OPS.get(parts[-1])
        if name is not None:
            from flexflow_keras import ops

            return getattr(ops, name, None)
    if len(parts) == 3 and parts[1] == "random" and parts[2] in _SAME_RANDOM:
        from flexflow_keras import random

        return getattr(random, parts[2])
    return None
