"""Functional models whose inputs leave a non-batch dimension open (``Input(shape=(None,))`` for
variable-length token sequences, as Keras scripts write before an Embedding and an LSTM).

Layers record their ops with the open dimension (None); the runtime needs every dimension but the batch.
When data arrives (fit, evaluate, predict), `specialized` records the model's graph again on inputs of the
data's sample shape (same ops, same weights: `clone_graph`) and caches that graph per input shape, so
training runs on concrete shapes and the weights stay shared. Each distinct sample shape gets its own graph.
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
        cache[key] = OpGraph(new_inputs, clone_graph(graph, new_inputs))
    return cache[key]
