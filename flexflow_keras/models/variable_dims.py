"""Functional models whose inputs leave a non-batch dimension open (``Input(shape=(None,))`` for
variable-length token sequences, as Keras scripts write before an Embedding and an LSTM).

Layers record their ops with the open dimension (None); the runtime needs every dimension but the batch.
When data arrives (fit, evaluate, predict), `specialized` records the model's graph again on inputs of the
data's sample shape (same ops, same weights: `clone_graph`) and caches that graph per input shape, so
training runs on concrete shapes and the weights stay shared. Each distinct sample shape gets its own graph,
and the losses the model's layers added (`add_loss`) are recorded again on it.
"""

from __future__ import annotations

from flexflow_keras.layers.eager import clone_graph
from flexflow_keras.ops.graph import KerasTensor, OpGraph, TensorSpec


def has_open_dims(inputs) -> bool:
    """Whether any input tensor has an unknown dimension besides the batch."""
    return any(d is None for t in inputs for d in tuple(t.shape)[1:])


def specialized(model, graph: OpGraph, inputs, input_specs) -> OpGraph | None:
    """`graph` recorded again on inputs of the concrete sample shapes of `input_specs` (cached on `model`),
    or None when the model's inputs have no open dimension or the specs leave one open too."""
    if not has_open_dims(inputs):
        return None
    specs = [s if isinstance(s, TensorSpec) else TensorSpec(tuple(s.shape), str(s.dtype)) for s in input_specs]
    shapes = [(None,) + tuple(s.shape[1:]) for s in specs]
    if any(d is None for shape in shapes for d in shape[1:]):
        return None
    cache = model.__dict__.setdefault("_specialized_graphs", {})
    key = tuple(shapes)
    if key not in cache:
        new_inputs = [KerasTensor(shape, t.dtype, name=t.name) for shape, t in zip(shapes, inputs, strict=True)]
        added = _added_losses(model, graph)
        # the layers' added losses (a CTC endpoint layer's add_loss) are recorded again with the outputs, so the
        # graph at the data's shapes trains on them too
        cloned = clone_graph(OpGraph(graph.inputs, list(graph.outputs) + [t for _, t in added]), new_inputs)
        for (layer, _), t in zip(added, cloned[len(graph.outputs):], strict=True):
            layer.__dict__["_symbolic_losses"].append(t)
        cache[key] = OpGraph(new_inputs, cloned[:len(graph.outputs)])
    return cache[key]


def clone_with_losses(model, graph: OpGraph, new_inputs) -> list[KerasTensor]:
    """`clone_graph` of `graph` on `new_inputs` (a model used as a layer on symbolic tensors), with the losses
    `model`'s layers added on `graph` (add_loss, activity regularizers, ActivityRegularization) recorded again
    on the new inputs, so that the calling model trains on them and reports them, as Keras 3."""
    added = _added_losses(model, graph)
    if not added:
        return clone_graph(graph, new_inputs)
    n = len(graph.outputs)
    cloned = clone_graph(OpGraph(graph.inputs, list(graph.outputs) + [t for _, t in added]), new_inputs)
    at = tuple(t.uid for t in new_inputs)
    for (layer, source), t in zip(added, cloned[n:], strict=True):
        # the model called again on the same tensors (a Sequential rebuilt on its input) replaces its loss
        previous = layer.__dict__.setdefault("_cloned_losses", {}).get((source.uid, at))
        losses = [x for x in layer.__dict__["_symbolic_losses"] if x is not previous]  # by identity
        layer.__dict__["_cloned_losses"][(source.uid, at)] = t
        layer.__dict__["_symbolic_losses"] = [*losses, t]
    return cloned[:n]


def _added_losses(model, graph: OpGraph) -> list:
    """(layer, tensor) for each loss a layer of `model` added while `graph` was recorded."""
    from flexflow_keras.errors import GraphError
    from flexflow_keras.models.custom_training import _all_layers

    found = []
    for layer in _all_layers(model):
        for t in list(layer.__dict__.get("_symbolic_losses", [])):
            try:
                OpGraph(graph.inputs, [t])
            except GraphError:
                continue  # recorded on other inputs (another model, or another specialized graph)
            found.append((layer, t))
    return found
