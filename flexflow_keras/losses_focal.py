"""The focal crossentropies of Keras 3 (`binary_focal_crossentropy`, `categorical_focal_crossentropy` and
their classes), composed of `flexflow_keras.ops` on symbolic tensors (so they train with each op's own
backward) and NumPy otherwise; `flexflow_keras.losses` re-exports them.

Formulas (Keras 3, `keras/src/losses/losses.py`, TensorFlow backend), eps = backend epsilon:
- binary: ``mean(w · (1 - p_t)^gamma · bce, axis)`` with ``p_t = t·p + (1-t)·(1-p)``, ``p = sigmoid(z)`` for
  logits, bce the element-wise binary crossentropy (from the logits themselves when given, else on p
  clipped to [eps, 1-eps]) and ``w = t·alpha + (1-t)·(1-alpha)`` with `apply_class_balancing` (else 1);
  label smoothing first: ``t·(1-ls) + ls/2``.
- categorical: ``sum(alpha · (1 - q)^gamma · (-t · log q), axis)`` with q = y_pred (softmax of logits)
  normalised to sum 1 over `axis` and clipped to [eps, 1-eps]; `alpha` a number or one per class;
  label smoothing: ``t·(1-ls) + ls/C``.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses_base import _align, _Builtin, _clip_interval, _epsilon, _symbolic, result_dtype


def _ops():
    from flexflow_keras import ops

    return ops


def _check_axis(name: str, axis) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ArgumentError(f"{name} expects an integer axis, received axis={axis!r} of type "
                         f"{type(axis).__name__}; pass e.g. axis=-1.")
    return int(axis)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free for large |z|


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample binary focal crossentropy: the mean over `axis` of the focal-weighted crossentropy.

    Args:
        y_true: labels in [0, 1], the shape of y_pred.
        y_pred: probabilities (or logits with `from_logits`).
        apply_class_balancing: weigh class 1 by `alpha` and class 0 by ``1 - alpha``.
        alpha: the class-1 weight for `apply_class_balancing`.
        gamma: the focusing exponent (0 gives the binary crossentropy).
        from_logits: y_pred holds logits.
        label_smoothing: labels become ``y*(1-ls) + ls/2``.
        axis: the axis averaged over.

    Example:
        >>> binary_focal_crossentropy([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]], gamma=2).round(3).tolist()
        [0.33, 0.206]
    """
    axis = _check_axis("binary_focal_crossentropy", axis)
    if _symbolic(y_true, y_pred):
        ops = _ops()
        t = ops.cast(y_true, "float32")
        if label_smoothing:
            t = ops.add(ops.multiply(t, 1.0 - label_smoothing), 0.5 * label_smoothing)
        # Keras: with logits, p = sigmoid(y_pred) and the crossentropy of p, which its TensorFlow backend takes
        # from p's logits, y_pred itself (even when y_pred is an activation's output: no softmax/sigmoid rule)
        p = ops.sigmoid(y_pred) if from_logits else y_pred
        bce = ops.binary_crossentropy(t, p, from_logits=False)
        p_t = ops.add(ops.multiply(t, p), ops.multiply(ops.subtract(1.0, t), ops.subtract(1.0, p)))
        focal = ops.multiply(ops.power(ops.subtract(1.0, p_t), float(gamma)), bce)
        if apply_class_balancing:
            weight = ops.add(ops.multiply(t, float(alpha)), ops.multiply(ops.subtract(1.0, t), 1.0 - alpha))
            focal = ops.multiply(weight, focal)
        return ops.mean(focal, axis=axis)
    # a compiled model's sigmoid output carries its logits (metrics/logits.py): Keras' crossentropy reads them
    carried = None if from_logits else getattr(y_pred, "_keras_logits", None)
    t, z = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits or carried is not None:
        p = _sigmoid(z) if from_logits else z
        if carried is not None:
            z = _align(np.asarray(y_true, np.float64), np.asarray(carried, np.float64))[1]
        bce = np.maximum(z, 0.0) - z * t + np.log1p(np.exp(-np.abs(z)))
    else:
        p = z
        q = np.clip(p, *_clip_interval(y_pred))
        bce = -(t * np.log(q) + (1.0 - t) * np.log(1.0 - q))
    p_t = t * p + (1.0 - t) * (1.0 - p)
    focal = np.power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (t * alpha + (1.0 - t) * (1.0 - alpha)) * focal
    return np.mean(focal, axis=axis).astype(result_dtype(y_pred))


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """Per-sample categorical focal crossentropy: ``sum(alpha · (1 - q)^gamma · (-t · log q))`` over `axis`.

    Args:
        y_true: one-hot labels, shape (..., C).
        y_pred: probabilities (or logits with `from_logits`), shape (..., C).
        alpha: a weight for every class, or one number for all.
        gamma: the focusing exponent (0 gives alpha times the crossentropy).
        from_logits: y_pred holds logits (a softmax over `axis` is applied).
        label_smoothing: labels become ``y*(1-ls) + ls/C``.
        axis: the class axis.

    Example:
        >>> categorical_focal_crossentropy([[0, 1, 0]], [[0.05, 0.9, 0.05]]).round(6).tolist()
        [0.000263]
    """
    axis = _check_axis("categorical_focal_crossentropy", axis)
    eps = _epsilon()
    weights = alpha if np.ndim(alpha) == 0 else np.asarray(alpha, np.float32)
    if _symbolic(y_true, y_pred):
        ops = _ops()
        t = ops.cast(y_true, "float32")
        if label_smoothing:
            t = ops.add(ops.multiply(t, 1.0 - label_smoothing), label_smoothing / y_pred.shape[-1])
        p = ops.softmax(y_pred, axis=axis) if from_logits else y_pred
        q = ops.clip(ops.divide(p, ops.sum(p, axis=axis, keepdims=True)), eps, 1.0 - eps)
        cce = ops.negative(ops.multiply(t, ops.log(q)))
        factor = ops.multiply(ops.power(ops.subtract(1.0, q), float(gamma)), weights)
        return ops.sum(ops.multiply(factor, cce), axis=axis)
    t, p = np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64)
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + label_smoothing / t.shape[-1]
    if from_logits:
        p = np.exp(p - np.max(p, axis=axis, keepdims=True))
    q = np.clip(p / np.sum(p, axis=axis, keepdims=True), eps, 1.0 - eps)
    factor = np.power(1.0 - q, gamma) * np.asarray(weights, np.float64)
    return np.sum(factor * (-t * np.log(q)), axis=axis).astype(result_dtype(y_pred))


class BinaryFocalCrossentropy(_Builtin):
    """Binary focal crossentropy (Lin et al., 2018), averaged over `axis`.

    Args:
        apply_class_balancing: weigh class 1 by `alpha`, class 0 by ``1 - alpha``.
        alpha: the class-1 weight (0.25). gamma: the focusing exponent (2.0).
        from_logits: y_pred holds logits. label_smoothing: float in [0, 1]. axis: averaged over (-1).
        reduction, name, dtype: as `Loss`.

    Example:
        >>> BinaryFocalCrossentropy(gamma=2, from_logits=True)([[0, 1, 0, 0]], [[-18.6, 0.51, 2.94, -12.8]])
    """

    _fn = staticmethod(binary_focal_crossentropy)
    label_kind = "binary"

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                 axis=-1, reduction="sum_over_batch_size", name="binary_focal_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, apply_class_balancing=apply_class_balancing,
                         alpha=alpha, gamma=gamma, from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=_check_axis(type(self).__name__, axis))


class CategoricalFocalCrossentropy(_Builtin):
    """Alpha-balanced categorical focal crossentropy for one-hot labels.

    Args:
        alpha: a number, or one weight per class (0.25). gamma: the focusing exponent (2.0).
        from_logits: y_pred holds logits. label_smoothing: float in [0, 1]. axis: the class axis (-1).
        reduction, name, dtype: as `Loss`.

    Example:
        >>> CategoricalFocalCrossentropy()([[0., 1., 0.], [0., 0., 1.]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
    """

    _fn = staticmethod(categorical_focal_crossentropy)
    label_kind = "categorical"

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=_check_axis(type(self).__name__, axis))


CLASSES = (BinaryFocalCrossentropy, CategoricalFocalCrossentropy)
FUNCTIONS = {binary_focal_crossentropy: BinaryFocalCrossentropy,
             categorical_focal_crossentropy: CategoricalFocalCrossentropy}
