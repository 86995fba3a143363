"""The training graph: the model's op graph extended with label inputs and per-sample loss nodes.

When a crossentropy loss without `from_logits` reads the output of a softmax (over any axis), the
loss is computed from the softmax's input with `from_logits=True` (what Keras' TensorFlow backend does
through `_keras_logits`): the same value, better conditioned, and the softmax needs no backward pass.
A binary crossentropy does the same on the input of a sigmoid or of a softmax, as that backend does:
on a sigmoid, the same value without the clipping of the probabilities, whose gradient is zero once an
output saturates (a classifier fed raw 0-255 pixels stopped learning); on a softmax, Keras' own number,
the sigmoid crossentropy of the softmax's logits. A sigmoid fused into a Dense or convolution has no
tensor of its logits: the training graph adds a copy of that op without the activation for the loss.
With from_logits=True, or a crossentropy called inside a custom loss, the same rule applies where the
loss op is recorded (ops/loss_functions.py: `activation_logits`, shared with this module).

An output that carries a Keras mask (`_keras_mask`: `Embedding(mask_zero=True)` or `Masking` through
layers that keep it) weighs its per-sample loss as Keras 3 does: masked entries 0, the others
``elements / valid`` over the whole batch, so the batch loss is the mean over the valid entries. The
0/1 mask itself is a graph output too: the metrics weigh their entries by it.

A loss that weighs its samples itself (`weight_rank` > 0: a model's compute_loss override, handed the
sample weights as Keras hands them) gets a sample-weight input of that rank, fed by the loader; its
per-sample loss is then taken unweighted (the step's seed carries no weights). The metric updates such a
loss recorded while it was built (metrics/symbolic_updates.py) are graph outputs too (`recorded`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import functional
from flexflow_keras.ops._util import fmt
from flexflow_keras.ops.graph import KerasTensor, OpGraph, TensorSpec
from flexflow_keras.ops.loss_functions import activation_logits

_CROSSENTROPY = {"CategoricalCrossentropy", "SparseCategoricalCrossentropy"}
_BINARY = "BinaryCrossentropy"


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
    masks: tuple[KerasTensor | None, ...] = ()  # per model output: its 0/1 float mask, shaped as the loss
    sample_weights: tuple[KerasTensor | None, ...] = ()  # per model output: a weight input its loss reads
    recorded: tuple = ()  # the loss's recorded metric updates (symbolic_updates.RecordedCall), in order
    recorded_tensors: tuple[KerasTensor, ...] = ()  # their tensors, graph outputs the metrics task reads
    # per model output: the logits of a softmax or sigmoid output whose metrics may compute a crossentropy
    # (metrics/logits.py), a graph output the metrics task reads; else None
    metric_logits: tuple[KerasTensor | None, ...] = ()


def _mask_like(mask: KerasTensor, values: KerasTensor, output_name: str) -> KerasTensor:
    """The output's mask as float32 0/1 of the per-sample loss's shape (Keras squeezes or expands a
    trailing axis of size 1); a ValueError naming the output when the shapes cannot agree."""
    m = functional.cast(mask, "float32")
    if m.ndim == values.ndim + 1 and m.shape[-1] == 1:
        m = functional.squeeze(m, -1)
    elif values.ndim == m.ndim + 1 and values.shape[-1] == 1:
        m = functional.expand_dims(m, -1)
    if m.ndim != values.ndim or any(a is not None and b is not None and a != b
                                    for a, b in zip(m.shape[1:], values.shape[1:], strict=True)):
        raise ValueError(f"Output '{output_name}' carries a mask of shape {tuple(mask.shape)}, but its loss has "
                         f"one value per entry of shape {tuple(values.shape)}; Keras weighs each loss value by "
                         f"the mask entry at the same place. Drop the mask before the output (e.g. a layer "
                         f"without mask support), or make the loss keep the mask's axes.")
    return functional.stop_gradient(m)


def _masked(values: KerasTensor, m: KerasTensor) -> KerasTensor:
    """values * m / mean(m): masked entries 0, valid ones scaled by elements/valid (0 when none is valid)."""
    valid_share = functional.maximum(functional.mean(m), 1e-30)
    return functional.multiply(values, functional.divide(m, valid_share))


def _fused_logits(loss, y_pred: KerasTensor):
    """(loss with from_logits=True, logits) when y_pred is a softmax, over any axis (any crossentropy)
    or a sigmoid (a binary crossentropy), else None."""
    kind = type(loss).__name__
    if kind not in _CROSSENTROPY | {_BINARY} or getattr(loss, "from_logits", True):
        return None
    node = y_pred.node
    op_type = getattr(getattr(node, "op", None), "type_name", "")
    if op_type != "softmax" and kind != _BINARY:
        return None
    logits = activation_logits(y_pred)
    return None if logits is None else (_from_logits(loss), logits)


def _ignored_class(loss, label):
    """(loss without ignore_class, the bool mask of entries to keep or None, the labels it reads): a
    SparseCategoricalCrossentropy(ignore_class=k) reads k as class 0 and its entries are masked out."""
    ignore = getattr(loss, "_fn_kwargs", {}).get("ignore_class")
    if ignore is None:
        return loss, None, label
    config = dict(loss.get_config())
    config["ignore_class"] = None
    valid = functional.not_equal(label, functional.cast(np.asarray(ignore), label.dtype))
    read = functional.where(valid, label, functional.cast(np.asarray(0), label.dtype))
    return type(loss).from_config(config), valid, read


def _from_logits(loss):
    config = dict(loss.get_config())
    config["from_logits"] = True
    return type(loss).from_config(config)


def build_training_graph(model_inputs: Sequence[KerasTensor], model_outputs: Sequence[KerasTensor],
                         loss_specs: Sequence[LossSpec], output_names: Sequence[str] | None = None,
                         logit_outputs: Collection[int] = ()) -> TrainingGraph:
    """Append a label input and a per-sample loss node for every output that has a loss (`output_names`:
    the model's names for its outputs, for messages), and the logits of the softmax or sigmoid outputs
    among `logit_outputs` (those whose metrics may compute a crossentropy: `metric_logits`)."""
    labels: list[KerasTensor | None] = [None] * len(model_outputs)
    per_sample: list[KerasTensor | None] = [None] * len(model_outputs)
    masks: list[KerasTensor | None] = [None] * len(model_outputs)
    weights: list[KerasTensor | None] = [None] * len(model_outputs)
    recorded: list = []
    for spec in loss_specs:
        y_pred = model_outputs[spec.output_index]
        if y_pred.batch_scale != 1:
            name = output_names[spec.output_index] if output_names else y_pred.name
            raise ShapeError(f"Output '{name}' {fmt(y_pred.shape)} has {y_pred.batch_scale} rows per sample: a reshape "
                             f"folded blocks of each sample into its batch dim (ops.reshape(x, (-1, ...)) with fewer "
                             f"elements per row), so its rows cannot meet the labels, one row per sample. Reshape it "
                             f"back to one row per sample before the output, e.g. ops.reshape(x, (-1,) + "
                             f"per_sample_shape) with the sample's whole size.")
        label = KerasTensor((None,) + tuple(spec.label_spec.shape[1:]), spec.label_spec.dtype,
                            name=f"label_{spec.output_index}")
        rank = int(getattr(spec.loss, "weight_rank", 0) or 0)
        if rank:
            weights[spec.output_index] = KerasTensor((None,) + tuple(y_pred.shape[1:rank]), "float32",
                                                     name=f"sample_weight_{spec.output_index}")
        fused = _fused_logits(spec.loss, y_pred)
        loss, pred = fused if fused is not None else (spec.loss, y_pred)
        loss, valid, read = _ignored_class(loss, label)
        if rank:
            out = loss.per_sample(read, pred, sample_weight=weights[spec.output_index])
        else:
            out = loss.per_sample(read, pred)
        recorded += list(getattr(loss, "recorded_calls", ()) or ())
        if len(out.shape) == 0 and len(pred.shape) == 1:
            # an output of shape (batch,): Keras' losses reduce its last axis, the batch itself, to the
            # batch mean; the same number is the mean of per-sample losses over (batch, 1)
            out = loss.per_sample(functional.expand_dims(label, -1), functional.expand_dims(pred, -1))
        mask = getattr(y_pred, "_keras_mask", None)
        name = output_names[spec.output_index] if output_names else y_pred.name
        if mask is not None or valid is not None:
            m = None if mask is None else _mask_like(mask, out, name)
            masks[spec.output_index] = m  # the metrics weigh by the output's mask only (Keras 3)
            if valid is not None:  # ignore_class: its entries weigh 0 in the loss, the mean is over the others
                v = _mask_like(valid, out, name)
                m = v if m is None else functional.multiply(m, v)
            out = _masked(out, m)
        labels[spec.output_index] = label
        per_sample[spec.output_index] = out
    inputs = list(model_inputs) + [t for t in labels if t is not None] + [t for t in weights if t is not None]
    tensors = tuple(t for call in recorded for t in call.tensors)
    with_loss = {spec.output_index for spec in loss_specs}
    logits = tuple(activation_logits(y) if i in with_loss and i in logit_outputs else None
                   for i, y in enumerate(model_outputs))
    outputs = list(model_outputs) + [t for t in per_sample if t is not None] + [t for t in masks if t is not None]
    taken = {t.uid for t in outputs} | {t.uid for t in inputs}
    for t in (*tensors, *(t for t in logits if t is not None)):  # what the metrics read (inputs are fed)
        if t.uid not in taken:
            taken.add(t.uid)
            outputs.append(t)
    graph = OpGraph(inputs, outputs)
    return TrainingGraph(graph, tuple(model_inputs), tuple(model_outputs), tuple(labels), tuple(per_sample),
                         tuple(loss_specs), tuple(masks), tuple(weights), tuple(recorded), tensors, logits)
