"""Keras 3 metrics beyond accuracy, crossentropy and the confusion counts: the regression and
probabilistic means (`CosineSimilarity`, `LogCoshError`, `KLDivergence`, `Poisson`,
`MeanAbsolutePercentageError`, `MeanSquaredLogarithmicError`), the hinge family (`Hinge`, `SquaredHinge`,
`CategoricalHinge`), `FBetaScore`/`F1Score` and the IoU family (`IoU`, `MeanIoU`, `BinaryIoU`,
`OneHotIoU`, `OneHotMeanIoU`). All keep additive float64 states (see metrics/base.py).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.losses import _align
from flexflow_keras.metrics.base import MeanMetricWrapper, Metric


def _eps() -> float:
    from flexflow_keras import backend

    return float(backend.epsilon())


def _f(y_true, y_pred):
    y_pred = np.asarray(y_pred, np.float64)
    return np.asarray(y_true, np.float64), y_pred


def _l2_normalize(x, axis):
    inv = 1.0 / np.sqrt(np.sum(np.square(x), axis=axis, keepdims=True))
    return x * np.minimum(inv, 1.0 / _eps())


def cosine_similarity(y_true, y_pred, axis=-1):
    """Per-sample cosine of the angle between `y_true` and `y_pred` along `axis`."""
    y_true, y_pred = _align(*_f(y_true, y_pred))
    return np.sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


def log_cosh(y_true, y_pred):
    """Per-sample mean of log(cosh(y_pred - y_true)) over the last axis."""
    y_true, y_pred = _align(*_f(y_true, y_pred))  # Keras squeezes or expands to the same rank
    x = y_pred - y_true
    return np.mean(x + np.logaddexp(0.0, -2.0 * x) - np.log(2.0), axis=-1)


def kl_divergence(y_true, y_pred):
    """Per-sample sum of y_true * log(y_true / y_pred) (both clipped to [epsilon, 1])."""
    y_true, y_pred = _f(y_true, y_pred)
    y_true, y_pred = np.clip(y_true, _eps(), 1.0), np.clip(y_pred, _eps(), 1.0)
    return np.sum(y_true * np.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """Per-sample mean of y_pred - y_true * log(y_pred + epsilon)."""
    y_true, y_pred = _f(y_true, y_pred)
    return np.mean(y_pred - y_true * np.log(y_pred + _eps()), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """Per-sample 100 * mean(|y_true - y_pred| / max(|y_true|, epsilon))."""
    y_true, y_pred = _align(*_f(y_true, y_pred))  # Keras squeezes or expands to the same rank
    return 100.0 * np.mean(np.abs((y_true - y_pred) / np.maximum(np.abs(y_true), _eps())), axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """Per-sample mean of (log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))^2."""
    y_true, y_pred = _align(*_f(y_true, y_pred))  # Keras squeezes or expands to the same rank
    d = np.log(np.maximum(y_pred, _eps()) + 1.0) - np.log(np.maximum(y_true, _eps()) + 1.0)
    return np.mean(np.square(d), axis=-1)


def _hinge_labels(y_true):
    """Labels in {0, 1} become {-1, 1} (Keras' convert_binary_labels_to_hinge)."""
    if np.all((y_true == 0) | (y_true == 1)):
        return 2.0 * y_true - 1.0
    return y_true


def hinge(y_true, y_pred):
    """Per-sample mean of max(1 - y_true * y_pred, 0) (labels -1/1 or 0/1)."""
    y_true, y_pred = _f(y_true, y_pred)
    return np.mean(np.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """Per-sample mean of max(1 - y_true * y_pred, 0)^2 (labels -1/1 or 0/1)."""
    y_true, y_pred = _f(y_true, y_pred)
    return np.mean(np.square(np.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """Per-sample max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)."""
    y_true, y_pred = _f(y_true, y_pred)
    pos = np.sum(y_true * y_pred, axis=-1)
    neg = np.max((1.0 - y_true) * y_pred, axis=-1)
    return np.maximum(neg - pos + 1.0, 0.0)


def _mean_metric(cls_name: str, fn, default_name: str, direction: str, doc: str):
    def __init__(self, name=default_name, dtype=None):
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    return type(cls_name, (MeanMetricWrapper,), {"__init__": __init__, "get_config": get_config,
                                                 "direction": direction, "__doc__": doc,
                                                 "__module__": __name__})


LogCoshError = _mean_metric("LogCoshError", log_cosh, "logcosh", "down",
                            "Mean of log(cosh(error)) (Keras' `LogCoshError`). Args: name, dtype.")
KLDivergence = _mean_metric("KLDivergence", kl_divergence, "kl_divergence", "down",
                            "Mean Kullback-Leibler divergence (Keras' `KLDivergence`). Args: name, dtype.")
Poisson = _mean_metric("Poisson", poisson, "poisson", "down",
                       "Mean Poisson deviance term (Keras' `Poisson`). Args: name, dtype.")
Hinge = _mean_metric("Hinge", hinge, "hinge", "down", "Mean hinge loss (Keras' `Hinge`). Args: name, dtype.")
SquaredHinge = _mean_metric("SquaredHinge", squared_hinge, "squared_hinge", "down",
                            "Mean squared hinge loss (Keras' `SquaredHinge`). Args: name, dtype.")
CategoricalHinge = _mean_metric("CategoricalHinge", categorical_hinge, "categorical_hinge", "down",
                                "Mean categorical hinge loss (Keras' `CategoricalHinge`). Args: name, dtype.")
MeanAbsolutePercentageError = _mean_metric(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error, "mean_absolute_percentage_error", "down",
    "Mean absolute percentage error (Keras' `MeanAbsolutePercentageError`). Args: name, dtype.")
MeanSquaredLogarithmicError = _mean_metric(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error, "mean_squared_logarithmic_error", "down",
    "Mean squared logarithmic error (Keras' `MeanSquaredLogarithmicError`). Args: name, dtype.")


class CosineSimilarity(MeanMetricWrapper):
    """Mean cosine similarity between labels and predictions along `axis` (Keras' `CosineSimilarity`).

    Args:
        name, dtype: as `Metric`.
        axis: the axis the vectors lie along (default -1).
    """

    direction = "up"

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)
        self.axis = axis

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "axis": self.axis}


class _Growable(Metric):
    """A metric whose state size is known from the first batch (the number of classes)."""

    def _initial_state(self) -> np.ndarray:
        return np.zeros(0, np.float64)

    def merge_stats(self, stats) -> None:
        stats = np.asarray(stats, np.float64)
        if self._state.size == 0:
            self._state = np.zeros_like(stats)
        super().merge_stats(stats)


class FBetaScore(_Growable):
    """F-beta score per class, or averaged (Keras 3's `FBetaScore`).

    Args:
        average: None (one score per class), "micro", "macro" or "weighted".
        beta: weight of recall against precision (> 0).
        threshold: predictions above it count as positive; None: the largest prediction of each sample.
        name, dtype: as `Metric`.
    """

    direction = "up"

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"{type(self).__name__}: average must be None, 'micro', 'macro' or 'weighted', "
                             f"received average={average!r}.")
        if not isinstance(beta, (int, float)) or beta <= 0:
            raise ValueError(f"{type(self).__name__}: beta must be a float > 0, received beta={beta!r}.")
        if threshold is not None and (not isinstance(threshold, (int, float)) or not 0 < threshold <= 1):
            raise ValueError(f"{type(self).__name__}: threshold must be a float in (0, 1] or None, received "
                             f"threshold={threshold!r}.")
        self.average, self.beta, self.threshold = average, float(beta), threshold
        super().__init__(name=name, dtype=dtype)

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        y_true, y_pred = _f(y_true, y_pred)
        if y_true.ndim != 2 or y_pred.ndim != 2:
            raise ValueError(f"{type(self).__name__} expects 2D inputs (batch_size, output_dim); received "
                             f"y_true.shape={y_true.shape} and y_pred.shape={y_pred.shape}.")
        if self.threshold is None:
            pred = (y_pred >= y_pred.max(axis=-1, keepdims=True)) & (np.abs(y_pred) > 1e-9)
        else:
            pred = y_pred > self.threshold
        pred = pred.astype(np.float64)
        w = np.ones((len(y_true), 1)) if sample_weight is None else \
            np.asarray(sample_weight, np.float64).reshape(len(y_true), -1)[:, :1]
        parts = [pred * y_true, pred * (1 - y_true), (1 - pred) * y_true, y_true]
        return np.concatenate([np.sum(p * w, axis=0) for p in parts])

    def result(self):
        if self._state.size == 0:
            return 0.0
        tp, fp, fn, support = self._state.reshape(4, -1)
        if self.average == "micro":
            tp, fp, fn, support = tp.sum(), fp.sum(), fn.sum(), support.sum()
        eps = _eps()
        precision = tp / (tp + fp + eps)
        recall = tp / (tp + fn + eps)
        b2 = self.beta ** 2
        score = precision * recall / (b2 * precision + recall + eps) * (1 + b2)
        if self.average == "weighted":
            return float(np.sum(score * support / (np.sum(support) + eps)))
        if self.average is not None:
            return float(np.mean(score))
        return score.astype(np.float32)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """F1 score (`FBetaScore` with beta=1). Args: average, threshold, name, dtype as `FBetaScore`."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config


class IoU(Metric):
    """Intersection over union of the `target_class_ids`, averaged (Keras 3's `IoU`).

    Args:
        num_classes: the number of classes (the confusion matrix is num_classes x num_classes).
        target_class_ids: the classes whose IoU is averaged.
        name, dtype: as `Metric`.
        ignore_class: a label id left out of the counts (e.g. a "void" class), or None.
        sparse_y_true, sparse_y_pred: False when labels / predictions are one-hot or scores (argmax
            over `axis` first).
        axis: the class axis for the argmax.

    Sample weights are summed as floats; Keras keeps the confusion matrix in integers, so its result
    agrees for integer weights only.
    """

    direction = "up"

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        self.num_classes = int(num_classes)
        ids = [int(t) for t in target_class_ids]
        if any(t < 0 or t >= self.num_classes for t in ids):
            raise ValueError(f"{type(self).__name__}: target_class_ids {ids} must lie in [0, {self.num_classes}).")
        self.target_class_ids = ids
        self.ignore_class, self.sparse_y_true, self.sparse_y_pred, self.axis = \
            ignore_class, bool(sparse_y_true), bool(sparse_y_pred), axis
        super().__init__(name=name, dtype=dtype)

    def _initial_state(self) -> np.ndarray:
        return np.zeros(self.num_classes * self.num_classes, np.float64)

    def _predicted(self, y_pred):
        return np.argmax(y_pred, axis=self.axis) if not self.sparse_y_pred else y_pred

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        y_true = np.asarray(y_true)
        if not self.sparse_y_true:
            y_true = np.argmax(y_true, axis=self.axis)
        t = np.asarray(y_true, np.float64).reshape(-1).astype(np.int64)
        p = np.asarray(self._predicted(np.asarray(y_pred)), np.float64).reshape(-1).astype(np.int64)
        if sample_weight is None:
            w = np.ones(len(t))
        else:  # one weight per element, or per sample (spread over the sample's elements)
            w = np.asarray(sample_weight, np.float64).reshape(-1)
            if w.size != t.size:
                w = np.repeat(w, t.size // max(w.size, 1)) if w.size and t.size % w.size == 0 else \
                    np.broadcast_to(w, t.shape)
        keep = (t >= 0) & (t < self.num_classes) & (p >= 0) & (p < self.num_classes)
        if self.ignore_class is not None:
            keep &= t != int(self.ignore_class)
        cm = np.zeros((self.num_classes, self.num_classes), np.float64)
        np.add.at(cm, (t[keep], p[keep]), w[keep])
        return cm.reshape(-1)

    def result(self) -> float:
        cm = self._state.reshape(self.num_classes, self.num_classes)
        tp = np.diag(cm)
        denom = (cm.sum(axis=0) + cm.sum(axis=1) - tp)[self.target_class_ids]
        tp = tp[self.target_class_ids]
        valid = denom > 1e-9
        iou = np.where(valid, tp / (denom + _eps()), 0.0)
        return float(np.sum(iou) / (np.sum(valid) + _eps()))

    def get_config(self):
        return {"num_classes": self.num_classes, "target_class_ids": list(self.target_class_ids),
                "name": self.name, "dtype": self.dtype, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class MeanIoU(IoU):
    """IoU averaged over all `num_classes` classes (Keras 3's `MeanIoU`).

    Args:
        num_classes, name, dtype, ignore_class, sparse_y_true, sparse_y_pred, axis: as `IoU`.
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(int(num_classes))), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred,
                         axis=axis)

    def get_config(self):
        config = super().get_config()
        del config["target_class_ids"]
        return config


class BinaryIoU(IoU):
    """IoU of binary predictions thresholded at `threshold` (Keras 3's `BinaryIoU`).

    Args:
        target_class_ids: which of the classes 0 and 1 are averaged.
        threshold: predictions >= threshold are class 1.
        name, dtype: as `Metric`.
    """

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        self.threshold = float(threshold)
        super().__init__(2, target_class_ids, name=name, dtype=dtype)

    def _predicted(self, y_pred):
        return (np.asarray(y_pred, np.float32) >= self.threshold).astype(np.int64)

    def get_config(self):
        return {"target_class_ids": list(self.target_class_ids), "threshold": self.threshold, "name": self.name,
                "dtype": self.dtype}


class OneHotIoU(IoU):
    """`IoU` for one-hot labels and score predictions (argmax over `axis`). Args: as `IoU`."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        del config["sparse_y_true"]
        return config


class OneHotMeanIoU(MeanIoU):
    """`MeanIoU` for one-hot labels and score predictions (argmax over `axis`). Args: as `MeanIoU`."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        del config["sparse_y_true"]
        return config
