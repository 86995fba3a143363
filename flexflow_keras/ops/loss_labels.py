"""Losses whose labels are computed by the model: the dense losses composed of element-wise ops, so the
gradient reaches ``y_true`` as well as ``y_pred``.

The fused `LossOp` differentiates its predictions only (labels are data in a compiled model). Keras 3 on
TensorFlow composes these losses of TensorFlow ops, which differentiate both arguments, and scripts rely on
it: a consistency loss ``add_loss(mse(branch_a, branch_b))`` trains both branches, and keras.io's
sample-size recipe fits its curve with ``mse(y_pred, mean_acc)`` (the prediction in the labels' place)
under a GradientTape. `label_needs_gradient` says when the labels take part in a gradient (a symbolic
tensor computed from trainable weights, or a value a recording tape can differentiate); `composed` then
builds the loss as Keras' TensorFlow backend does (`keras/src/losses/losses.py` and
`backend/tensorflow/nn.py`): labels cast to the predictions' dtype, a trailing size-1 dim squeezed or
expanded (not for the categorical crossentropy), label smoothing, clipping to [eps, 1 - eps].
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.graph import KerasTensor, Variable
from flexflow_keras.ops.losses import LossOp

_COMPOSABLE = ("mean_squared_error", "mean_absolute_error", "binary_crossentropy", "categorical_crossentropy")


def _depends_on_trainable(t: KerasTensor) -> bool:
    """Whether the symbolic tensor `t` is computed from a trainable weight."""
    seen, stack = set(), [t]
    while stack:
        node = getattr(stack.pop(), "node", None)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if any(getattr(w, "trainable", False) for w in getattr(node, "weights", ())):
            return True
        stack.extend(getattr(node, "inputs", ()))
    return False


def label_needs_gradient(name: str, y_true) -> bool:
    """Whether loss `name`'s labels take part in a gradient (see the module docstring)."""
    if name not in _COMPOSABLE:
        return False
    if isinstance(y_true, KerasTensor):
        return _depends_on_trainable(y_true)
    if isinstance(y_true, Variable):
        return _tape.recording()
    return _tape.recording() and _tape.tracked(y_true)


def _same_rank(t, p):
    """Keras' squeeze_or_expand_to_same_rank(y_true, y_pred)."""
    from flexflow_keras import ops

    tr, pr = len(t.shape), len(p.shape)
    if tr == pr + 1 and t.shape[-1] == 1:
        return (t, ops.expand_dims(p, -1)) if pr == 1 else (ops.squeeze(t, -1), p)
    if pr == tr + 1 and p.shape[-1] == 1:
        return (ops.expand_dims(t, -1), p) if tr == 1 else (t, ops.squeeze(p, -1))
    return t, p


def composed(name: str, y_true, y_pred, from_logits: bool, label_smoothing: float, epsilon: float):
    """Per-sample loss `name` of element-wise ops (differentiable in both arguments)."""
    from flexflow_keras import ops
    from flexflow_keras.ops.loss_functions import sigmoid_cross_entropy_with_logits

    p = y_pred if hasattr(y_pred, "dtype") else np.asarray(y_pred, "float32")
    t = y_true if str(y_true.dtype) == str(p.dtype) else ops.cast(y_true, str(p.dtype))
    if name != "categorical_crossentropy":
        t, p = _same_rank(t, p)
    if name == "mean_squared_error":
        return ops.mean(ops.square(ops.subtract(t, p)), axis=-1)
    if name == "mean_absolute_error":
        return ops.mean(ops.abs(ops.subtract(t, p)), axis=-1)
    if name == "binary_crossentropy":
        if label_smoothing:
            t = ops.add(ops.multiply(t, 1.0 - label_smoothing), 0.5 * label_smoothing)
        if from_logits:
            return ops.mean(sigmoid_cross_entropy_with_logits(t, p), axis=-1)
        q = ops.clip(p, epsilon, 1.0 - epsilon)
        bce = ops.add(ops.multiply(t, ops.log(q)), ops.multiply(ops.subtract(1.0, t), ops.log(ops.subtract(1.0, q))))
        return ops.mean(ops.negative(bce), axis=-1)
    if label_smoothing:
        t = ops.add(ops.multiply(t, 1.0 - label_smoothing), label_smoothing / int(p.shape[-1]))
    if from_logits:
        # TensorFlow's fused softmax_cross_entropy_with_logits: d/dlogits is softmax - labels (also for label
        # rows not summing to 1, which the LossOp reproduces), d/dlabels is -log_softmax (a term worth zero)
        fixed_t = ops.stop_gradient(t)
        value = apply_op(LossOp(name, True, 0.0, -1, epsilon), [fixed_t, p])
        nls = ops.stop_gradient(ops.negative(ops.log_softmax(p, axis=-1)))
        return ops.add(value, ops.subtract(ops.sum(ops.multiply(t, nls), axis=-1),
                                           ops.sum(ops.multiply(fixed_t, nls), axis=-1)))
    q = ops.clip(ops.divide(p, ops.sum(p, axis=-1, keepdims=True)), epsilon, 1.0 - epsilon)
    return ops.negative(ops.sum(ops.multiply(t, ops.log(q)), axis=-1))
