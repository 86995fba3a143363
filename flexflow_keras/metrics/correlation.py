"""Correlation metrics (Keras 3, `keras/src/metrics/correlation_metrics.py`): the functions
`pearson_correlation` and `concordance_correlation`, and the metrics `PearsonCorrelation` and
`ConcordanceCorrelation`, Keras' means of those functions' values.

The functions correlate `y_true` with `y_pred` along `axis` (default -1: the features of each sample).
With an `axis` that leaves the batch axis alone, every sample has its own value and the metric is an
ordinary weighted mean (state [sum, count], additive across shards). With an `axis` that spans the batch
axis, Keras computes one correlation per batch (per position of the other axes) and averages those
values over the batches; a data-parallel shard holds only part of a batch, so here each shard sends the
sufficient statistics of its part (count, sums, sums of squares and cross products per position), the
shards' statistics add up to the whole batch's, and `merge_stats` turns that batch into its values.
So in that mode `merge_stats` takes one batch at a time (as the training loop and `update_state` call
it), and sample weights are refused as Keras refuses them (their shape cannot meet the values').
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses import _align
from flexflow_keras.metrics.base import MeanMetricWrapper, mean_stats


def _eps() -> float:
    from flexflow_keras import backend

    return float(backend.epsilon())


def _prepare(y_true, y_pred, axis):
    """(y_true, y_pred) as float64 of the same rank, and `axis` as a sorted tuple of non-negative axes."""
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    items = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    return t, p, tuple(sorted({int(a) % p.ndim for a in items}))


def pearson_correlation(y_true, y_pred, axis=-1):
    """Pearson correlation coefficient of `y_true` and `y_pred` along `axis` (NumPy, float32 result).

    Args:
        y_true, y_pred: labels and predictions (a trailing size-1 dim is squeezed or expanded as Keras).
        axis: int or tuple of ints, the axes correlated over (-1: one value per sample).

    Example:
        >>> pearson_correlation([[1.0, 2.0, 3.0]], [[2.0, 4.0, 7.0]]).round(4).tolist()
        [0.9934]
    """
    t, p, ax = _prepare(y_true, y_pred, axis)
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant row gives NaN, as in Keras
        tn = t - t.mean(axis=ax, keepdims=True)
        pn = p - p.mean(axis=ax, keepdims=True)
        tn = tn / tn.std(axis=ax, keepdims=True)
        pn = pn / pn.std(axis=ax, keepdims=True)
        return np.mean(tn * pn, axis=ax).astype(np.float32)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Concordance correlation coefficient of `y_true` and `y_pred` along `axis`, Keras 3's formula
    ``mean(2·(t - p̄)·(p - p̄) / (var(t) + var(p) + (t̄ - p̄)² + eps))`` (NumPy, float32 result). Args as
    `pearson_correlation`.

    Example:
        >>> concordance_correlation([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]]).round(4).tolist()
        [1.0]
    """
    t, p, ax = _prepare(y_true, y_pred, axis)
    t_mean, p_mean = t.mean(axis=ax, keepdims=True), p.mean(axis=ax, keepdims=True)
    norm = t.var(axis=ax, keepdims=True) + p.var(axis=ax, keepdims=True) + np.square(t_mean - p_mean)
    covar = (t - p_mean) * (p - p_mean)
    return np.mean(2.0 * covar / (norm + _eps()), axis=ax).astype(np.float32)


def _moments(t: np.ndarray, p: np.ndarray, ax: tuple[int, ...]) -> np.ndarray:
    """[count, sum t, sum p, sum t², sum p², sum t·p] over the axes `ax`, per position of the others."""
    count = float(np.prod([t.shape[a] for a in ax]))
    sums = [np.sum(v, axis=ax).ravel() for v in (t, p, t * t, p * p, t * p)]
    return np.concatenate([[count], *sums])


def _from_moments(stats: np.ndarray, concordance: bool) -> np.ndarray:
    """Each position's coefficient from `_moments` (of a whole batch)."""
    n, rest = stats[0], stats[1:].reshape(5, -1)
    t_mean, p_mean = rest[0] / n, rest[1] / n
    t_var, p_var = rest[2] / n - t_mean ** 2, rest[3] / n - p_mean ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        if concordance:  # mean((t - p̄)(p - p̄)) = E[t·p] - p̄·t̄
            norm = t_var + p_var + np.square(t_mean - p_mean)
            return 2.0 * (rest[4] / n - p_mean * t_mean) / (norm + _eps())
        return (rest[4] / n - t_mean * p_mean) / np.sqrt(np.maximum(t_var, 0.0) * np.maximum(p_var, 0.0))


class _Correlation(MeanMetricWrapper):
    """The mean of a correlation along `axis` (see the module docstring for the two modes)."""

    direction = "up"
    _concordance = False

    def __init__(self, fn, name, dtype, axis):
        super().__init__(fn, name=name, dtype=dtype, axis=axis)
        self.axis = axis

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        t, p, ax = _prepare(y_true, y_pred, self.axis)
        if 0 not in ax:
            return mean_stats(self._fn(t, p, axis=ax), sample_weight)
        if sample_weight is not None:
            raise ArgumentError(
                f"{type(self).__name__} '{self.name}' with axis={self.axis!r} computes one value per batch "
                f"across its samples, so per-sample weights have nothing to weigh (Keras 3 fails on them too). "
                f"Drop sample_weight, or leave the batch axis out of `axis` (e.g. axis=-1, one value per sample).")
        t, p = np.broadcast_arrays(t, p)
        return _moments(t, p, ax)

    def merge_stats(self, stats) -> None:
        stats = np.asarray(stats, np.float64)
        if stats.shape != self._state.shape:  # one whole batch's moments (all shards summed)
            stats = mean_stats(_from_moments(stats, self._concordance))
        super().merge_stats(stats)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "axis": self.axis}


class PearsonCorrelation(_Correlation):
    """The mean Pearson correlation coefficient between labels and predictions along `axis`.

    Args:
        name, dtype: as `Metric`.
        axis: int or tuple of ints (-1: one coefficient per sample, averaged).

    Example:
        >>> model.compile(optimizer="sgd", loss="mse", metrics=[keras.metrics.PearsonCorrelation()])
    """

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        super().__init__(pearson_correlation, name, dtype, axis)


class ConcordanceCorrelation(_Correlation):
    """The mean concordance correlation coefficient (agreement: correlation and closeness to y = x)
    between labels and predictions along `axis`. Args: name, dtype, axis as `PearsonCorrelation`.

    Example:
        >>> model.compile(optimizer="sgd", loss="mse", metrics=["concordance_correlation"])
    """

    _concordance = True

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        super().__init__(concordance_correlation, name, dtype, axis)
