"""`keras.saving`: whole-model files in Keras 3's `.keras` format and the custom-object registry.

`save_model` / `load_model` read and write `.keras` archives (saving/keras_file.py) through atomic
renames (saving/atomic.py); model configs follow Keras 3's layout (saving/model_config.py) and the
optimizer's state its variable order (saving/optimizer_state.py).
"""

from flexflow_keras.saving.keras_file import load_model, save_model
from flexflow_keras.utils.serialization import (
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    register_keras_serializable,
    serialize_keras_object,
)


def save_weights(model, filepath, overwrite=True, **kwargs) -> None:
    """`model.save_weights(filepath)` (``.weights.h5``, Keras 3's layout), written atomically.

    Args:
        model: a built model.
        filepath: a path ending in ``.weights.h5``.
        overwrite: replace an existing file.
    """
    model.save_weights(filepath, overwrite=overwrite, **kwargs)


def load_weights(model, filepath, skip_mismatch=False, **kwargs) -> None:
    """`model.load_weights(filepath)` from a ``.weights.h5`` or ``.keras`` file.

    Args:
        model: a built model of the saved architecture.
        filepath: the weights (or whole-model) file.
        skip_mismatch: skip (and log) layers whose weights do not match instead of raising.
    """
    model.load_weights(filepath, skip_mismatch=skip_mismatch, **kwargs)


def get_registered_name(obj) -> str:
    """The name `obj` (a class or function; an instance means its class) is registered under
    (``"package>Name"``; its plain name when unregistered)."""
    import types

    from flexflow_keras.utils.serialization import get_registered_name as registered

    return registered(obj if isinstance(obj, (type, types.FunctionType)) else type(obj))


def get_registered_object(name: str, custom_objects=None, module_objects=None):
    """The class or function registered (or passed in `custom_objects`) under `name`, else None."""
    from flexflow_keras.utils.serialization import lookup

    found = lookup(name, custom_objects)
    return found if found is not None else (module_objects or {}).get(name)


__all__ = ["CustomObjectScope", "custom_object_scope", "deserialize_keras_object", "get_custom_objects",
           "get_registered_name", "get_registered_object", "load_model", "load_weights",
           "register_keras_serializable", "save_model", "save_weights", "serialize_keras_object"]
