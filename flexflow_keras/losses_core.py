"""The five losses the training loop records as one fused `flexflow_keras.ops.loss` op each (ops/losses.py's
`LossOp` names): categorical, sparse categorical and binary crossentropy, mean squared and mean absolute
error. For each, its per-sample function (symbolic through ``ops.loss`` on KerasTensors or under a
GradientTape, eager NumPy with Keras' TensorFlow-backend formulas otherwise) and its `Loss` class; with Keras'
short names (`mse`, `mae`, `bce`). `flexflow_keras.losses` re-exports them and registers CLASSES, FUNCTIONS
and SHORT_NAMES, as for the other losses_*.py modules.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses_base import (
    PUBLIC_MODULE,
    _align,
    _Builtin,
    _clip_interval,
    _epsilon,
    _symbolic,
    result_dtype,
)
from flexflow_keras.ops.graph import KerasTensor

_CARRIED = ("categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy")


def _loss_op(name: str, y_true, y_pred, **kwargs):
    """The loss as ops; a crossentropy of an eager output carrying ``_keras_logits`` (models/custom_training.py:
    a softmax or sigmoid output while a GradientTape records) takes those logits, as Keras 3 on TensorFlow."""
    from flexflow_keras import ops

    logits = getattr(y_pred, "_keras_logits", None)
    if logits is not None and name in _CARRIED and not isinstance(y_pred, KerasTensor):
        y_pred, kwargs = logits, {**kwargs, "from_logits": True}
    return ops.loss(name, y_true, y_pred, **kwargs)


# --- per-sample functions (eager NumPy; symbolic through ops.loss) ---------------------------------------

def _logsumexp(z: np.ndarray) -> np.ndarray:
    m = np.max(z, axis=-1, keepdims=True)
    return (m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)))[..., 0]


def _carried_logits(y_pred, from_logits: bool):
    """(y_pred, from_logits), or (its logits, True) when y_pred carries ``_keras_logits``: a compiled
    model's softmax or sigmoid output as the metrics see it (metrics/logits.py), whose crossentropies
    Keras 3's TensorFlow backend computes from the activation's input in a traced step."""
    logits = getattr(y_pred, "_keras_logits", None)
    return (y_pred, from_logits) if logits is None else (logits, True)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample crossentropy between one-hot labels and probabilities (or logits).

    Args:
        y_true: one-hot labels, shape (..., C).
        y_pred: probabilities (or logits with `from_logits`), shape (..., C).
        from_logits: y_pred holds logits.
        label_smoothing: labels become ``y*(1-ls) + ls/C`` (C: the last dim, as Keras', whatever `axis`).
        axis: the class axis (Keras' channels_first crossentropy takes axis=1).
    """
    ndim = len(getattr(y_pred, "shape", np.shape(y_pred)))
    if axis not in (-1, ndim - 1):
        from flexflow_keras.ops.loss_functions import _class_axis_moved

        return _class_axis_moved(y_true, y_pred, from_logits, label_smoothing, axis)
    if _symbolic(y_true, y_pred):
        return _loss_op("categorical_crossentropy", y_true, y_pred, from_logits=from_logits,
                        label_smoothing=label_smoothing)
    y_pred, from_logits = _carried_logits(y_pred, from_logits)
    p = np.asarray(y_pred, np.float64)
    t = np.asarray(y_true, np.float64)
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + label_smoothing / p.shape[-1]
    if from_logits:
        out = np.sum(t, axis=-1) * _logsumexp(p) - np.sum(t * p, axis=-1)
    else:
        eps = _epsilon()
        q = np.clip(p / np.sum(p, axis=-1, keepdims=True), eps, 1.0 - eps)
        out = -np.sum(t * np.log(q), axis=-1)
    return out.astype(result_dtype(y_pred))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """Per-sample crossentropy between integer class labels and probabilities (or logits).

    Args:
        y_true: class ids, shape (...) or (..., 1).
        y_pred: probabilities (or logits), shape (..., C).
        from_logits: y_pred holds logits.
        ignore_class: a class id whose samples get loss 0.
        axis: must be -1.
    """
    if _symbolic(y_true, y_pred):
        if ignore_class is not None:
            raise ArgumentError("sparse_categorical_crossentropy(ignore_class=...) on symbolic tensors: flexflow_keras "
                                "masks the ignored entries when the loss is a compiled model's "
                                "(compile(loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=k))); as a "
                                "function here, give those entries sample_weight 0 instead.")
        return _loss_op("sparse_categorical_crossentropy", y_true, y_pred, from_logits=from_logits)
    _last_axis_only("sparse_categorical_crossentropy", axis, y_pred)
    y_pred, from_logits = _carried_logits(y_pred, from_logits)
    p = np.asarray(y_pred, np.float64)
    labels = np.asarray(y_true)
    if labels.ndim == p.ndim and labels.shape[-1] == 1:
        labels = labels[..., 0]
    labels = labels.astype(np.int64)
    valid = None
    if ignore_class is not None:
        valid = labels != ignore_class
        labels = np.where(valid, labels, 0)
    if from_logits:
        z = p
    else:
        eps = _epsilon()
        z = np.log(np.clip(p, eps, 1.0 - eps))
    picked = np.take_along_axis(z, labels[..., None], axis=-1)[..., 0]
    out = _logsumexp(z) - picked
    if valid is not None:
        out = np.where(valid, out, 0.0)
    return out.astype(result_dtype(y_pred))


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample binary crossentropy, the mean over the last axis.

    Args:
        y_true: labels in [0, 1], the shape of y_pred.
        y_pred: probabilities (or logits with `from_logits`).
        from_logits: y_pred holds logits.
        label_smoothing: labels become ``y*(1-ls) + ls/2``.
        axis: must be -1.
    """
    if _symbolic(y_true, y_pred):
        return _loss_op("binary_crossentropy", y_true, y_pred, from_logits=from_logits,
                        label_smoothing=label_smoothing)
    _last_axis_only("binary_crossentropy", axis, y_pred)
    y_pred, from_logits = _carried_logits(y_pred, from_logits)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        bce = np.maximum(p, 0.0) - p * t + np.log1p(np.exp(-np.abs(p)))
    else:
        q = np.clip(p, *_clip_interval(y_pred))
        bce = -(t * np.log(q) + (1.0 - t) * np.log(1.0 - q))
    return np.mean(bce, axis=-1).astype(result_dtype(y_pred))


def mean_squared_error(y_true, y_pred):
    """Per-sample mean over the last axis of ``(y_pred - y_true)**2``."""
    if _symbolic(y_true, y_pred):
        return _loss_op("mean_squared_error", y_true, y_pred)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np.mean(np.square(p - t), axis=-1).astype(result_dtype(y_pred))


def mean_absolute_error(y_true, y_pred):
    """Per-sample mean over the last axis of ``|y_pred - y_true|``."""
    if _symbolic(y_true, y_pred):
        return _loss_op("mean_absolute_error", y_true, y_pred)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np.mean(np.abs(p - t), axis=-1).astype(result_dtype(y_pred))


def _last_axis_only(name: str, axis: int, y_pred) -> None:
    ndim = np.ndim(y_pred)
    if axis not in (-1, ndim - 1):
        raise ValueError(f"{name} supports only the last axis (axis=-1); received axis={axis}.")


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
bce = BCE = binary_crossentropy


# --- classes -------------------------------------------------------------------------------------------

class CategoricalCrossentropy(_Builtin):
    """Crossentropy for one-hot labels.

    Args:
        from_logits: y_pred holds logits. label_smoothing: float in [0, 1]. axis: -1.
        reduction, name, dtype: as `Loss`.
    """

    _fn = staticmethod(categorical_crossentropy)
    label_kind = "categorical"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(_Builtin):
    """Crossentropy for integer class labels.

    Args:
        from_logits: y_pred holds logits. ignore_class: class id with loss 0 (eager only).
        reduction, name, dtype: as `Loss`.
    """

    _fn = staticmethod(sparse_categorical_crossentropy)
    label_kind = "sparse"

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         ignore_class=ignore_class)


class BinaryCrossentropy(_Builtin):
    """Binary crossentropy, averaged over the last axis.

    Args:
        from_logits: y_pred holds logits. label_smoothing: float in [0, 1]. axis: -1.
        reduction, name, dtype: as `Loss`.
    """

    _fn = staticmethod(binary_crossentropy)
    label_kind = "binary"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class MeanSquaredError(_Builtin):
    """Mean of squared errors over the last axis. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(mean_squared_error)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(_Builtin):
    """Mean of absolute errors over the last axis. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(mean_absolute_error)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


CLASSES = (CategoricalCrossentropy, SparseCategoricalCrossentropy, BinaryCrossentropy, MeanSquaredError,
           MeanAbsoluteError)
FUNCTIONS = {categorical_crossentropy: CategoricalCrossentropy,
             sparse_categorical_crossentropy: SparseCategoricalCrossentropy,
             binary_crossentropy: BinaryCrossentropy, mean_squared_error: MeanSquaredError,
             mean_absolute_error: MeanAbsoluteError}
SHORT_NAMES = {"mse": MeanSquaredError, "MSE": MeanSquaredError, "mae": MeanAbsoluteError,
               "MAE": MeanAbsoluteError, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy}

# keras.losses is their public home (see losses_base.PUBLIC_MODULE; keras.losses.mse pickles by that name)
for _obj in (*CLASSES, *FUNCTIONS):
    _obj.__module__ = PUBLIC_MODULE
del _obj
