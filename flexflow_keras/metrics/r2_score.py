"""`R2Score` (Keras 3, `keras/src/metrics/regression_metrics.py`): the coefficient of determination,
``1 - SS_res / SS_tot`` per output column, aggregated over the columns.

R² is not a mean of per-sample values, so the state is its sufficient statistics, which add across
batches and data-parallel shards: the element count, and per column the weighted sums of y_true and of
y_true², the weighted residual sum of squares, and the weight total. ``SS_tot = Σw·t² - (Σw·t)² / Σw``.
"""

from __future__ import annotations

import warnings

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses import _align
from flexflow_keras.metrics.extra import _Growable

_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


class R2Score(_Growable):
    """Coefficient of determination (R²), optionally adjusted for the number of regressors.

    Args:
        class_aggregation: how the columns' scores combine: "uniform_average" (their mean),
            "variance_weighted_average" (weighted by each column's variance of y_true) or None (one
            score per column).
        num_regressors: the number of independent variables, for the adjusted R²
            ``1 - (1 - R²)(n - 1) / (n - p - 1)`` (0: plain R²); n counts every element seen.
        name, dtype: as `Metric`.

    Example:
        >>> metric = R2Score()
        >>> metric.update_state(np.array([[1.0], [4.0], [3.0]]), np.array([[2.0], [4.0], [4.0]]))
        >>> round(metric.result(), 4)
        0.5714
    """

    direction = "up"

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        if class_aggregation not in _AGGREGATIONS:
            raise ArgumentError(f"R2Score expects class_aggregation to be one of {_AGGREGATIONS}, received "
                             f"class_aggregation={class_aggregation!r}.")
        if isinstance(num_regressors, bool) or not isinstance(num_regressors, (int, np.integer)) or num_regressors < 0:
            raise ArgumentError(f"R2Score expects num_regressors to be an integer >= 0 (the number of independent "
                             f"variables for the adjusted R², 0 for plain R²), received num_regressors="
                             f"{num_regressors!r}.")
        self.class_aggregation = class_aggregation
        self.num_regressors = int(num_regressors)
        super().__init__(name=name, dtype=dtype)

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
        if t.ndim != 2 or p.ndim != 2:
            raise ArgumentError(f"R2Score '{self.name}' expects 2D inputs of shape (batch_size, output_dim), received "
                             f"y_true.shape={t.shape} and y_pred.shape={p.shape}. Reshape them, e.g. "
                             f"y.reshape(len(y), -1).")
        w = np.ones(1) if sample_weight is None else np.asarray(sample_weight, np.float64)
        if w.ndim == 1:
            w = w[:, None]
        w = np.broadcast_to(w, t.shape)
        wt = t * w
        columns = [wt.sum(0), (t * wt).sum(0), (np.square(t - p) * w).sum(0), w.sum(0)]
        return np.concatenate([[float(t.size)], *columns])

    def result(self):
        if self._state.size == 0:
            return 0.0
        n, (total, squares, residual, count) = self._state[0], self._state[1:].reshape(4, -1)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = squares - total * (total / count)
            raw = 1.0 - residual / spread
        raw = np.where(np.isinf(raw), 0.0, raw)
        if self.class_aggregation == "uniform_average":
            score = np.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = np.sum(spread * raw) / np.sum(spread)
        else:
            score = raw
        k = self.num_regressors
        if k > n - 1 and k:
            warnings.warn("More independent predictors than datapoints in adjusted R2 score. Falling back to "
                          "standard R2 score.", stacklevel=2)
        elif k == n - 1 and k:
            warnings.warn("Division by zero in Adjusted R2 score. Falling back to standard R2 score.", stacklevel=2)
        elif k:
            score = 1.0 - (1.0 - score) * (n - 1.0) / (n - k - 1.0)
        return float(score) if np.ndim(score) == 0 else np.asarray(score, np.float32)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
