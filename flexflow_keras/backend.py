"""`keras.backend`: global numeric settings (image data format, epsilon, floatx), `clear_session` and
small tensor helpers (`int_shape`, `get_value`, `set_value`).

The settings live here, in the process, as in Keras; layers read them when they are constructed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from flexflow_keras.utils import naming

_state = {"image_data_format": "channels_last", "epsilon": 1e-7, "floatx": "float32"}
_clear_hooks: list[Callable[[], None]] = []

_FORMATS = ("channels_last", "channels_first")
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def backend() -> str:
    """The name of the numeric backend: `"flexflow"`, and `"tensorflow"` under `python -m flexflow_keras`.

    Under the runner a script's `tensorflow` is the stand-in whose `tf.*` names are mapped (keras_alias.py),
    so a backend-agnostic script's ``if keras.backend.backend() == "tensorflow":`` branch is the one that
    runs (keras.io's examples pick their `tf.matmul` & co by it; their jax and torch branches import those
    packages, and with "flexflow" no branch ran and a layer returned None).
    """
    from flexflow_keras import keras_alias

    return "tensorflow" if keras_alias.installed() else "flexflow"


def image_data_format() -> str:
    """`"channels_last"` (the default, NHWC) or `"channels_first"` (NCHW)."""
    return _state["image_data_format"]


def set_image_data_format(data_format: str) -> None:
    """Set the default `data_format` of image layers built afterwards.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """
    fmt = str(data_format).lower()
    if fmt not in _FORMATS:
        raise ValueError(f"set_image_data_format expects one of {list(_FORMATS)}, received "
                         f"data_format={data_format!r}.")
    _state["image_data_format"] = fmt


def standardize_data_format(data_format: str | None, who: str = "layer") -> str:
    """`data_format` or the global default, validated (used by image layers)."""
    if data_format is None:
        return image_data_format()
    fmt = str(data_format).lower()
    if fmt not in _FORMATS:
        raise ValueError(f"{who} expects data_format to be one of {list(_FORMATS)}, received "
                         f"data_format={data_format!r}.")
    return fmt


def epsilon() -> float:
    """The fuzz factor used in numeric expressions (default 1e-7)."""
    return _state["epsilon"]


def set_epsilon(value: float) -> None:
    """Set the fuzz factor returned by `epsilon()`.

    Args:
        value: a positive float.
    """
    v = float(value)
    if not v > 0:
        raise ValueError(f"set_epsilon expects a positive float, received {value!r}.")
    _state["epsilon"] = v


def floatx() -> str:
    """The default float dtype name (default `"float32"`)."""
    return _state["floatx"]


def set_floatx(value: str) -> None:
    """Set the default float dtype of weights and inputs.

    Args:
        value: one of ``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``.
    """
    v = str(value)
    if v not in _FLOATS:
        raise ValueError(f"set_floatx expects one of {list(_FLOATS)}, received {value!r}.")
    _state["floatx"] = v


def clear_session() -> None:
    """Reset global state: layer-name counters (names start again at `dense`) and registered caches."""
    naming.reset_uids()
    for hook in list(_clear_hooks):
        hook()


def on_clear_session(hook: Callable[[], None]) -> None:
    """Register `hook` to run on every `clear_session()` (for modules that cache per-session state)."""
    if hook not in _clear_hooks:
        _clear_hooks.append(hook)


def get_uid(prefix: str = "") -> int:
    """Increment and return the counter of `prefix`."""
    return naming.get_uid(prefix)


def int_shape(x) -> tuple[int | None, ...]:
    """The shape of a tensor, variable or array as a tuple of ints (None for an unknown dim); a symbolic
    tensor's batch is the one its Input declared (``Input(batch_shape=(16, ...))``), as ``x.shape`` shows."""
    from flexflow_keras.ops.graph import KerasTensor, user_shape

    if isinstance(x, KerasTensor):
        return tuple(None if s is None else int(s) for s in user_shape(x))
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    return tuple(None if s is None else int(s) for s in shape)


def is_keras_tensor(x) -> bool:
    """Whether `x` is a symbolic tensor (the output of `Input` or of a layer called on one)."""
    from flexflow_keras.ops.graph import KerasTensor

    return isinstance(x, KerasTensor)


def cast_to_floatx(x) -> np.ndarray:
    """`x` as an array of the default float dtype."""
    return np.asarray(x, dtype=floatx())


def get_value(x):
    """The value of a variable (`numpy()`) or of a Python/NumPy number, as Keras 2's `K.get_value`."""
    if hasattr(x, "numpy"):
        return x.numpy()
    if hasattr(x, "value") and not callable(x.value):
        return np.asarray(x.value)
    return np.asarray(x) if not isinstance(x, (int, float)) else x


def set_value(x, value) -> None:
    """Assign `value` to a variable-like `x` (anything with `assign`), as Keras 2's `K.set_value`."""
    if not hasattr(x, "assign"):
        raise TypeError(f"set_value expects a variable with an assign() method, received "
                        f"{type(x).__name__}. For an optimizer's rate, set optimizer.learning_rate.")
    x.assign(value)


def __getattr__(name: str):
    # Keras 2's tensor functions (K.mean, K.square, K.batch_dot, ...) live in backend_functions, loaded on
    # first use (it imports ops, which this module must not import at load time).
    from flexflow_keras import backend_functions

    if name in backend_functions.__all__:
        return getattr(backend_functions, name)
    if name in ("gradients", "function", "placeholder", "get_session", "set_session", "update", "update_add"):
        raise AttributeError(f"keras.backend.{name} is TensorFlow-graph machinery that flexflow_keras does not "
                             f"provide: models train through compile()/fit(); put custom maths in layers, "
                             f"losses or a compute_loss() override using keras.ops.")
    if name in ("ctc_batch_cost", "ctc_decode"):  # Keras 2's CTC functions (ops/ctc.py)
        from flexflow_keras.ops import ctc

        return ctc.ctc_batch_cost if name == "ctc_batch_cost" else ctc.backend_ctc_decode
    if name == "ctc_label_dense_to_sparse":
        from flexflow_keras.ops import UnsupportedOpsError

        raise UnsupportedOpsError("keras.backend.ctc_label_dense_to_sparse makes a tf.SparseTensor, which "
                                  "flexflow_keras does not have: pass the dense padded labels and their lengths "
                                  "to keras.backend.ctc_batch_cost or keras.ops.ctc_loss.")
    raise AttributeError(f"module 'flexflow_keras.backend' has no attribute {name!r}")
