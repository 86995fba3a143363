"""The best-at-a-constraint confusion metrics of Keras 3 (`SensitivitySpecificityBase` and its four
subclasses): `SensitivityAtSpecificity`, `SpecificityAtSensitivity`, `PrecisionAtRecall` and
`RecallAtPrecision`. Each counts tp, fp, tn and fn at `num_thresholds` thresholds evenly spaced over
[0, 1] (the counts add across batches and shards, as in metrics/confusion.py) and reports the best value
of one rate among the thresholds where the other rate meets `value` (0 when none does).

Counting follows Keras' evenly-spaced-thresholds path: scores are clipped to [0, 1] and a score s is
positive at threshold i when ``i < ceil(s·(T-1))`` (T thresholds, computed in float32 as Keras does), i.e.
``s > i/(T-1)``. With num_thresholds=1 the one threshold is 0.5 and ``s > 0.5`` counts, unclipped.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses import _align
from flexflow_keras.metrics.base import Metric
from flexflow_keras.metrics.confusion import _div, confusion_counts


def _weights(sample_weight, shape) -> np.ndarray:
    if sample_weight is None:
        return np.ones(shape)
    w = np.asarray(sample_weight, np.float64)
    while w.ndim < len(shape):
        w = w[..., None]
    return np.broadcast_to(w, shape)


def bucket_counts(y_true, y_pred, num_thresholds: int, sample_weight=None, class_id=None,
                  floor_at_zero: bool = False) -> np.ndarray:
    """(4, T) weighted tp, fp, tn, fn at the T thresholds ``i/(T-1)``, by Keras' bucketing (T >= 2).
    `floor_at_zero`: Keras' thresholds_with_epsilon (AUC's first threshold is -epsilon, so a score of 0 is
    positive there: bucket max(ceil(s·(T-1)) - 1, 0))."""
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float32))
    if class_id is not None:
        t, p = t[..., class_id], p[..., class_id]
    w = _weights(sample_weight, p.shape).reshape(-1)
    p = np.clip(p, np.float32(0.0), np.float32(1.0)).reshape(-1)
    bucket = np.ceil(p * np.float32(num_thresholds - 1)).astype(np.int64) - 1  # -1: positive nowhere
    if floor_at_zero:
        bucket = np.maximum(bucket, 0)
    pos = t.reshape(-1) != 0
    kept = bucket >= 0
    tp_hist = np.bincount(bucket[pos & kept], weights=w[pos & kept], minlength=num_thresholds)
    fp_hist = np.bincount(bucket[~pos & kept], weights=w[~pos & kept], minlength=num_thresholds)
    tp = np.cumsum(tp_hist[::-1])[::-1]  # positive at threshold i: bucket >= i
    fp = np.cumsum(fp_hist[::-1])[::-1]
    return np.stack([tp, fp, np.sum(w[~pos]) - fp, np.sum(w[pos]) - tp])


class SensitivitySpecificityBase(Metric):
    """Counts at evenly spaced thresholds and the best of one rate under a constraint on another.

    Args:
        value: the constraint's bound, in [0, 1].
        num_thresholds: how many thresholds (default 200; 1 means the single threshold 0.5).
        class_id: score only this class (column of the last axis).
        name, dtype: as `Metric`.
    """

    direction = "up"
    _value_name = "value"

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        who = type(self).__name__
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
                not 0 <= value <= 1:
            raise ArgumentError(f"{who} expects `{self._value_name}` in the range [0, 1], received "
                             f"{self._value_name}={value!r}.")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, (int, np.integer)) or num_thresholds <= 0:
            raise ArgumentError(f"{who} expects `num_thresholds` to be an integer > 0, received "
                             f"num_thresholds={num_thresholds!r}.")
        self.value = value
        self.num_thresholds = int(num_thresholds)
        self.class_id = class_id
        if self.num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) * 1.0 / (self.num_thresholds - 1) for i in range(self.num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
        super().__init__(name=name, dtype=dtype)

    def _initial_state(self) -> np.ndarray:
        return np.zeros((4, len(self.thresholds)))

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        if self.class_id is not None and np.ndim(y_pred) < 2:
            raise ArgumentError(f"{type(self).__name__} '{self.name}' has class_id={self.class_id}, so y_pred must "
                             f"have shape (num_samples, num_classes); received shape {np.shape(y_pred)}.")
        if self.num_thresholds == 1:
            return confusion_counts(y_true, y_pred, self.thresholds, sample_weight, class_id=self.class_id)
        return bucket_counts(y_true, y_pred, self.num_thresholds, sample_weight, self.class_id)

    #: which rate must reach `value`, and which one is maximised: "sensitivity", "specificity" or "precision"
    _constrained = _dependent = ""

    def result(self) -> float:
        """The largest `_dependent` rate among the thresholds whose `_constrained` rate is >= value, else 0."""
        tp, fp, tn, fn = self._state
        rates = {"sensitivity": _div(tp, tp + fn), "specificity": _div(tn, tn + fp), "precision": _div(tp, tp + fp)}
        feasible = rates[self._constrained] >= self.value
        return float(np.max(np.where(feasible, rates[self._dependent], 0.0), initial=0.0))

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._value_name: self.value}


class SensitivityAtSpecificity(SensitivitySpecificityBase):
    """The best sensitivity (recall) where specificity ``tn / (tn + fp)`` is >= `specificity`.

    Args:
        specificity: in [0, 1]. num_thresholds, class_id, name, dtype: as `SensitivitySpecificityBase`.

    Example:
        >>> model.compile("sgd", "binary_crossentropy", metrics=[keras.metrics.SensitivityAtSpecificity(0.5)])
    """

    _value_name, _constrained, _dependent = "specificity", "specificity", "sensitivity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)
        self.specificity = specificity


class SpecificityAtSensitivity(SensitivitySpecificityBase):
    """The best specificity where sensitivity (recall) is >= `sensitivity`.

    Args:
        sensitivity: in [0, 1]. num_thresholds, class_id, name, dtype: as `SensitivitySpecificityBase`.
    """

    _value_name, _constrained, _dependent = "sensitivity", "sensitivity", "specificity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)
        self.sensitivity = sensitivity


class PrecisionAtRecall(SensitivitySpecificityBase):
    """The best precision where recall is >= `recall`.

    Args:
        recall: in [0, 1]. num_thresholds, class_id, name, dtype: as `SensitivitySpecificityBase`.
    """

    _value_name, _constrained, _dependent = "recall", "sensitivity", "precision"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)
        self.recall = recall


class RecallAtPrecision(SensitivitySpecificityBase):
    """The best recall where precision is >= `precision` (0 when no threshold reaches it).

    Args:
        precision: in [0, 1]. num_thresholds, class_id, name, dtype: as `SensitivitySpecificityBase`.
    """

    _value_name, _constrained, _dependent = "precision", "precision", "sensitivity"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)
        self.precision = precision
