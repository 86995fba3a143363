"""The training graph: the model's op graph extended with label inputs and per-sample loss nodes.

When a crossentropy loss without `from_logits` reads the output of a softmax over the last axis, the
loss is computed from the softmax's input with `from_logits=True` (what Keras' TensorFlow backend does
through `_keras_logits`): the same value, better conditioned, and the softmax needs no backward pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flexflow_keras.ops import functional
from flexflow_keras.ops.graph import KerasTensor, OpGraph, TensorSpec

_CROSSENTROPY = {"CategoricalCrossentropy", "SparseCategoricalCrossentropy"}


@dataclass
class LossSpec:
    """One model output's loss: the loss object, its weight, and the label spec."""

    output_index: int
    loss: object
    weight: float
    label_spec: TensorSpec


@dataclass
class TrainingGraph:
    graph: OpGraph  # model outputs and loss outputs
    model_inputs: tuple[KerasTensor, ...]
    model_outputs: tuple[KerasTensor, ...]
    labels: tuple[KerasTensor | None, ...]  # per model output (None: no loss on it)
    per_sample_losses: tuple[KerasTensor | None, ...]  # per model output
    loss_specs: tuple[LossSpec, ...]


def _fused_logits(loss, y_pred: KerasTensor):
    """(loss with from_logits=True, logits) when y_pred is a softmax over the last axis, else None."""
    if type(loss).__name__ not in _CROSSENTROPY or getattr(loss, "from_logits", True):
        return None
    node = y_pred.node
    if node is None or getattr(node.op, "type_name", "") != "softmax":
        return None
    axis = getattr(node.op, "axis", -1)
    if axis not in (-1, y_pred.ndim - 1):
        return None
    config = dict(loss.get_config())
    config["from_logits"] = True
    return type(loss).from_config(config), node.inputs[0]


def build_training_graph(model_inputs: Sequence[KerasTensor], model_outputs: Sequence[KerasTensor],
                         loss_specs: Sequence[LossSpec]) -> TrainingGraph:
    """Append a label input and a per-sample loss node for every output that has a loss."""
    labels: list[KerasTensor | None] = [None] * len(model_outputs)
    per_sample: list[KerasTensor | None] = [None] * len(model_outputs)
    for spec in loss_specs:
        y_pred = model_outputs[spec.output_index]
        label = KerasTensor((None,) + tuple(spec.label_spec.shape[1:]), spec.label_spec.dtype,
                            name=f"label_{spec.output_index}")
        fused = _fused_logits(spec.loss, y_pred)
        loss, pred = fused if fused is not None else (spec.loss, y_pred)
        out = loss.per_sample(label, pred)
        if len(out.shape) == 0 and len(pred.shape) == 1:
            # an output of shape (batch,): Keras' losses reduce its last axis, the batch itself, to the
            # batch mean; the same number is the mean of per-sample losses over (batch, 1)
            out = loss.per_sample(functional.expand_dims(label, -1), functional.expand_dims(pred, -1))
        labels[spec.output_index] = label
        per_sample[spec.output_index] = out
    inputs = list(model_inputs) + [t for t in labels if t is not None]
    outputs = list(model_outputs) + [t for t in per_sample if t is not None]
    graph = OpGraph(inputs, outputs)
    return TrainingGraph(graph, tuple(model_inputs), tuple(model_outputs), tuple(labels), tuple(per_sample),
                         tuple(loss_specs))
