"""Custom-object registry, custom-object scopes, and the `serialize_keras_object` /
`deserialize_keras_object` entry points (Keras 3's format, written and read by utils/keras_format.py).

Built-in classes are looked up by the module that deserializes them (initializers, layers, ...); user
classes registered with `register_keras_serializable` or passed in `custom_objects` are found here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

_GLOBAL: dict[str, Any] = {}
_NAMES: dict[Any, str] = {}  # object -> "package>name" (kept when get_custom_objects() is cleared, as Keras)
_scopes = threading.local()


def get_custom_objects() -> dict[str, Any]:
    """The global registry (a live dict: `get_custom_objects()["MyLayer"] = MyLayer` registers)."""
    return _GLOBAL


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable:
    """Class decorator registering a class (or function) under ``"package>name"`` and its plain name.

    Args:
        package: namespace of the registration.
        name: registered name; the class's `__name__` when None.
    """
    def decorator(obj):
        key = name or obj.__name__
        _GLOBAL[f"{package}>{key}"] = obj
        _GLOBAL.setdefault(key, obj)
        _NAMES[obj] = f"{package}>{key}"
        return obj

    return decorator


def get_registered_name(obj) -> str:
    """The ``"package>name"`` `obj` (a class or function) is registered under, else its `__name__`."""
    try:
        found = _NAMES.get(obj)
    except TypeError:  # an unhashable object
        found = None
    return found if found is not None else getattr(obj, "__name__", type(obj).__name__)


@contextlib.contextmanager
def custom_object_scope(*dicts: dict[str, Any] | None) -> Iterator[None]:
    """Within the block, names in `dicts` resolve during deserialization (Keras' `CustomObjectScope`)."""
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    merged: dict[str, Any] = {}
    for d in dicts:
        merged.update(d or {})
    stack.append(merged)
    try:
        yield
    finally:
        stack.pop()


CustomObjectScope = custom_object_scope


def lookup(name: str, custom_objects: dict[str, Any] | None = None) -> Any | None:
    """Resolve `name` from `custom_objects`, the active scopes, then the global registry."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    for scope in reversed(getattr(_scopes, "stack", None) or []):
        if name in scope:
            return scope[name]
    return _GLOBAL.get(name)


class Configurable:
    """Base of objects whose constructor arguments are their config: ``get_config() -> {}`` (subclasses
    with arguments override it) and ``from_config(config) -> cls(**config)``."""

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


def instantiate(obj) -> Any:
    """`obj()` for a class (a name or config that resolves to a class means its default instance), else
    `obj` as it is."""
    return obj() if isinstance(obj, type) else obj


def named_instance(name: str, module_objects: dict[str, Any]) -> Any | None:
    """The default instance for `name`: ``module_objects[name]()`` for a built-in name, else the registered
    or scoped custom object (`lookup`) instantiated if it is a class; None when the name is unknown."""
    if name in module_objects:
        return module_objects[name]()
    custom = lookup(name)
    return None if custom is None else instantiate(custom)


def serialize_keras_object(obj) -> Any:
    """`obj` as Keras 3 writes it: ``{"module", "class_name", "config", "registered_name"}`` (plus
    ``build_config`` / ``compile_config`` for built layers and compiled models), nested objects likewise.

    Args:
        obj: a Keras object (layer, model, initializer, regularizer, optimizer, ...), a function, or plain
            values, lists and dicts of them.

    Example:
        >>> keras.saving.serialize_keras_object(keras.regularizers.L1(0.005))
        {'module': 'keras.regularizers', 'class_name': 'L1', 'config': {'l1': 0.005}, 'registered_name': None}
    """
    from flexflow_keras.utils import keras_format

    return keras_format.serialize(obj)


def deserialize_keras_object(config, custom_objects: dict[str, Any] | None = None, safe_mode: bool = True, *,
                             module_objects: dict[str, Any] | None = None, kind: str = "object",
                             **kwargs) -> Any:
    """Rebuild what `serialize_keras_object` produced, or a short ``{"class_name", "config"}`` config
    (Keras 2, tf.keras and earlier flexflow_keras files).

    Args:
        config: a serialized object, a name, or a list / dict of them.
        custom_objects: ``{"Name": class_or_function}`` for user objects that are not registered.
        safe_mode: refuse serialized lambdas.
        module_objects: the built-in names of the caller's kind; with them an unknown name is an error.
        kind: what is being deserialized, for the error message ("initializer", "layer", ...).
    """
    from flexflow_keras.utils import keras_format

    kind = kwargs.pop("printable_module_name", kind)  # Keras 2's name for it
    if kwargs:
        raise TypeError(f"deserialize_keras_object() got unexpected keyword arguments {sorted(kwargs)}; it "
                        "takes config, custom_objects, safe_mode and module_objects.")
    return keras_format.deserialize(config, custom_objects, safe_mode, module_objects=module_objects, kind=kind)


def deserialize_instance(config, module_objects: dict[str, Any], custom_objects: dict[str, Any] | None = None,
                         kind: str = "object") -> Any:
    """`deserialize_keras_object`, with a class found by name instantiated with its defaults.

    Args:
        config: a name, or a dict with ``class_name`` and ``config``.
        module_objects: the built-in names of the caller's module.
        custom_objects: extra names.
        kind: what is being deserialized, for the error message ("initializer", "constraint", ...).
    """
    return instantiate(deserialize_keras_object(config, custom_objects, module_objects=module_objects, kind=kind))
