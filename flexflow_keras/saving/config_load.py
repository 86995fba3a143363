"""Rebuilding models from Keras 3 configs (ours, or tf.keras' ``config.json``).

Layers are found by ``registered_name`` / ``class_name`` in `custom_objects`, the active custom-object
scopes, the registry, then the built-in layers. Keras' spellings are converted on the way in: a
``DTypePolicy`` dict is its name, and Keras-only options at their neutral value are dropped; any other
option this framework lacks, an unknown class, or tensors no layer produces is a `DataError` naming the
file, the layer and the fix. A functional model is rebuilt by calling each layer on the tensors its
``inbound_nodes`` name, in dependency order.
"""

from __future__ import annotations

import inspect

from flexflow_keras.errors import DataError
from flexflow_keras.saving.model_config import _builtin_layer
from flexflow_keras.utils import serialization

# Keras-only constructor options that change nothing at these values (dropped when loading).
_NEUTRAL = {"renorm_momentum": 0.99, "input_axes": None, "output_axes": None, "lora_rank": None,
            "lora_alpha": None, "ragged": False, "sparse": False, "quantization_config": None}



def _accepted(cls) -> set[str] | None:
    """Constructor keywords `cls` takes (walking **kwargs up the bases); None when it takes anything."""
    from flexflow_keras.layers import base

    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if klass is base.Layer:
            return names | base._BASE_KWARGS
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def _ours(cls, config: dict, where: str) -> dict:
    """Keras' spelling of a layer config -> the one our constructor takes."""
    config = dict(config)
    dtype = config.get("dtype")
    if isinstance(dtype, dict):
        config["dtype"] = (dtype.get("config") or {}).get("name", "float32")
    config = _nested_neutral(config)
    accepted = _accepted(cls) if not cls.__dict__.get("from_config") else None
    if accepted is None:
        return config
    for key in [k for k in config if k not in accepted]:
        value = config.pop(key)
        if value is None or value is False or _NEUTRAL.get(key, object()) == value:
            continue
        raise DataError(f"{where}: layer '{config.get('name')}' ({cls.__name__}) sets {key}={value!r}, a Keras "
                        f"option flexflow_keras does not support. Rebuild the model without it in Keras and "
                        f"save it again.")
    return config


def _nested_neutral(config: dict) -> dict:
    """Objects nested in a layer config (initializers, ...) without Keras-only options at neutral values."""
    config = dict(config)
    for key, value in list(config.items()):
        if isinstance(value, dict) and "class_name" in value and isinstance(value.get("config") or {}, dict):
            inner = dict(value.get("config") or {})
            for k in [k for k, v in inner.items() if k in _NEUTRAL and v == _NEUTRAL[k]]:
                inner.pop(k)
            # module and registered_name stay: a registered user object is found by "package>Name"
            config[key] = {**{k: value[k] for k in ("module", "registered_name") if k in value},
                           "class_name": value["class_name"], "config": inner}
    return config


def drop_neutral(cls, config: dict) -> dict:
    """`config` without the Keras-only options (its own and its nested objects') that sit at their neutral
    value (``quantization_config=None``, ...) and `cls` does not take; other options are left for the
    constructor to judge."""
    config = _nested_neutral(config)
    accepted = _accepted(cls) if not cls.__dict__.get("from_config") else None
    if accepted is None:
        return config
    return {k: v for k, v in config.items() if k in accepted or k not in _NEUTRAL or _NEUTRAL[k] != v}


def _resolve(entry: dict, custom_objects: dict | None, where: str):
    from flexflow_keras import layers, models

    name = entry.get("class_name")
    objects = dict(layers.ALL_OBJECTS)
    objects.update({"Sequential": models.Sequential, "Functional": models.Functional, "Model": models.Model})
    cls = None
    for key in (entry.get("registered_name"), name):
        if key:
            cls = serialization.lookup(key, custom_objects)
            if cls is not None:
                break
    if cls is None:
        cls = objects.get(name)
    if cls is None:
        hint = entry.get("registered_name") or name
        raise DataError(f"{where}: unknown class '{name}' (module {entry.get('module')!r}). If it is your own "
                        f"layer or model, pass custom_objects={{'{name}': {name}}} to load_model() or decorate "
                        f"the class with @keras.saving.register_keras_serializable() (registered as "
                        f"'{hint}'); if it is a Keras layer, flexflow_keras does not implement it.")
    return cls


def _keras2_node(node: list) -> dict:
    """A Keras 2 inbound node (``[[layer, node_index, tensor_index, kwargs], ...]``, one entry per input
    tensor) in Keras 3's form (``{"args": [...], "kwargs": {...}}``): one input as the call's argument,
    several as one list argument (merge layers)."""
    tensors = [{"class_name": "__keras_tensor__", "config": {"keras_history": list(e[:3])}} for e in node]
    kwargs = dict(node[0][3]) if node and len(node[0]) > 3 and isinstance(node[0][3], dict) else {}
    return {"args": tensors if len(tensors) <= 1 else [tensors], "kwargs": kwargs}


def deserialize_layer(entry: dict, custom_objects: dict | None = None, where: str = "config"):
    """A layer or model from Keras 3's layout (ours or tf.keras')."""
    cls = _resolve(entry, custom_objects, where)
    name = entry.get("class_name")
    config = entry.get("config") or {}
    from flexflow_keras.models.functional import Functional
    from flexflow_keras.models.sequential import Sequential

    if cls is Sequential:
        return _deserialize_sequential(config, custom_objects, where)
    if cls is Functional or (name == "Functional" and "layers" in config):
        return deserialize_functional(config, custom_objects, where)
    with serialization.custom_object_scope(custom_objects):
        if _builtin_layer(cls):
            try:
                layer = cls.from_config(_ours(cls, config, where))
            except (ValueError, TypeError) as e:
                if isinstance(e, DataError):
                    raise
                raise DataError(f"{where}: layer '{config.get('name')}' ({name}) cannot be rebuilt here: "
                                f"{str(e).splitlines()[0]}") from None
        else:
            try:  # a user subclass of a Keras layer gets tf.keras' neutral options too (quantization_config)
                layer = cls.from_config(drop_neutral(cls, config))
            except TypeError as e:
                raise DataError(f"{where}: {cls.__name__}.from_config() failed: {e}. Make get_config() return "
                                f"every constructor argument (or define from_config).") from None
    apply_build_config(layer, entry.get("build_config"))
    return layer


def apply_build_config(layer, build_config: dict | None, models_only: bool = True) -> None:
    """Build `layer` for the ``input_shape`` of Keras' ``build_config`` (nothing when it is built already).
    Inside a model config only models are built here (a layer is built when the rebuilt graph calls it)."""
    if build_config and not layer.built and user_override(layer, "build_from_config"):
        layer.build_from_config(build_config)  # Keras 3 calls it on load, with what get_build_config gave
        if layer.weights:  # (Keras' build() marks the layer built; a build() of a subclass here may not)
            layer.built = True
        return
    shape = (build_config or {}).get("input_shape")
    if shape is not None and not layer.built and (hasattr(layer, "_op_graph") or not models_only):
        layer.build(tuple(shape) if shape and not isinstance(shape[0], list) else [tuple(s) for s in shape])


def user_override(layer, method: str) -> bool:
    """Whether `layer`'s class (or a base outside flexflow_keras) defines `method` (Keras 3's
    get_build_config / build_from_config hooks)."""
    return any(method in vars(c) for c in type(layer).__mro__ if not c.__module__.startswith("flexflow_keras."))


def _deserialize_sequential(config: dict, custom_objects, where: str):
    from flexflow_keras.models.sequential import Sequential

    model = Sequential(name=config.get("name"), trainable=config.get("trainable", True))
    for entry in config.get("layers", []):
        model.add(deserialize_layer(entry, custom_objects, where), rebuild=False)
    model._maybe_rebuild()
    shape = config.get("build_input_shape")
    if model._input_layer is None and shape:
        model.build(tuple(shape))
    return model


def deserialize_functional(config: dict, custom_objects=None, where: str = "config", make_layer=None,
                           input_tensors: dict | None = None, call_layer=None, model_class=None):
    """Rebuild a functional model by calling each layer on the tensors its ``inbound_nodes`` name.

    `make_layer(entry)` replaces `deserialize_layer` for each layer entry, `input_tensors` (input layer
    name -> tensor) replaces those input layers, `call_layer(layer, *args, **kwargs)` replaces the call
    (`models.clone_model` uses the three). `model_class` (default `Model`) is called with the inputs and
    outputs: a Model subclass saved with its functional config (`model_config.functional_like`)."""
    from flexflow_keras.layers.input_layer import InputLayer
    from flexflow_keras.models.model import Model
    from flexflow_keras.ops.graph import KerasTensor
    from flexflow_keras.saving import op_nodes
    from flexflow_keras.utils import tree

    created: dict[str, object] = {}
    outputs: dict[tuple[str, int], list] = {}
    pending: list[tuple[str, int, dict]] = []
    for entry in config.get("layers", []):
        if input_tensors and entry.get("name") in input_tensors:
            outputs[(entry["name"], 0)] = [input_tensors[entry["name"]]]
            continue
        if op_nodes.is_op_entry(entry):
            layer = op_nodes.op_callable(entry, where)
        else:
            layer = make_layer(entry) if make_layer else deserialize_layer(entry, custom_objects, where)
        lname = entry.get("name", layer.name)
        created[lname] = layer
        if isinstance(layer, InputLayer):
            outputs[(lname, 0)] = [layer._tensor]
        for k, node in enumerate(entry.get("inbound_nodes", [])):
            pending.append((lname, k, _keras2_node(node) if isinstance(node, list) else node))

    def ready(value) -> bool:
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            name, ni, _ = value["config"]["keras_history"]
            return (name, ni) in outputs
        if isinstance(value, list):
            return all(ready(v) for v in value)
        if isinstance(value, dict):
            return all(ready(v) for v in value.values())
        return True

    def build(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            name, ni, ti = value["config"]["keras_history"]
            return outputs[(name, ni)][ti]
        if isinstance(value, list):
            return [build(v) for v in value]
        if isinstance(value, dict):
            return {k: build(v) for k, v in value.items()}
        return value

    while pending:
        progressed = False
        for item in list(pending):
            lname, k, node = item
            if any((lname, j) not in outputs for j in range(k)) or not ready(node):
                continue
            args, kwargs = build(node.get("args", [])), build(node.get("kwargs", {}))
            result = call_layer(created[lname], *args, **kwargs) if call_layer else created[lname](*args, **kwargs)
            outputs[(lname, k)] = [t for t in tree.flatten(result) if isinstance(t, KerasTensor)]
            pending.remove(item)
            progressed = True
        if not progressed:
            names = sorted({p[0] for p in pending})
            raise DataError(f"{where}: the layer calls of {names} refer to tensors no layer produces; the "
                            "model config is damaged or was edited by hand.")

    def ends(spec):
        if isinstance(spec, dict):
            return {k: ends(v) for k, v in spec.items()}
        if spec and isinstance(spec[0], list):
            return [ends(s) for s in spec]
        name, ni, ti = spec
        return outputs[(name, ni)][ti]

    return (model_class or Model)(ends(config["input_layers"]), ends(config["output_layers"]),
                                  name=config.get("name"), trainable=config.get("trainable", True))
