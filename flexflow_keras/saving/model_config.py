"""Model configs in Keras 3's serialization layout (what ``config.json`` of a ``.keras`` file holds):
writing them. saving/config_load.py reads them back.

Every object is ``{"module", "class_name", "config", "registered_name"}``; layers add ``build_config``
and, inside a functional model, ``name`` and ``inbound_nodes`` (each call's arguments, with tensors as
``{"class_name": "__keras_tensor__", "config": {"shape", "dtype", "keras_history": [layer, node,
tensor]}}``); a functional model's config names its ``input_layers`` / ``output_layers`` by the same
triples, node indices counted over the model's own calls of each layer. A Sequential model lists its
`InputLayer` first. Layers' own `get_config` give the ``config`` part; this module adds the envelope and
says clearly what it cannot describe (a layer or subclassed model without `get_config`, an op applied
directly to symbolic tensors).
"""

from __future__ import annotations

import inspect

from flexflow_keras.saving.errors import NotSerializableError, SavingError
from flexflow_keras.utils import keras_format, serialization

_NESTED_MODULES = {"_initializer": "keras.initializers", "_regularizer": "keras.regularizers",
                   "_constraint": "keras.constraints"}


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
    return serialization.get_registered_name(cls)


def _builtin_layer(cls) -> bool:
    from flexflow_keras import layers

    return layers.ALL_OBJECTS.get(cls.__name__) is cls


def _envelope(obj, config: dict, module: str) -> dict:
    cls = type(obj)
    if cls.__module__.startswith("flexflow_keras."):
        return {"module": module, "class_name": cls.__name__, "config": config, "registered_name": None}
    return keras_format.envelope(cls, config)


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
    if type(layer).__name__ == "Lambda" and config.get("function") == "<lambda>":
        raise SavingError(f"Lambda layer '{layer.name}' wraps an anonymous lambda, which a .keras file cannot "
                         "name. Define it as a named function registered with "
                         "@keras.saving.register_keras_serializable() (and pass it in custom_objects when "
                         "loading), or save the weights with model.save_weights().")
    if "seed" in config and config["seed"] is None and isinstance(getattr(layer, "_seed", None), int):
        # the seed drawn for seed=None: random masks after a reload continue the same stream
        config["seed"] = layer._seed
    out = _envelope(layer, _jsonable(_keras_nested(keras_format.serialize_dict(config))), "keras.layers")
    shape = getattr(layer, "_build_input_shape", None)
    if _own_build_config(layer, out):
        pass
    elif layer.built and shape is not None and type(layer).__name__ != "InputLayer":
        out["build_config"] = {"input_shape": _jsonable(shape)}
    return out


def _own_build_config(layer, out: dict) -> bool:
    """Put what a subclass's own ``get_build_config()`` returns (Keras 3 saves it for build_from_config on
    load) into `out`; False when the class has none."""
    from flexflow_keras.saving.config_load import user_override

    if not user_override(layer, "get_build_config"):
        return False
    build_config = layer.get_build_config()
    if build_config:
        out["build_config"] = _jsonable(build_config)
    return True


def _check_get_config(layer) -> None:
    cls = type(layer)
    if _builtin_layer(cls) or cls.__module__.startswith("flexflow_keras."):
        return
    own = "get_config" in {k for c in cls.__mro__[:-1] if not c.__module__.startswith("flexflow_keras.")
                           for k in vars(c)}
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
              and p.default is inspect.Parameter.empty]
    from flexflow_keras.layers import auto_config

    if params and not own and not auto_config.has_auto_config(layer):
        raise NotSerializableError(
            f"Layer {cls.__name__} has constructor arguments {[p.name for p in params]} without defaults but "
            f"does not override get_config(), and it was constructed with values other than str, int, float, "
            f"bool or None (which Keras records by itself), so it cannot be saved in a .keras file. Add get_config() "
            f"returning them, e.g. `def get_config(self): return {{**super().get_config(), "
            f"{', '.join(repr(p.name) + ': self.' + p.name for p in params)}}}`, or save only the weights "
            f"with model.save_weights('....weights.h5').")


def serialize_model(model) -> dict:
    """A whole model in Keras 3's layout: Sequential, functional, or a subclass with `get_config`.

    Raises:
        NotSerializableError (a NotImplementedError): a subclassed model without `get_config` (the message
            says what to add).
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


def _input_clones(model, prefix) -> dict:
    """{uid: InputLayer name} for the model's inputs that are other layers' outputs (``Model(mid, out)`` with
    ``mid = Dense(4)(a)``, keras.io's feature-preprocessing recipe nests such a model in another): Keras 3
    clones each into an InputLayer named after the tensor with "CLONE", and its config lists that layer."""
    from flexflow_keras.layers.input_layer import InputLayer

    if prefix is not None:
        return {}
    taken = {layer.name for layer in model._operations}
    clones = {}
    for t in model._inputs:
        hist = getattr(t, "_keras_history", None)
        if hist is None or isinstance(hist.operation, InputLayer):
            continue
        base = f"{(getattr(t, 'name', None) or hist.operation.name).replace(':', '_')}CLONE"
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        clones[t.uid] = name
    return clones


def _serialize_functional(model) -> dict:
    from flexflow_keras.models.functional import OpLayer
    from flexflow_keras.saving import op_nodes

    network = model._network_nodes
    prefix = getattr(model, "_host_prefix", None)
    # host layers (layers/host_prefix.py): their outputs are graph inputs here, host layer calls in the config
    host_calls: dict[int, tuple] = {}
    for layer, src, out in (prefix.steps if prefix is not None else ()):
        host_calls[out.uid] = (layer, src, sum(1 for v in host_calls.values() if v[0] is layer))

    outside = {t.uid for t in prefix.declared} - {t.uid for t in model._inputs} if prefix is not None else set()
    clones = _input_clones(model, prefix)

    def tensor(t) -> dict:
        if t.uid in clones:  # an input that is another layer's output: the InputLayer Keras clones for it
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": _jsonable(t.shape), "dtype": t.dtype, "keras_history": [clones[t.uid], 0, 0]}}
        if t.uid in host_calls or t.uid in outside:  # a host layer's call, or a string input of the model
            layer, index = (host_calls[t.uid][0], host_calls[t.uid][2]) if t.uid in host_calls else (
                t._keras_history.operation, 0)
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": _jsonable(t.shape), "dtype": t.dtype, "keras_history": [layer.name, index, 0]}}
        hist = t._keras_history
        node = hist.operation._inbound_nodes[hist.node_index]
        return {"class_name": "__keras_tensor__",
                "config": {"shape": _jsonable(t.shape), "dtype": t.dtype,
                           "keras_history": [hist.operation.name, _node_index(hist.operation, node, network),
                                             hist.tensor_index]}}

    def op_tensor(t):
        return tensor(t) if getattr(t, "_keras_history", None) is not None else None

    def args(value):
        from flexflow_keras.ops.graph import KerasTensor

        if isinstance(value, KerasTensor):
            return tensor(value)
        if isinstance(value, (list, tuple)):
            return [args(v) for v in value]
        if isinstance(value, dict):
            return {k: args(v) for k, v in value.items()}
        return _jsonable(value)

    layers = _host_entries(model, prefix, host_calls, tensor)
    for t in model._inputs:
        if t.uid in clones:
            config = {"batch_shape": _jsonable(t.shape), "dtype": t.dtype, "name": clones[t.uid], "optional": False}
            layers.append({"module": "keras.layers", "class_name": "InputLayer", "config": config,
                           "registered_name": None, "name": clones[t.uid], "inbound_nodes": []})
    for layer in model._operations:
        if getattr(getattr(layer, "_tensor", None), "uid", None) in host_calls:
            continue  # the InputLayer standing for a host layer's output (written as that layer's call above)
        if isinstance(layer, OpLayer):
            entry = op_nodes.describe(layer, op_tensor)
            if entry is not None:
                layers.append(entry)
                continue
            raise NotSerializableError(
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
        return triples if isinstance(struct, list | tuple) else triples[0]

    inputs = (model._input_struct, model._inputs) if prefix is None else (prefix.declared_struct, prefix.declared)
    config = {"name": model.name, "trainable": model.trainable, "layers": layers,
              "input_layers": ends(*inputs),
              "output_layers": ends(model._output_struct, model._outputs)}
    return {"module": "keras.src.models.functional", "class_name": "Functional", "config": config,
            "registered_name": "Functional", "build_config": {"input_shape": None}}


def _host_entries(model, prefix, host_calls: dict, tensor) -> list:
    """The config entries of a model's declared inputs that the graph does not take (strings) and of its
    host layers, each with its calls (so loading calls them on the string inputs again)."""
    if prefix is None:
        return []
    from flexflow_keras.layers.input_layer import InputLayer

    graph_inputs = {t.uid for t in model._inputs}
    entries = []
    for t in prefix.declared:
        if t.uid not in graph_inputs:
            layer = t._keras_history.operation
            entry = _envelope(layer, _jsonable(InputLayer.get_config(layer)), "keras.layers")
            entry["name"] = layer.name
            entry["inbound_nodes"] = []
            entries.append(entry)
    seen: dict[int, dict] = {}
    for layer, src, _out in host_calls.values():
        entry = seen.get(id(layer))
        if entry is None:
            entry = serialize_layer(layer)
            entry["name"], entry["inbound_nodes"] = layer.name, []
            seen[id(layer)] = entry
            entries.append(entry)
        arg = [tensor(s) for s in src] if isinstance(src, tuple) else tensor(src)  # a tuple: HashedCrossing's
        entry["inbound_nodes"].append({"args": [arg], "kwargs": {}})
    return entries


def functional_like(cls) -> bool:
    """Whether a Model subclass is rebuilt as Keras 3 rebuilds a functional one, `cls(inputs, outputs,
    name=...)` (Keras' `functional_like_constructor`): its constructor is the framework's own or takes
    exactly (inputs, outputs, name), or takes ``*args, **kwargs``."""
    import inspect

    init = next((c.__dict__["__init__"] for c in cls.__mro__ if "__init__" in c.__dict__), None)
    if init is None or getattr(init, "__module__", "").startswith("flexflow_keras."):
        return True
    try:
        spec = inspect.getfullargspec(init)
    except TypeError:
        return False
    return spec.args[1:] == ["inputs", "outputs", "name"] or (spec.varargs is not None and spec.varkw is not None)


def _serialize_subclassed(model) -> dict:
    from flexflow_keras.models.functional import Functional
    from flexflow_keras.models.model import Model

    cls = type(model)
    if "get_config" not in {k for c in cls.__mro__ if c not in Model.__mro__
                            and not c.__module__.startswith("flexflow_keras.") for k in vars(c)}:
        if isinstance(model, Functional) and functional_like(cls):
            # a subclass built as Model(inputs, outputs) (keras.io's masked language model): Keras 3 saves
            # its functional config under the subclass's name, and from_config calls cls(inputs, outputs)
            from flexflow_keras.models.functional import _functional_classes

            own = next((user for user, made in _functional_classes.items() if made is cls), cls)
            out = _serialize_functional(model)
            return {**keras_format.envelope(own, out["config"]), "build_config": out["build_config"]}
        from flexflow_keras.layers import auto_config

        if not auto_config.has_auto_config(model):
            raise NotSerializableError(
                f"Model {cls.__name__} is a subclassed model without get_config(), built with arguments that are "
                f"not all plain values (str, int, float, bool, None and lists / dicts of them), so model.save() "
                f"cannot describe how to rebuild it. Add `def get_config(self): return {{...constructor "
                f"arguments...}}` (and `from_config` if they are not plain values) and register the class with "
                f"@keras.saving.register_keras_serializable(), or save only the weights with "
                f"model.save_weights('model.weights.h5').")
    out = _envelope(model, _jsonable(_keras_nested(keras_format.serialize_dict(dict(model.get_config())))),
                    cls.__module__)
    specs = list(getattr(model, "_traces", {}) or [])
    if _own_build_config(model, out):
        pass
    elif specs:
        shapes = [list(s.shape) for s in specs[-1]]
        out["build_config"] = {"input_shape": shapes[0] if len(shapes) == 1 else shapes}
    elif getattr(model, "_build_input_shape", None) is not None:  # built by an eager call, as Keras 3 records
        out["build_config"] = {"input_shape": _jsonable(model._build_input_shape)}
    return out
