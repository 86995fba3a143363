"""The functional loss API: per-sample losses as `LossOp` nodes (symbolic) or arrays (eager)."""

from __future__ import annotations

from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.functional import _symbolic, _tensor
from flexflow_keras.ops.losses import ALIASES, LossOp


def loss(name: str, y_true, y_pred, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
         epsilon: float = 1e-7, node_name: str | None = None):
    """Per-sample loss `name` (see `flexflow_keras.ops.losses.LOSS_NAMES`) of y_pred against y_true.

    Example:
        >>> loss("mse", np.zeros((2, 3)), np.ones((2, 3))).tolist()
        [1.0, 1.0]
    """
    op = LossOp(ALIASES.get(name, name), bool(from_logits), float(label_smoothing), int(axis), float(epsilon))
    sym = _symbolic(y_true, y_pred)
    return apply_op(op, [_tensor(y_true, sym), _tensor(y_pred, sym)], name=node_name)


def categorical_crossentropy(target, output, from_logits: bool = False, label_smoothing: float = 0.0,
                             axis: int = -1):
    """Per-sample categorical crossentropy (Keras 3)."""
    return loss("categorical_crossentropy", target, output, from_logits, label_smoothing, axis)


def sparse_categorical_crossentropy(target, output, from_logits: bool = False, axis: int = -1):
    """Per-sample sparse categorical crossentropy (integer targets)."""
    return loss("sparse_categorical_crossentropy", target, output, from_logits, 0.0, axis)


def binary_crossentropy(target, output, from_logits: bool = False):
    """Element-wise binary crossentropy, as Keras 3's ``keras.ops.binary_crossentropy`` (no reduction:
    the losses' ``binary_crossentropy`` averages the last axis). Probabilities are clipped to
    [1e-7, 1 - 1e-7]; logits use ``max(x, 0) - x * z + log(1 + exp(-|x|))``."""
    from flexflow_keras import ops

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
