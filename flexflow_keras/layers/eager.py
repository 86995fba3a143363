"""Eager execution of a recorded op graph on NumPy arrays (model(x) and training-mode layer calls).

The graph is run node by node with `apply_op`, the same forward functions the execution layer wraps
in runtime tasks, so `model(x)` computes what `predict` computes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from flexflow_keras.layers import node as node_mod
from flexflow_keras.ops import recorded_mode, tape
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.graph import KerasTensor, OpGraph
from flexflow_keras.utils import rng


def run_graph(graph: OpGraph, arrays: Sequence[np.ndarray], training: bool | None = False) -> list[np.ndarray]:
    """The values of `graph.outputs` for input values `arrays` (one per `graph.inputs`). `training` None:
    each layer's ops run in the mode Keras 3 resolves for its call (`node.node_resolver`: an augmentation
    layer augments, and the layers after it train)."""
    if len(arrays) != len(graph.inputs):
        raise ValueError(f"The graph has {len(graph.inputs)} inputs, received {len(arrays)} arrays.")
    resolved = None
    if training is None:
        resolved = node_mod.node_resolver(node_mod.keras_training_context() or node_mod.KerasTraining(False))
    values: dict[int, np.ndarray] = {}
    for t, a in zip(graph.inputs, arrays, strict=False):
        values[t.uid] = as_input(a, t.dtype)
    fresh = rng.make_seed() + 1  # keras.random ops draw new values on every eager call (NumPy's state untouched)
    for node in graph.nodes:
        ins = [values[t.uid] for t in node.inputs]
        seed = fresh  # random ops, Dropout, noise and augmentation draw anew on every call (each with its own seed)
        mode = training if resolved is None else resolved(node) is True
        outs = apply_op(node.op, ins, node.weights, name=node.name, training=mode, seed=seed)
        if not isinstance(outs, tuple):
            outs = (outs,)
        for t, v in zip(node.outputs, outs, strict=False):
            values[t.uid] = v
    return [values[t.uid] for t in graph.outputs]


def as_input(value, dtype: str):
    """`value` as an array of `dtype`; a float conversion a GradientTape records is an op it sees (so
    ``tape.watch(x)`` on float64 images reaches a float32 model)."""
    from flexflow_keras.ops.graph import Variable

    if isinstance(value, Variable):  # a model called on a tf.Variable (style transfer, DeepDream)
        tape.read_variable(value)
        value = value.value
    arr = np.asarray(value)
    if arr.dtype == np.dtype(dtype):
        return value if isinstance(value, np.ndarray) else arr
    if tape.recording() and arr.dtype.kind == "f" and np.dtype(dtype).kind == "f":
        from flexflow_keras import ops

        return ops.cast(value, dtype)
    return np.asarray(arr, dtype=dtype)


def _as_dtype_of(new: KerasTensor, like: KerasTensor) -> KerasTensor:
    """`new` cast to `like`'s dtype when both are numbers (or bools) of different dtypes: a model applied to
    symbolic tensors takes them as its inputs' dtypes, as Keras 3's Functional converts its inputs (uint8
    images into a float32 augmentation Sequential); strings and equal dtypes pass as they are."""
    if not isinstance(new, KerasTensor) or new.dtype == like.dtype:
        return new
    try:
        kinds = np.dtype(new.dtype).kind + np.dtype(like.dtype).kind
    except TypeError:  # "string"
        return new
    if set(kinds) <= set("iubf"):
        from flexflow_keras import ops

        return ops.cast(new, like.dtype)
    return new


def fresh_tensor(t: KerasTensor) -> KerasTensor:
    """A new tensor equal to `t`, produced by a node of its own (for layers whose call is an identity)."""
    from flexflow_keras import ops

    return ops.copy(t)


def clone_graph(graph: OpGraph, new_inputs: Sequence[KerasTensor], replace: dict | None = None) -> list[KerasTensor]:
    """Record `graph`'s nodes again on `new_inputs` (same ops, same weights); returns the new outputs.

    This is how a model used as a layer applies itself to new symbolic tensors, and how a model on
    `Input(shape=(None, ...))` gets its graph at the data's shapes. An output's Keras mask is recorded
    again with it (the losses and metrics weigh by it). `replace` maps a node's uid to the op to record
    instead of its own.
    """
    from flexflow_keras.ops.graph import OpNode

    replace = replace or {}
    keras_training = node_mod.keras_training_context()
    recording = keras_training is not None and keras_training.recording  # a subclassed model's call()
    resolved = node_mod.node_resolver(keras_training) if recording else None
    mapping: dict[int, KerasTensor] = {t.uid: _as_dtype_of(n, t) for t, n in zip(graph.inputs, new_inputs,
                                                                               strict=True)}

    def record(nodes) -> None:
        for node in nodes:
            if node.outputs and all(o.uid in mapping for o in node.outputs):
                continue  # already recorded (a mask's nodes shared with the outputs')
            op = replace.get(node.uid, node.op)
            fixed = getattr(node, "fixed_inference", False)
            if recording:  # each layer's ops in the mode Keras resolves for its call (ops/recorded_mode.py)
                fixing = resolved(node) is not True and keras_training.fixes
            else:
                fixing = recorded_mode.fixed()
            if fixing:
                op, fixed = recorded_mode.at_inference(op), True
                if op is None:
                    mapping[node.outputs[0].uid] = mapping[node.inputs[0].uid]
                    continue
            new = OpNode(op, [mapping[t.uid] for t in node.inputs], node.weights)
            new.layer = getattr(node, "layer", None)
            if fixed:
                new.fixed_inference = True
            if hasattr(node, "kept_states"):  # a stateful RNN's states: every graph of the model carries them on
                new.kept_states = node.kept_states
            mapping.update({o.uid: n for o, n in zip(node.outputs, new.outputs, strict=False)})

    record(graph.nodes)
    for t in graph.outputs:
        mask = getattr(t, "_keras_mask", None)
        if isinstance(mask, KerasTensor) and getattr(mapping[t.uid], "_keras_mask", None) is None:
            if mask.uid not in mapping:
                record(OpGraph(graph.inputs, [mask]).nodes)
            mapping[t.uid]._keras_mask = mapping[mask.uid]
    return [mapping[t.uid] for t in graph.outputs]


def refresh_graph(graph: OpGraph, cache: dict) -> OpGraph:
    """`graph`, or a copy whose ops follow their layers' current state (a BatchNormalization frozen after
    the graph was recorded) and know whether another node has their weights (`with_shared_weights`: a
    BatchNormalization called twice); copies are cached in `cache` so the same state gives the same object."""
    changes = []
    uses: dict[int, int] = {}
    for node in graph.nodes:
        for uid in {w.uid for w in node.weights}:
            uses[uid] = uses.get(uid, 0) + 1
    for node in graph.nodes:
        op = node.op
        fix = getattr(getattr(node, "layer", None), "_current_op", None)
        if fix is not None and not getattr(node, "fixed_inference", False):  # ops/recorded_mode.py
            op = fix(op)
        if hasattr(op, "with_shared_weights"):  # a layer called twice: its ops' gradient buffers are summed
            op = op.with_shared_weights(any(uses[w.uid] > 1 for w in node.weights))
        if op != node.op:
            changes.append((node.uid, op))
    if not changes:
        return graph
    key = (id(graph), tuple(changes))
    if key not in cache:
        inputs = [KerasTensor(t.shape, t.dtype, name=t.name) for t in graph.inputs]
        cache[key] = OpGraph(inputs, clone_graph(graph, inputs, dict(changes)))
    return cache[key]
