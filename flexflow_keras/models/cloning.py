"""`keras.models.clone_model`, `model_from_json` and `Model.to_json` (Keras 3 semantics).

`clone_model` builds the same architecture from new layers (fresh weights: copy them with
`clone.set_weights(model.get_weights())`): each layer goes through `clone_function` (default: a new
layer from the layer's own config), a functional model's graph is replayed from its config on new input
tensors (or the given `input_tensors`), a Sequential model's layers are stacked again.
"""

from __future__ import annotations

import json

from flexflow_keras.errors import DataError


def _default_clone(layer):
    return type(layer).from_config(layer.get_config())


def _input_tensors(model, input_tensors) -> dict | None:
    """Input layer name -> the given tensor (one per model input, in order or by name)."""
    if input_tensors is None:
        return None
    from flexflow_keras.ops.graph import KerasTensor
    from flexflow_keras.utils import tree

    names = [t.name if getattr(t, "name", None) else f"input_{i}" for i, t in enumerate(model.inputs)]
    names = list(getattr(model, "input_names", None) or names)
    if isinstance(input_tensors, dict):
        missing = [n for n in names if n not in input_tensors]
        if missing:
            raise DataError(f"clone_model(input_tensors=...) is a dict without the model's inputs {missing}; "
                            f"model '{model.name}' has inputs {names}.")
        flat = [input_tensors[n] for n in names]
    else:
        flat = tree.flatten(input_tensors)
    if len(flat) != len(names):
        raise DataError(f"clone_model(input_tensors=...) got {len(flat)} tensors; model '{model.name}' has "
                        f"{len(names)} inputs {names}.")
    for t in flat:
        if not isinstance(t, KerasTensor):
            raise DataError(f"clone_model(input_tensors=...) expects symbolic tensors from keras.Input(...), "
                            f"received {type(t).__name__}.")
    return dict(zip(names, flat, strict=True))


def clone_model(model, input_tensors=None, clone_function=None, call_function=None, recursive=False,
                **kwargs):
    """A new model with the architecture of `model` and new layers (weights are not copied).

    Args:
        model: a Sequential or functional `Model` (a subclassed model is rebuilt from its `get_config`).
        input_tensors: symbolic tensors (`keras.Input`) to build the clone on, one per model input (a list
            or a dict by input name); default: new inputs like the model's.
        clone_function: `fn(layer) -> layer` making each new layer; default: `type(layer).from_config(
            layer.get_config())`. Returning the layer itself shares it (and its weights) with `model`.
        call_function: `fn(layer, *args, **kwargs) -> outputs` calling each new layer inside a functional
            model (default: `layer(*args, **kwargs)`).
        recursive: also clone the layers of nested Sequential/functional models with `clone_function`
            (otherwise a nested model goes through `clone_function` as one layer).
        **kwargs: accepted Keras-internal arguments (none have an effect here); anything else is an error.

    Raises:
        DataError: for `input_tensors` that do not match the model's inputs.
    """
    from flexflow_keras.models.functional import Functional
    from flexflow_keras.models.model import Model
    from flexflow_keras.models.sequential import Sequential
    from flexflow_keras.saving.config_load import deserialize_functional

    if kwargs:
        raise TypeError(f"clone_model() got unexpected keyword arguments {sorted(kwargs)}.")
    clone = clone_function or _default_clone

    def make(layer):
        if recursive and isinstance(layer, (Sequential, Functional)) and type(layer) in (Sequential, Functional):
            return clone_model(layer, clone_function=clone_function, call_function=call_function, recursive=True)
        return clone(layer)

    if type(model) is Sequential:
        layers = [make(layer) for layer in model._seq_layers]
        if input_tensors is None:
            new = Sequential(name=model.name, trainable=model.trainable)
            if model._input_layer is not None:
                from flexflow_keras.layers.input_layer import InputLayer

                inp = model._input_layer
                new.add(InputLayer(batch_shape=tuple(inp.batch_shape), dtype=inp.dtype, name=inp.name),
                        rebuild=False)
            for layer in layers:
                new.add(layer, rebuild=False)
            new._maybe_rebuild()
            return new
        tensors = list(_input_tensors(model, input_tensors).values())
        out = tensors[0]
        for layer in layers:
            out = call_function(layer, out) if call_function else layer(out)
        return Model(tensors[0], out, name=model.name)
    if type(model) is Functional:
        by_name = {layer.name: layer for layer in model.layers}
        config = model.get_config()

        def make_entry(entry):
            original = by_name.get(entry.get("name"))
            if original is None:
                raise DataError(f"clone_model(): layer '{entry.get('name')}' of the config of model "
                                f"'{model.name}' is not among its layers.")
            from flexflow_keras.layers.input_layer import InputLayer

            if isinstance(original, InputLayer):  # new inputs like the model's; clone_function is for layers
                return _default_clone(original)
            return make(original)

        return deserialize_functional(config, where=f"clone_model({model.name})", make_layer=make_entry,
                                      input_tensors=_input_tensors(model, input_tensors), call_layer=call_function)
    if input_tensors is not None:
        raise DataError(f"clone_model(input_tensors=...) needs a Sequential or functional model; model "
                        f"'{model.name}' is a subclass ({type(model).__name__}). Call the clone on the tensors "
                        f"instead: clone = clone_model(model); outputs = clone(inputs).")
    return make(model)


def to_json(model, **kwargs) -> str:
    """The model's architecture as Keras 3's JSON (`json.dumps` keyword arguments pass through)."""
    from flexflow_keras.saving.model_config import serialize_model

    return json.dumps(serialize_model(model), **kwargs)


def model_from_json(json_string, custom_objects=None):
    """A new model (fresh weights) from `to_json`'s string (ours or tf.keras').

    Args:
        json_string: the JSON text.
        custom_objects: ``{"Name": class_or_function}`` for user layers not registered with
            `keras.saving.register_keras_serializable`.

    Raises:
        DataError: for text that is not JSON or not a model config.
    """
    from flexflow_keras.saving.config_load import deserialize_layer

    try:
        config = json.loads(json_string)
    except (TypeError, ValueError) as e:
        raise DataError(f"model_from_json(): the string is not JSON ({e}); pass what model.to_json() "
                        f"returned.") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise DataError("model_from_json(): the JSON is not a model config (expected an object with "
                        "'class_name' and 'config', as model.to_json() writes).")
    return deserialize_layer(config, custom_objects, where="model_from_json()")
