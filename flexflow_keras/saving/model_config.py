"""Model configs in Keras 3's serialization layout (what ``config.json`` of a ``.keras`` file holds).

Every object is ``{"module", "class_name", "config", "registered_name"}``; layers add ``build_config``
and, inside a functional model, ``name`` and ``inbound_nodes`` (each call's arguments, with tensors as
``{"class_name": "__keras_tensor__", "config": {"shape", "dtype", "keras_history": [layer, node,
tensor]}}``); a functional model's config names its ``input_layers`` / ``output_layers`` by the same
triples, node indices counted over the model's own calls of each layer. A Sequential model lists its
`InputLayer` first. Layers' own `get_config` give the ``config`` part; this module adds the envelope,
converts Keras' spellings on the way in (a ``DTypePolicy`` dict is its name; Keras-only options at
their neutral value are dropped) and says clearly what it cannot rebuild.
"""

from __future__ import annotations

import inspect

from flexflow_keras.errors import DataError
from flexflow_keras.utils import serialization

_NESTED_MODULES = {"_initializer": "keras.initializers", "_regularizer": "keras.regularizers",
                   "_constraint": "keras.constraints"}
# Keras-only constructor options that change nothing at these values (dropped when loading).
_NEUTRAL = {"renorm_momentum": 0.99, "input_axes": None, "output_axes": None, "lora_rank": None,
            "lora_alpha": None, "ragged": False, "sparse": False, "quantization_config": None}


def _jsonable(value):
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def registered_name(cls) -> str:
    """``"package>Name"`` of a registered class, else its class name (as Keras writes it)."""
    for key, obj in serialization.get_custom_objects().items():
        if obj is cls and ">" in key:
            return key
    return cls.__name__


def _builtin_layer(cls) -> bool:
    from flexflow_keras import layers

    return layers.ALL_OBJECTS.get(cls.__name__) is cls


def _envelope(obj, config: dict, module: str) -> dict:
    cls = type(obj)
    builtin = cls.__module__.startswith("flexflow_keras.")
    return {"module": module if builtin else cls.__module__, "class_name": cls.__name__,
            "config": config, "registered_name": None if builtin else registered_name(cls)}


def _keras_nested(config: dict) -> dict:
    """Give nested ``{"class_name", "config"}`` objects (initializers, ...) Keras' module keys."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict) and "class_name" in value and "module" not in value:
            module = next((m for suffix, m in _NESTED_MODULES.items() if key.endswith(suffix)), None)
            value = {"module": module, **value, "registered_name": None}
        out[key] = value
    return out


def serialize_layer(layer) -> dict:
    """A layer (or nested model) in Keras 3's layout, with its ``build_config`` once built.

    Raises:
        ValueError: a custom layer without `get_config` arguments it needs (naming the class and the fix).
    """
    from flexflow_keras.models.model import Model

    if isinstance(layer, Model) and getattr(layer, "_graph_network", False):
        return serialize_model(layer)
    _check_get_config(layer)
    config = dict(layer.get_config())
    config.pop("batch_input_shape", None)  # the model's InputLayer carries the input shape
    if "seed" in config and config["seed"] is None and isinstance(getattr(layer, "_seed", None), int):
        # the seed drawn for seed=None: random masks after a reload continue the same stream
        config["seed"] = layer._seed
    out = _envelope(layer, _jsonable(_keras_nested(config)), "keras.layers")
    shape = getattr(layer, "_build_input_shape", None)
    if layer.built and shape is not None and type(layer).__name__ != "InputLayer":
        out["build_config"] = {"input_shape": _jsonable(shape)}
    return out


def _check_get_config(layer) -> None:
    cls = type(layer)
    if _builtin_layer(cls) or cls.__module__.startswith("flexflow_keras."):
        return
    own = "get_config" in {k for c in cls.__mro__[:-1] if not c.__module__.startswith("flexflow_keras.")
                           for k in vars(c)}
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
              and p.default is inspect.Parameter.empty]
    if params and not own:
        raise NotImplementedError(
            f"Layer {cls.__name__} has constructor arguments {[p.name for p in params]} without defaults but "
            f"does not override get_config(), so it cannot be saved in a .keras file. Add get_config() "
            f"returning them, e.g. `def get_config(self): return {{**super().get_config(), "
            f"{', '.join(repr(p.name) + ': self.' + p.name for p in params)}}}`, or save only the weights "
            f"with model.save_weights('....weights.h5').")


def serialize_model(model) -> dict:
    """A whole model in Keras 3's layout: Sequential, functional, or a subclass with `get_config`.

    Raises:
        NotImplementedError: a subclassed model without `get_config` (the message says what to add).
    """
    from flexflow_keras.models.functional import Functional
    from flexflow_keras.models.sequential import Sequential

    if isinstance(model, Sequential) and type(model) is Sequential:
        return _serialize_sequential(model)
    if isinstance(model, Functional) and type(model) is Functional:
        return _serialize_functional(model)
    return _serialize_subclassed(model)


def _serialize_sequential(model) -> dict:
    from flexflow_keras.layers.input_layer import InputLayer

    layers = []
    if model._input_layer is not None:
        inp = model._input_layer
        layers.append(_envelope(inp, _jsonable(InputLayer.get_config(inp)), "keras.layers"))
    layers += [serialize_layer(layer) for layer in model._seq_layers]
    config = {"name": model.name, "trainable": model.trainable, "layers": layers}
    out = {"module": "keras", "class_name": "Sequential", "config": config, "registered_name": None}
    if model._input_layer is not None:
        shape = _jsonable(model._input_layer.batch_shape)
        config["build_input_shape"] = shape
        out["build_config"] = {"input_shape": shape}
    return out


def _node_index(layer, node, network_nodes) -> int:
    own = [n for n in layer._inbound_nodes if id(n) in network_nodes]
    return own.index(node)


def _serialize_functional(model) -> dict:
    from flexflow_keras.models.functional import OpLayer

    network = model._network_nodes

    def tensor(t) -> dict:
        hist = t._keras_history
        node = hist.operation._inbound_nodes[hist.node_index]
        return {"class_name": "__keras_tensor__",
                "config": {"shape": _jsonable(t.shape), "dtype": t.dtype,
                           "keras_history": [hist.operation.name, _node_index(hist.operation, node, network),
                                             hist.tensor_index]}}

    def args(value):
        from flexflow_keras.ops.graph import KerasTensor

        if isinstance(value, KerasTensor):
            return tensor(value)
        if isinstance(value, (list, tuple)):
            return [args(v) for v in value]
        if isinstance(value, dict):
            return {k: args(v) for k, v in value.items()}
        return _jsonable(value)

    layers = []
    for layer in model._operations:
        if isinstance(layer, OpLayer):
            raise NotImplementedError(
                f"Model '{model.name}' applies the op {layer._display_class} directly to symbolic tensors "
                f"(layer '{layer.name}'), which a .keras config cannot describe. Wrap it in a layer (e.g. "
                f"layers.Add(), layers.Lambda) or save only the weights with model.save_weights().")
        entry = serialize_layer(layer)
        entry["name"] = layer.name
        nodes = [n for n in layer._inbound_nodes if id(n) in network and not n.is_input]
        entry["inbound_nodes"] = [{"args": args(list(n.call_args)), "kwargs": args(n.call_kwargs)} for n in nodes]
        layers.append(entry)

    def ends(struct, flat):
        triples = [tensor(t)["config"]["keras_history"] for t in flat]
        if isinstance(struct, dict):
            return dict(zip(struct, triples, strict=True))
        return triples if isinstance(struct, list) else triples[0]

    config = {"name": model.name, "trainable": model.trainable, "layers": layers,
              "input_layers": ends(model._input_struct, model._inputs),
              "output_layers": ends(model._output_struct, model._outputs)}
    return {"module": "keras.src.models.functional", "class_name": "Functional", "config": config,
            "registered_name": "Functional", "build_config": {"input_shape": None}}


def _serialize_subclassed(model) -> dict:
    from flexflow_keras.models.model import Model

    cls = type(model)
    if "get_config" not in {k for c in cls.__mro__ if c not in Model.__mro__
                            and not c.__module__.startswith("flexflow_keras.") for k in vars(c)}:
        raise NotImplementedError(
            f"Model {cls.__name__} is a subclassed model without get_config(), so model.save() cannot "
            f"describe how to rebuild it. Add `def get_config(self): return {{...constructor arguments...}}` "
            f"(and `from_config` if they are not plain values) and register the class with "
            f"@keras.saving.register_keras_serializable(), or save only the weights with "
            f"model.save_weights('model.weights.h5').")
    out = _envelope(model, _jsonable(_keras_nested(dict(model.get_config()))), cls.__module__)
    specs = list(getattr(model, "_traces", {}) or [])
    if specs:
        shapes = [list(s.shape) for s in specs[-1]]
        out["build_config"] = {"input_shape": shapes[0] if len(shapes) == 1 else shapes}
    return out


# --- loading ---------------------------------------------------------------------------------------------
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
    for key, value in list(config.items()):
        if isinstance(value, dict) and "class_name" in value:
            inner = dict(value.get("config") or {})
            for k in [k for k, v in inner.items() if k in _NEUTRAL and v == _NEUTRAL[k]]:
                inner.pop(k)
            config[key] = {"class_name": value["class_name"], "config": inner}
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
            layer = cls.from_config(_ours(cls, config, where))
        else:
            try:
                layer = cls.from_config(config)
            except TypeError as e:
                raise DataError(f"{where}: {cls.__name__}.from_config() failed: {e}. Make get_config() return "
                                f"every constructor argument (or define from_config).") from None
    build = entry.get("build_config") or {}
    shape = build.get("input_shape")
    if shape is not None and not layer.built and hasattr(layer, "_op_graph"):
        layer.build(tuple(shape) if shape and not isinstance(shape[0], list) else [tuple(s) for s in shape])
    return layer


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


def deserialize_functional(config: dict, custom_objects=None, where: str = "config"):
    """Rebuild a functional model by calling each layer on the tensors its ``inbound_nodes`` name."""
    from flexflow_keras.layers.input_layer import InputLayer
    from flexflow_keras.models.model import Model
    from flexflow_keras.ops.graph import KerasTensor
    from flexflow_keras.utils import tree

    created: dict[str, object] = {}
    outputs: dict[tuple[str, int], list] = {}
    pending: list[tuple[str, int, dict]] = []
    for entry in config.get("layers", []):
        layer = deserialize_layer(entry, custom_objects, where)
        lname = entry.get("name", layer.name)
        created[lname] = layer
        if isinstance(layer, InputLayer):
            outputs[(lname, 0)] = [layer._tensor]
        for k, node in enumerate(entry.get("inbound_nodes", [])):
            pending.append((lname, k, node))

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
            result = created[lname](*build(node.get("args", [])), **build(node.get("kwargs", {})))
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

    return Model(ends(config["input_layers"]), ends(config["output_layers"]), name=config.get("name"),
                 trainable=config.get("trainable", True))
