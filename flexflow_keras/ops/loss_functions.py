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


def binary_crossentropy(target, output, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1):
    """Per-sample binary crossentropy, averaged over the last axis."""
    return loss("binary_crossentropy", target, output, from_logits, label_smoothing, axis)


def mean_squared_error(y_true, y_pred):
    """Per-sample mean squared error over the last axis."""
    return loss("mean_squared_error", y_true, y_pred)


def mean_absolute_error(y_true, y_pred):
    """Per-sample mean absolute error over the last axis."""
    return loss("mean_absolute_error", y_true, y_pred)
