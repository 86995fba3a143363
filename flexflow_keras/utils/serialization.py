"""Custom-object registry and the `{"class_name", "config"}` form used by `get_config`/`from_config`.

Built-in classes are looked up by the module that deserializes them (initializers, layers, ...); user
classes registered with `register_keras_serializable` or passed in `custom_objects` are found here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

_GLOBAL: dict[str, Any] = {}
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
        return obj

    return decorator


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
    """`{"class_name", "config"}` for objects with `get_config`, the name for functions, else as is."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if hasattr(obj, "get_config"):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    if callable(obj) and hasattr(obj, "__name__"):
        return obj.__name__
    return obj


def deserialize_keras_object(config, module_objects: dict[str, Any] | None = None,
                             custom_objects: dict[str, Any] | None = None, kind: str = "object") -> Any:
    """Rebuild what `serialize_keras_object` produced.

    Args:
        config: a name, or a dict with ``class_name`` and ``config`` (Keras' ``module`` key is ignored).
        module_objects: the built-in names of the caller's module.
        custom_objects: extra names.
        kind: what is being deserialized, for the error message ("initializer", "layer", ...).
    """
    if config is None:
        return None
    if isinstance(config, dict):
        if "class_name" not in config:
            raise ValueError(f"Cannot deserialize {kind} from {config!r}: expected a dict with "
                             "'class_name' and 'config'.")
        name = config["class_name"]
        cls = lookup(name, custom_objects) or (module_objects or {}).get(name)
        if cls is None:
            raise ValueError(f"Unknown {kind} '{name}'. Register it with "
                             "@utils.register_keras_serializable() or pass custom_objects={'"
                             f"{name}': {name}}}.")
        inner = config.get("config", {}) or {}
        if hasattr(cls, "from_config"):
            return cls.from_config(inner)
        return cls(**inner)
    if isinstance(config, str):
        obj = lookup(config, custom_objects) or (module_objects or {}).get(config)
        if obj is None:
            raise ValueError(f"Unknown {kind} '{config}'.")
        return obj
    return config


def deserialize_instance(config, module_objects: dict[str, Any], custom_objects: dict[str, Any] | None = None,
                         kind: str = "object") -> Any:
    """`deserialize_keras_object`, with a class found by name instantiated with its defaults.

    Args:
        config: a name, or a dict with ``class_name`` and ``config``.
        module_objects: the built-in names of the caller's module.
        custom_objects: extra names.
        kind: what is being deserialized, for the error message ("initializer", "constraint", ...).
    """
    return instantiate(deserialize_keras_object(config, module_objects, custom_objects, kind=kind))
