"""The functional loss API: per-sample losses as `LossOp` nodes (symbolic) or arrays (eager).

A crossentropy of a graph tensor made by a softmax (over any axis) or a sigmoid is computed from
that activation's input with ``from_logits=True``, whatever ``from_logits`` says, as Keras 3's
TensorFlow backend does in a traced step through the ``_keras_logits`` its activations leave on their
output (`activation_logits`). With ``from_logits=True`` that backend warns and still takes the logits,
so a model ending in softmax whose loss says from_logits=True trains on the plain crossentropy, not on
a softmax of probabilities. Eagerly the ops leave ``_keras_logits`` on such outputs as that backend does
(ops/base._leave_logits), and the crossentropies read them: those of losses.py and keras.ops' (so
binary_focal_crossentropy's crossentropy term under a GradientTape, as Keras').

Labels computed by the model (from trainable weights, or a value a recording GradientTape differentiates) are
differentiated too, as TensorFlow does: those losses are composed of ops (ops/loss_labels.py).
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from flexflow_keras.ops.base import apply_op, plain_sigmoid
from flexflow_keras.ops.functional import _symbolic, _tensor
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.ops.loss_labels import composed, label_needs_gradient
from flexflow_keras.ops.losses import ALIASES, LossOp

_log = logging.getLogger(__name__)
_CROSSENTROPIES = ("categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy")


def activation_logits(y_pred):
    """The logits of `y_pred` when it is a graph tensor made by a softmax (over any axis) or by a sigmoid
    (an Activation op, or one fused into a Dense / convolution, whose copy without the activation is added
    on the same inputs and weights and named ``<op>/logits``); None otherwise."""
    node = getattr(y_pred, "node", None) if isinstance(y_pred, KerasTensor) else None
    op = getattr(node, "op", None)
    # TimeDistributed's output: Keras stacks its steps' outputs, which leaves the activation's logits behind
    if op is None or getattr(y_pred, "keras_logits_lost", False):
        return None
    if op.type_name == "softmax":  # over any axis: Keras' softmax leaves its logits whatever the axis
        return node.inputs[0]
    if not plain_sigmoid(op):
        return None
    if op.type_name == "activation":
        return node.inputs[0]
    # The fused op stays the model's output (what predict and the metrics read, what strategy files
    # name); the loss's gradient reaches the weights through the copy, made once per node (the loss and
    # the crossentropy metrics read the same one).
    logits = getattr(node, "logits_copy", None)
    if logits is None:
        logits = apply_op(dataclasses.replace(op, activation="linear", activation_params=()),
                          list(node.inputs), list(node.weights))
        logits.node.derived_from = (node, "logits")  # named <op>/logits (ops/naming.py)
        node.logits_copy = logits
    return logits


def _logits_rule(name: str, y_pred, from_logits: bool):
    """(y_pred, from_logits) after the softmax/sigmoid rule of the module docstring."""
    if name not in _CROSSENTROPIES:
        return y_pred, from_logits
    carried = None if isinstance(y_pred, KerasTensor) else getattr(y_pred, "_keras_logits", None)
    if carried is not None:  # an eager softmax/sigmoid output (ops/base._leave_logits), as that backend's _get_logits
        return carried, True
    logits = activation_logits(y_pred)
    if logits is None:
        return y_pred, from_logits
    if from_logits:
        _log.warning("%s received from_logits=True, but its y_pred '%s' was produced by a %s activation and "
                     "thus does not represent logits; the loss is computed from that activation's input, as "
                     "Keras 3 on TensorFlow does. Pass from_logits=False (or drop the activation) to say so.",
                     name, y_pred.name, y_pred.node.op.type_name if y_pred.node.op.type_name == "softmax"
                     else "sigmoid")
    return logits, True


def loss(name: str, y_true, y_pred, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
         epsilon: float = 1e-7, node_name: str | None = None):
    """Per-sample loss `name` (see `flexflow_keras.ops.losses.LOSS_NAMES`) of y_pred against y_true.

    Example:
        >>> loss("mse", np.zeros((2, 3)), np.ones((2, 3))).tolist()
        [1.0, 1.0]
    """
    name = ALIASES.get(name, name)
    y_pred, from_logits = _logits_rule(name, y_pred, from_logits)
    if axis == -1 and label_needs_gradient(name, y_true):  # labels the model computes: ops differentiating both
        return composed(name, y_true, y_pred, bool(from_logits), float(label_smoothing), float(epsilon))
    op = LossOp(name, bool(from_logits), float(label_smoothing), int(axis), float(epsilon))
    sym = _symbolic(y_true, y_pred)
    return apply_op(op, [_tensor(y_true, sym), _tensor(y_pred, sym)], name=node_name)


def categorical_crossentropy(target, output, from_logits: bool = False, axis: int = -1, *,
                             label_smoothing: float = 0.0):
    """Per-sample categorical crossentropy (Keras 3), over the class `axis`: Keras 3's positional order
    (target, output, from_logits, axis); `label_smoothing` (keyword only) is this framework's."""
    if axis not in (-1, len(getattr(output, "shape", np.shape(output))) - 1):
        return _class_axis_moved(target, output, from_logits, label_smoothing, axis)
    return loss("categorical_crossentropy", target, output, from_logits, label_smoothing, axis)


def _class_axis_moved(target, output, from_logits: bool, label_smoothing: float, axis: int):
    """A categorical crossentropy whose class axis is not the last (Keras' channels_first): the logits a
    softmax left are read first (Keras 3 on TensorFlow, whatever the softmax's axis), the labels are smoothed
    over the last dim (Keras' num_classes is ``shape[-1]``), then the class axis moves last."""
    from flexflow_keras.ops import functional
    from flexflow_keras.ops.numpy_arrays import moveaxis

    if not hasattr(output, "shape"):
        output = np.asarray(output, np.float32)
    ndim = len(output.shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"categorical_crossentropy(axis={axis}) of an output of rank {ndim}: expected an axis "
                         f"in [{-ndim}, {ndim - 1}].")
    carried = None if isinstance(output, KerasTensor) else getattr(output, "_keras_logits", None)
    logits = carried if carried is not None else activation_logits(output)
    if logits is not None:
        output, from_logits = logits, True
    if label_smoothing:
        target = functional.add(functional.multiply(functional.cast(target, "float32"), 1.0 - label_smoothing),
                                label_smoothing / int(target.shape[-1]))
    return loss("categorical_crossentropy", moveaxis(target, axis, -1), moveaxis(output, axis, -1), from_logits, 0.0,
                -1)


def sparse_categorical_crossentropy(target, output, from_logits: bool = False, axis: int = -1):
    """Per-sample sparse categorical crossentropy (integer targets)."""
    return loss("sparse_categorical_crossentropy", target, output, from_logits, 0.0, axis)


def binary_crossentropy(target, output, from_logits: bool = False):
    """Element-wise binary crossentropy, as Keras 3's ``keras.ops.binary_crossentropy`` (no reduction:
    the losses' ``binary_crossentropy`` averages the last axis). Probabilities are clipped to
    [1e-7, 1 - 1e-7]; logits use ``max(x, 0) - x * z + log(1 + exp(-|x|))``."""
    from flexflow_keras import ops

    output, from_logits = _logits_rule("binary_crossentropy", output, from_logits)
    if from_logits:
        return sigmoid_cross_entropy_with_logits(target, output)
    p = ops.clip(output, 1e-7, 1.0 - 1e-7)
    return ops.negative(ops.add(ops.multiply(target, ops.log(p)),
                                ops.multiply(ops.subtract(1.0, target), ops.log(ops.subtract(1.0, p)))))


def sigmoid_cross_entropy_with_logits(labels, logits):
    """TensorFlow's ``tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)``, element-wise:
    ``max(x, 0) - x * z + log(1 + exp(-|x|))``."""
    from flexflow_keras import ops

    return ops.add(ops.subtract(ops.relu(logits), ops.multiply(logits, labels)),
                   ops.log1p(ops.exp(ops.negative(ops.abs(logits)))))


def mean_squared_error(y_true, y_pred):
    """Per-sample mean squared error over the last axis."""
    return loss("mean_squared_error", y_true, y_pred)


def mean_absolute_error(y_true, y_pred):
    """Per-sample mean absolute error over the last axis."""
    return loss("mean_absolute_error", y_true, y_pred)
