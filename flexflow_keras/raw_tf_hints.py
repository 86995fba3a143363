"""The Keras spelling of a raw TensorFlow call, for the `python -m flexflow_keras` error message.

`keras_spelling("tf.reduce_mean")` is ``"keras.ops.mean"``: renamed calls come from a short table, and a
`tf.X` / `tf.math.X` / `tf.nn.X` whose name `keras.ops` has (and `tf.random.X` in `keras.random`) maps to
that same name. None when there is no direct equivalent.
"""

from __future__ import annotations

import importlib
import types

_RENAMED = {
    "tf.concat": "keras.ops.concatenate",
    "tf.reduce_max": "keras.ops.max",
    "tf.reduce_mean": "keras.ops.mean",
    "tf.reduce_min": "keras.ops.min",
    "tf.reduce_prod": "keras.ops.prod",
    "tf.reduce_sum": "keras.ops.sum",
    "tf.math.reduce_mean": "keras.ops.mean",
    "tf.math.reduce_sum": "keras.ops.sum",
    "tf.nn.moments": "keras.ops.moments",
    "tf.clip_by_value": "keras.ops.clip",
    "tf.random.categorical": "keras.random.categorical",
}


def _has(module: str, name: str) -> bool:
    """Whether `module` has a function `name` (a submodule of ours, such as ops.gradients, is no spelling)."""
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return False
    return callable(found) and not isinstance(found, types.ModuleType)


def keras_spelling(call: str) -> str | None:
    """The Keras call that replaces the raw TensorFlow `call` (``"tf.nn.relu"``), or None."""
    if call in _RENAMED:
        return _RENAMED[call]
    parts = call.split(".")
    if len(parts) == 2 or (len(parts) == 3 and parts[1] in ("math", "nn", "linalg")):
        if _has("flexflow_keras.ops", parts[-1]):
            return f"keras.ops.{parts[-1]}"
    if len(parts) == 3 and parts[1] == "random" and _has("flexflow_keras.random", parts[2]):
        return f"keras.random.{parts[2]}"
    return None
