"""Keras 3's object format: what `keras.saving.serialize_keras_object` writes and
`deserialize_keras_object` reads.

An object is ``{"module", "class_name", "config", "registered_name"}``: a built-in class names the public
Keras module it is exported from (``"keras.regularizers"``) and has ``registered_name`` None; a user class
names its defining module (None for ``__main__``) and the name it is registered under
(``"MyLayers>KernelMult"``, its class name when unregistered). A function is ``{"module": "builtins",
"class_name": "function", "config": <registered name>, "registered_name": "function"}``, as Keras 3 writes
it. Layers add ``build_config`` once built, compiled models ``compile_config``. Values inside a config are
written the same way, recursively; NumPy arrays, bytes, slices and Ellipsis get Keras' ``__numpy__``-style
envelopes.

Reading takes that form, and the short ``{"class_name", "config"}`` form of Keras 2, tf.keras and earlier
flexflow_keras files: without a ``module`` the class is found in the caller's `module_objects`, the custom
objects, the registry, then the public namespaces in `_NAMESPACES` order.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

from flexflow_keras.utils import serialization

# (Keras' public module, our module exporting the same names), in the order a class is looked up.
_NAMESPACES = (
    ("keras.layers", "flexflow_keras.layers"),
    ("keras.initializers", "flexflow_keras.initializers"),
    ("keras.regularizers", "flexflow_keras.regularizers"),
    ("keras.constraints", "flexflow_keras.constraints"),
    ("keras.optimizers.schedules", "flexflow_keras.optimizers.schedules"),
    ("keras.optimizers", "flexflow_keras.optimizers"),
    ("keras.losses", "flexflow_keras.losses"),
    ("keras.metrics", "flexflow_keras.metrics"),
    ("keras.activations", "flexflow_keras.activations"),
    ("keras", "flexflow_keras"),
    ("keras", "flexflow_keras.mixed_precision"),
    ("keras.models", "flexflow_keras.models"),
)
# Built-in kinds whose own `deserialize(config, custom_objects)` knows their Keras-only options.
_DESERIALIZERS = {"keras.optimizers": "flexflow_keras.optimizers", "keras.losses": "flexflow_keras.losses",
                  "keras.metrics": "flexflow_keras.metrics",
                  "keras.optimizers.schedules": "flexflow_keras.optimizers.schedules"}
# Where a built-in function is looked up by name (Keras' BUILTIN_MODULES).
_FUNCTION_MODULES = ("flexflow_keras.activations", "flexflow_keras.losses", "flexflow_keras.metrics",
                     "flexflow_keras.initializers", "flexflow_keras.regularizers", "flexflow_keras.constraints")
_PLAIN = (str, int, float, bool)


def _names(module_name: str) -> dict[str, Any]:
    # vars(): a module-level __getattr__ (layers' "Keras has it, we do not" errors) must not run here
    return vars(importlib.import_module(module_name))


def public_module(cls) -> str | None:
    """The Keras module a built-in class is exported from (``"keras.regularizers"``), else None."""
    if not cls.__module__.startswith("flexflow_keras"):
        return None
    for keras_module, ours in _NAMESPACES:
        if _names(ours).get(cls.__name__) is cls:
            return keras_module
    return None


def _is_layer(obj) -> bool:
    from flexflow_keras.layers.base import Layer

    return isinstance(obj, Layer) or (isinstance(obj, type) and issubclass(obj, Layer))


# --- writing ---------------------------------------------------------------------------------------------
def serialize(obj) -> Any:
    """`obj` in Keras 3's format (see the module docstring); plain values, lists and dicts recursively."""
    if obj is None or isinstance(obj, _PLAIN):
        return obj
    if isinstance(obj, (list, tuple)):
        items = [serialize(v) for v in obj]
        return tuple(items) if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        return serialize_dict(obj)
    special = _serialize_special(obj)
    if special is not None:
        return special
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return {"module": "builtins", "class_name": "function",
                "config": serialization.get_registered_name(obj), "registered_name": "function"}
    if _is_layer(obj) and not isinstance(obj, type):
        return _serialize_layer(obj)
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object(): cannot serialize {obj!r} (a {type(obj).__name__}): it has "
                        f"no get_config(). Give the class a get_config() returning its constructor arguments "
                        f"(and register it with @keras.saving.register_keras_serializable()).")
    config = obj.get_config()
    if not isinstance(config, dict):
        raise TypeError(f"serialize_keras_object(): {type(obj).__name__}.get_config() must return a dict, "
                        f"received {config!r}.")
    return envelope(type(obj), serialize_dict(config))


def serialize_dict(config: dict) -> dict:
    """Each value of `config` in Keras 3's format."""
    return {key: serialize(value) for key, value in config.items()}


def envelope(cls, config, default_module: str | None = None) -> dict:
    """``{"module", "class_name", "config", "registered_name"}`` for an instance of `cls`.

    Args:
        cls: the object's class.
        config: its (already serialized) config.
        default_module: the Keras module for a built-in class not exported by name (when None, its own
            module, as Keras writes a non-exported class).
    """
    keras_module = public_module(cls)
    if keras_module is not None:
        return {"module": keras_module, "class_name": cls.__name__, "config": config, "registered_name": None}
    if cls.__module__.startswith("flexflow_keras") and default_module is not None:
        return {"module": default_module, "class_name": cls.__name__, "config": config, "registered_name": None}
    module = None if cls.__module__ == "__main__" else cls.__module__
    return {"module": module, "class_name": cls.__name__, "config": config,
            "registered_name": serialization.get_registered_name(cls)}


def _serialize_special(obj) -> dict | Any | None:
    import numpy as np

    if isinstance(obj, bytes):
        return {"class_name": "__bytes__", "config": {"value": obj.decode("utf-8")}}
    if isinstance(obj, slice):
        return {"class_name": "__slice__", "config": {"start": serialize(obj.start), "stop": serialize(obj.stop),
                                                      "step": serialize(obj.step)}}
    if obj is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        if obj.ndim == 0:
            return obj.item()
        return {"class_name": "__numpy__", "config": {"value": obj.tolist(), "dtype": str(obj.dtype)}}
    if isinstance(obj, np.dtype):
        return str(obj)
    return None


def _serialize_layer(layer) -> dict:
    from flexflow_keras.saving.keras_file import compile_config
    from flexflow_keras.saving.model_config import serialize_layer

    out = serialize_layer(layer)
    compiled = compile_config(layer) if getattr(layer, "compiled", False) else None
    if compiled is not None:
        out["compile_config"] = compiled
    return out


# --- reading ---------------------------------------------------------------------------------------------
def deserialize(config, custom_objects: dict | None = None, safe_mode: bool = True,
                module_objects: dict | None = None, kind: str = "object") -> Any:
    """The object `config` describes (Keras 3's form or the short ``{"class_name", "config"}`` one).

    Args:
        config: a serialized object, a name, or a list / dict of them.
        custom_objects: ``{"Name": class_or_function}`` for user objects that are not registered.
        safe_mode: refuse serialized lambdas (flexflow_keras never reads their bytecode).
        module_objects: the built-in names of the caller's kind (initializers, layers, ...); with them an
            unknown name is an error, without them it is returned as it is (as Keras does).
        kind: what is being read, for the error messages ("initializer", "layer", ...).
    """
    if config is None:
        return None
    if isinstance(config, str):
        found = serialization.lookup(config, custom_objects)
        if found is None and module_objects is not None:
            found = module_objects.get(config)
            if found is None:
                raise ValueError(f"Unknown {kind} '{config}'. Known names: {sorted(module_objects)[:20]}; for "
                                 f"your own, register it with @keras.saving.register_keras_serializable() or "
                                 f"pass custom_objects={{'{config}': ...}}.")
        return config if found is None else found
    if isinstance(config, _PLAIN):
        return config
    if isinstance(config, (list, tuple)):
        return [deserialize(v, custom_objects, safe_mode) for v in config]
    if not isinstance(config, dict):
        return config
    if not isinstance(config.get("class_name"), str) or ("config" not in config and module_objects is None):
        if module_objects is not None:
            raise ValueError(f"Cannot deserialize {kind} from {config!r}: expected a dict with 'class_name' and "
                             "'config' (Keras' 'module' and 'registered_name' are optional).")
        return {k: deserialize(v, custom_objects, safe_mode) for k, v in config.items()}
    class_name = config["class_name"]
    inner = config.get("config")
    if class_name.startswith("__") and class_name.endswith("__"):
        return _deserialize_special(config, custom_objects, safe_mode)
    if class_name == "function":
        return _function(inner, config, custom_objects, module_objects, kind)
    found = _resolve_class(config, custom_objects, module_objects, kind)
    if isinstance(found, types.FunctionType):
        return found
    if _is_layer(found):
        return _layer(found, inner, config, custom_objects)
    owner = _DESERIALIZERS.get(config.get("module") or "") if module_objects is None else None
    if owner is not None and public_module(found) == config.get("module"):
        return importlib.import_module(owner).deserialize({**config, "class_name": found.__name__},
                                                          {found.__name__: found})
    return _instantiate(found, inner, config, custom_objects)


def _instantiate(cls, inner, config: dict, custom_objects: dict | None) -> Any:
    if inner is None:
        inner = {}
    if not isinstance(inner, dict):
        raise TypeError(f"deserialize_keras_object(): the 'config' of {config.get('class_name')} must be a dict, "
                        f"received {inner!r}.")
    with serialization.custom_object_scope(custom_objects):
        try:
            obj = cls.from_config(dict(inner)) if hasattr(cls, "from_config") else cls(**inner)
        except TypeError as e:
            if str(e).startswith("deserialize_keras_object()"):  # a nested object's failure, already explained
                raise
            raise TypeError(f"deserialize_keras_object(): {cls.__name__} could not be rebuilt from its config "
                            f"{inner!r}: {e}. Make get_config() return every constructor argument, and "
                            f"deserialize the objects among them (layers, models) in from_config().") from None
    build = config.get("build_config")
    if build and not getattr(obj, "built", True) and hasattr(obj, "build_from_config"):
        obj.build_from_config(build)
    return obj


def _layer(cls, inner, config: dict, custom_objects):
    """A model through the model-config loader (it rebuilds the graph); a layer from its config, then built
    for its ``build_config``."""
    from flexflow_keras.models.model import Model
    from flexflow_keras.saving import config_load

    if issubclass(cls, Model):
        return config_load.deserialize_layer({**config, "class_name": cls.__name__}, custom_objects,
                                             where="deserialize_keras_object()")
    if isinstance(inner, dict) and isinstance(inner.get("dtype"), dict):  # Keras 3's DTypePolicy entry
        inner = {**inner, "dtype": (inner["dtype"].get("config") or {}).get("name", "float32")}
    if isinstance(inner, dict) and cls.__module__.startswith("flexflow_keras"):
        inner = config_load.drop_neutral(cls, inner)
    layer = _instantiate(cls, inner, {k: v for k, v in config.items() if k != "build_config"}, custom_objects)
    config_load.apply_build_config(layer, config.get("build_config"), models_only=False)
    return layer


def _resolve_class(config: dict, custom_objects, module_objects, kind: str):
    class_name = config["class_name"]
    registered = config.get("registered_name")
    for key in (registered, class_name):
        if key:
            found = serialization.lookup(key, custom_objects)
            if found is not None:
                return found
    if module_objects is not None:
        if class_name in module_objects:
            return module_objects[class_name]
        raise ValueError(f"Unknown {kind} '{class_name}'. Known: {sorted(module_objects)[:30]}. For your own "
                         f"class, decorate it with @keras.saving.register_keras_serializable() or pass "
                         f"custom_objects={{'{class_name}': {class_name}}}.")
    module = config.get("module")
    candidates = _NAMESPACES if not module or not module.startswith("keras") else \
        [ns for ns in _NAMESPACES if ns[0] == module] or _NAMESPACES
    for _keras_module, ours in candidates:
        found = _names(ours).get(class_name)
        if isinstance(found, type):
            return found
    if class_name == "Functional":
        from flexflow_keras.models.functional import Functional

        return Functional
    hint = registered or class_name
    raise TypeError(f"Could not locate {kind} class '{class_name}' (module {module!r}, registered_name "
                    f"{registered!r}). If it is your own class, decorate it with "
                    f"@keras.saving.register_keras_serializable() (it is then found as '{hint}') and import "
                    f"it before loading, or pass custom_objects={{'{class_name}': {class_name}}}; if it is a "
                    f"Keras class, flexflow_keras does not implement it.")


def _function(name, config: dict, custom_objects, module_objects, kind: str):
    if not isinstance(name, str):
        raise TypeError(f"deserialize_keras_object(): a function's 'config' must be its name, received {name!r} "
                        f"in {config!r}.")
    if name == "<lambda>":
        raise ValueError("deserialize_keras_object(): the config names an anonymous lambda, which cannot be "
                         "rebuilt. Use a named function registered with "
                         "@keras.saving.register_keras_serializable().")
    short = name.split(">", 1)[-1]
    for key in (name, config.get("registered_name") if config.get("registered_name") != "function" else None,
                short):
        if key:
            found = serialization.lookup(key, custom_objects)
            if found is not None:
                return found
    if module_objects is not None and callable(module_objects.get(short)):
        return module_objects[short]
    for module_name in _FUNCTION_MODULES:
        found = _names(module_name).get(short)
        if isinstance(found, types.FunctionType):
            return found
    raise TypeError(f"Could not locate {kind} function '{name}'. Decorate it with "
                    f"@keras.saving.register_keras_serializable() and import it before loading, or pass "
                    f"custom_objects={{'{short}': {short}}}.")


def _deserialize_special(config: dict, custom_objects, safe_mode: bool) -> Any:
    import numpy as np

    name, inner = config["class_name"], config.get("config") or {}
    if name == "__numpy__":
        return np.array(inner["value"], dtype=inner["dtype"])
    if name == "__tensor__":
        from flexflow_keras import ops

        return ops.convert_to_tensor(np.array(inner["value"], dtype=inner["dtype"]))
    if name == "__bytes__":
        return inner["value"].encode("utf-8")
    if name == "__ellipsis__":
        return Ellipsis
    if name == "__slice__":
        return slice(*(deserialize(inner.get(k), custom_objects, safe_mode) for k in ("start", "stop", "step")))
    if name == "__lambda__":
        raise ValueError("deserialize_keras_object(): the config holds a serialized Python lambda (Keras' "
                         "'__lambda__'), whose bytecode flexflow_keras does not load"
                         + (" (and safe_mode=True refuses)" if safe_mode else "")
                         + ". Replace the lambda with a named function registered with "
                         "@keras.saving.register_keras_serializable().")
    return config  # __keras_tensor__ and the like: read by the model-config loader, left as they are
