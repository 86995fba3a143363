"""More Keras losses, composed of `flexflow_keras.ops` (so they train with each op's own backward):
mean absolute percentage error, mean squared logarithmic error, KL divergence, cosine similarity; with
Keras 2's short names (`mape`, `msle`, `kld`, `cosine`, ...), which `flexflow_keras.losses` re-exports.

Formulas (Keras 3, `keras/src/losses/losses.py`), per sample over the last axis, eps = backend epsilon:
- MAPE: ``100 · mean(|t - p| / max(|t|, eps))``
- MSLE: ``mean((log(max(p, eps) + 1) - log(max(t, eps) + 1))²)``
- KLD: ``sum(t' · log(t' / p'))`` with t', p' clipped to [eps, 1]
- cosine similarity: ``-sum(t / max(‖t‖, eps) · p / max(‖p‖, eps))``
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.losses_base import _align, _Builtin, _epsilon, _symbolic, result_dtype


def _ops():
    from flexflow_keras import ops

    return ops


def mean_absolute_percentage_error(y_true, y_pred):
    """Per-sample ``100 · mean(|y_true - y_pred| / max(|y_true|, eps))`` over the last axis."""
    eps = _epsilon()
    if _symbolic(y_true, y_pred):
        ops = _ops()
        diff = ops.abs(ops.divide(ops.subtract(y_true, y_pred), ops.maximum(ops.abs(y_true), eps)))
        return ops.multiply(ops.mean(diff, axis=-1), 100.0)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return (100.0 * np.mean(np.abs((t - p) / np.maximum(np.abs(t), eps)), axis=-1)).astype(result_dtype(y_pred))


def mean_squared_logarithmic_error(y_true, y_pred):
    """Per-sample ``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))²)`` over the last axis."""
    eps = _epsilon()
    if _symbolic(y_true, y_pred):
        ops = _ops()
        first = ops.log(ops.add(ops.maximum(y_pred, eps), 1.0))
        second = ops.log(ops.add(ops.maximum(y_true, eps), 1.0))
        return ops.mean(ops.square(ops.subtract(first, second)), axis=-1)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np.mean(np.square(np.log(np.maximum(p, eps) + 1) - np.log(np.maximum(t, eps) + 1)), axis=-1).astype(
        result_dtype(y_pred, at_least_float32=True))


def kl_divergence(y_true, y_pred):
    """Per-sample ``sum(y_true · log(y_true / y_pred))`` over the last axis, both clipped to [eps, 1]."""
    eps = _epsilon()
    if _symbolic(y_true, y_pred):
        ops = _ops()
        t, p = ops.clip(y_true, eps, 1.0), ops.clip(y_pred, eps, 1.0)
        return ops.sum(ops.multiply(t, ops.log(ops.divide(t, p))), axis=-1)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    t, p = np.clip(t, eps, 1), np.clip(p, eps, 1)
    return np.sum(t * np.log(t / p), axis=-1).astype(result_dtype(y_pred))


def _normalize(ops, x, eps):
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    return ops.divide(x, ops.maximum(norm, eps))


def cosine_similarity(y_true, y_pred, axis=-1):
    """Per-sample negative cosine similarity ``-sum(l2_normalize(y_true) · l2_normalize(y_pred))``.

    Args:
        y_true, y_pred: labels and predictions.
        axis: only -1 (the last axis) is supported.
    """
    eps = _epsilon()
    if axis not in (-1, np.ndim(y_pred) - 1) and not _symbolic(y_true, y_pred):
        raise ValueError(f"cosine_similarity supports only the last axis (axis=-1); received axis={axis}.")
    if _symbolic(y_true, y_pred):
        if axis != -1:
            raise ValueError(f"cosine_similarity supports only the last axis (axis=-1); received axis={axis}.")
        ops = _ops()
        return ops.negative(ops.sum(ops.multiply(_normalize(ops, y_true, eps), _normalize(ops, y_pred, eps)),
                                    axis=-1))
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    tn = t / np.maximum(np.linalg.norm(t, axis=-1, keepdims=True), eps)
    pn = p / np.maximum(np.linalg.norm(p, axis=-1, keepdims=True), eps)
    return (-np.sum(tn * pn, axis=-1)).astype(result_dtype(y_pred))


def huber(y_true, y_pred, delta=1.0):
    """Per-sample Huber loss over the last axis: ``0.5 x²`` where ``|x| <= delta``, else
    ``delta (|x| - 0.5 delta)``, for ``x = y_pred - y_true``."""
    delta = float(delta)
    if _symbolic(y_true, y_pred):
        ops = _ops()
        a = ops.abs(ops.subtract(y_pred, y_true))
        q = ops.minimum(a, delta)
        return ops.mean(ops.add(ops.multiply(ops.square(q), 0.5), ops.multiply(ops.subtract(a, q), delta)), axis=-1)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    a = np.abs(p - t)
    return np.mean(np.where(a <= delta, 0.5 * a * a, delta * (a - 0.5 * delta)), axis=-1).astype(result_dtype(y_pred))


def log_cosh(y_true, y_pred):
    """Per-sample ``mean(log(cosh(y_pred - y_true)))`` over the last axis, as ``x + softplus(-2x) - log 2``."""
    if _symbolic(y_true, y_pred):
        ops = _ops()
        x = ops.subtract(y_pred, y_true)
        return ops.mean(ops.subtract(ops.add(x, ops.softplus(ops.multiply(x, -2.0))), float(np.log(2.0))), axis=-1)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    x = p - t
    return np.mean(x + np.logaddexp(0.0, -2.0 * x) - np.log(2.0), axis=-1).astype(result_dtype(y_pred))


class Huber(_Builtin):
    """Huber loss. Args: delta (where the quadratic turns linear), reduction, name, dtype as `Loss`."""

    _fn = staticmethod(huber)
    label_kind = "regression"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, delta=delta)


class LogCosh(_Builtin):
    """Logarithm of the hyperbolic cosine of the error. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(log_cosh)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class MeanAbsolutePercentageError(_Builtin):
    """Mean absolute percentage error. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(mean_absolute_percentage_error)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(_Builtin):
    """Mean squared logarithmic error. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(mean_squared_logarithmic_error)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class KLDivergence(_Builtin):
    """Kullback-Leibler divergence of y_pred from y_true. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(kl_divergence)

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class CosineSimilarity(_Builtin):
    """Negative cosine similarity (-1 when aligned). Args: axis (-1 only), reduction, name, dtype."""

    _fn = staticmethod(cosine_similarity)

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, axis=axis)


mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
cosine = cosine_proximity = cosine_similarity

CLASSES = (MeanAbsolutePercentageError, MeanSquaredLogarithmicError, KLDivergence, CosineSimilarity, Huber,
           LogCosh)
FUNCTIONS = {mean_absolute_percentage_error: MeanAbsolutePercentageError, huber: Huber, log_cosh: LogCosh,
             mean_squared_logarithmic_error: MeanSquaredLogarithmicError, kl_divergence: KLDivergence,
             cosine_similarity: CosineSimilarity}
SHORT_NAMES = {"mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
               "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError, "kld": KLDivergence,
               "KLD": KLDivergence, "kullback_leibler_divergence": KLDivergence, "cosine": CosineSimilarity,
               "cosine_proximity": CosineSimilarity, "logcosh": LogCosh}
