"""Error and crossentropy metrics (Keras 3): MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError,
CategoricalCrossentropy, SparseCategoricalCrossentropy, BinaryCrossentropy (means of the per-sample
loss functions in flexflow_keras.losses)."""

from __future__ import annotations

import numpy as np

from flexflow_keras import losses
from flexflow_keras.metrics.base import MeanMetricWrapper, Metric, mean_stats


class MeanSquaredError(MeanMetricWrapper):
    """Mean of ``mean((y_pred - y_true)**2, axis=-1)``. Args: name, dtype."""

    direction = "down"

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Mean of ``mean(|y_pred - y_true|, axis=-1)``. Args: name, dtype."""

    direction = "down"

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(losses.mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(Metric):
    """``sqrt(mean((y_pred - y_true)**2))`` over every element seen. Args: name, dtype."""

    direction = "down"
    state_size = 2

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        t, p = losses._align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
        return mean_stats(np.square(p - t), sample_weight)

    def result(self) -> float:
        total, count = self._state
        return float(np.sqrt(total / count)) if count else 0.0


class CategoricalCrossentropy(MeanMetricWrapper):
    """Mean categorical crossentropy. Args: name, dtype, from_logits, label_smoothing, axis."""

    direction = "down"

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False, label_smoothing=0,
                 axis=-1):
        super().__init__(losses.categorical_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """Mean sparse categorical crossentropy. Args: name, dtype, from_logits, axis."""

    direction = "down"

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False, axis=-1):
        super().__init__(losses.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, axis=axis)


class BinaryCrossentropy(MeanMetricWrapper):
    """Mean binary crossentropy. Args: name, dtype, from_logits, label_smoothing."""

    direction = "down"

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False, label_smoothing=0):
        super().__init__(losses.binary_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)
