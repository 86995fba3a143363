"""Confusion-matrix metrics (Keras 3): TruePositives/FalsePositives/TrueNegatives/FalseNegatives,
Precision, Recall and AUC. The state is counts per threshold, which add across shards.

A prediction is positive at threshold t when ``y_pred > t``; labels are positive when non-zero.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.losses import _align
from flexflow_keras.metrics.base import Metric

_NEG_INF = -1e10


def _epsilon() -> float:
    from flexflow_keras.losses import _epsilon as eps

    return eps()


def _filter_top_k(p: np.ndarray, k: int) -> np.ndarray:
    """Keep the k largest values on the last axis, set the rest to a large negative number."""
    order = np.argsort(-p, axis=-1, kind="stable")[..., :k]
    out = np.full_like(p, _NEG_INF)
    np.put_along_axis(out, order, np.take_along_axis(p, order, axis=-1), axis=-1)
    return out


def confusion_counts(y_true, y_pred, thresholds, sample_weight=None, top_k=None, class_id=None) -> np.ndarray:
    """(4, T) array of weighted tp, fp, tn, fn for each threshold.

    Args:
        y_true: labels (non-zero = positive).
        y_pred: scores.
        thresholds: increasing thresholds.
        sample_weight: per-sample (or broadcastable) weights.
        top_k: only the k highest scores of the last axis can be positive.
        class_id: restrict to one class (column of the last axis).
    """
    t = np.asarray(y_true, np.float64)
    p = np.asarray(y_pred, np.float64)
    t, p = _align(t, p)
    if top_k is not None:
        p = _filter_top_k(p, top_k)
    if class_id is not None:
        t, p = t[..., class_id], p[..., class_id]
    w = np.ones_like(p)
    if sample_weight is not None:
        sw = np.asarray(sample_weight, np.float64)
        while sw.ndim < p.ndim:
            sw = sw[..., None]
        w = np.broadcast_to(sw, p.shape)
    th = np.asarray(thresholds, np.float64)
    # idx = how many thresholds lie strictly below the score: the score is positive at thresholds[:idx].
    idx = np.searchsorted(th, p.reshape(-1), side="left")
    pos = t.reshape(-1) != 0
    wf = w.reshape(-1)
    nt = len(th)
    pos_hist = np.bincount(idx[pos], weights=wf[pos], minlength=nt + 1)
    neg_hist = np.bincount(idx[~pos], weights=wf[~pos], minlength=nt + 1)
    # predicted positive at threshold j <=> idx > j: sum of histogram bins j+1..nt
    tp = np.cumsum(pos_hist[::-1])[::-1][1:]
    fp = np.cumsum(neg_hist[::-1])[::-1][1:]
    fn = pos_hist.sum() - tp
    tn = neg_hist.sum() - fp
    return np.stack([tp, fp, tn, fn])


class _ConfusionMetric(Metric):
    """Counts at `thresholds` (default 0.5, or no threshold with `top_k`)."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        default = 0.5 if top_k is None else _NEG_INF
        th = default if thresholds is None else thresholds
        self._scalar = np.ndim(th) == 0
        self.thresholds = float(th) if self._scalar else [float(x) for x in th]
        self._th = np.atleast_1d(np.asarray(th, np.float64))
        if np.any(np.diff(self._th) < 0):
            order = np.argsort(self._th)
            self._order = np.argsort(order)
            self._th = self._th[order]
        else:
            self._order = None
        self.top_k = top_k
        self.class_id = class_id
        super().__init__(name=name, dtype=dtype)

    def _initial_state(self):
        return np.zeros((4, len(self._th)))

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        return confusion_counts(y_true, y_pred, self._th, sample_weight, self.top_k, self.class_id)

    def _out(self, values: np.ndarray):
        if self._order is not None:
            values = values[self._order]
        return float(values[0]) if self._scalar else [float(v) for v in values]

    def get_config(self):
        config = super().get_config()
        config.update({"thresholds": self.thresholds, "top_k": self.top_k, "class_id": self.class_id})
        return config


def _div(a, b):
    return np.divide(a, b, out=np.zeros_like(a), where=b != 0)


class Precision(_ConfusionMetric):
    """tp / (tp + fp). Args: thresholds (0.5), top_k, class_id, name, dtype."""

    direction = "up"

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        tp, fp = self._state[0], self._state[1]
        return self._out(_div(tp, tp + fp))


class Recall(_ConfusionMetric):
    """tp / (tp + fn). Args: thresholds (0.5), top_k, class_id, name, dtype."""

    direction = "up"

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        tp, fn = self._state[0], self._state[3]
        return self._out(_div(tp, tp + fn))


def _counter(index: int, cls_name: str, default_name: str):
    class Counter(_ConfusionMetric):
        __doc__ = f"Weighted count of {default_name.replace('_', ' ')} at thresholds (0.5). Args: thresholds, name, dtype."

        def __init__(self, thresholds=None, name=None, dtype=None):  # (None: `default_name`, numbered)
            super().__init__(thresholds, None, None, name, dtype)

        def result(self):
            return self._out(self._state[index])

        def get_config(self):
            return {"thresholds": self.thresholds, "name": self.name, "dtype": self.dtype}

    Counter.__name__ = Counter.__qualname__ = cls_name
    return Counter


TruePositives = _counter(0, "TruePositives", "true_positives")
FalsePositives = _counter(1, "FalsePositives", "false_positives")
TrueNegatives = _counter(2, "TrueNegatives", "true_negatives")
FalseNegatives = _counter(3, "FalseNegatives", "false_negatives")


class AUC(Metric):
    """Area under the ROC or PR curve from counts at `num_thresholds` thresholds (Keras 3's estimate).

    Args:
        num_thresholds: thresholds evenly spaced in [0, 1] (default 200), ignored with `thresholds`.
        curve: "ROC" or "PR".
        summation_method: "interpolation", "minoring" or "majoring".
        name, dtype: as `Metric`.
        thresholds: explicit thresholds in (0, 1).
        multi_label: one curve per label (column of 2-D y_pred), their AUCs averaged (weighted by
            `label_weights` when given); False flattens all labels into one curve.
        num_labels: the number of labels with multi_label (else found from the first batch).
        label_weights: per-label weights: of the labels' AUCs with multi_label, of each label's counts
            otherwise.
        from_logits: apply a sigmoid to y_pred first.
    """

    direction = "up"

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        if num_labels is not None and not multi_label:
            raise ValueError("AUC: `num_labels` is needed only when `multi_label` is True.")
        if curve.upper() not in ("ROC", "PR"):
            raise ValueError(f"AUC expects curve 'ROC' or 'PR', received curve={curve!r}.")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError("AUC expects summation_method 'interpolation', 'minoring' or 'majoring', received "
                             f"{summation_method!r}.")
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            self.num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError(f"AUC expects num_thresholds > 1, received num_thresholds={num_thresholds}.")
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        eps = _epsilon()
        self._thresholds = np.array([0.0 - eps] + inner + [1.0 + eps])
        # Keras 3 counts evenly spaced thresholds by buckets of predictions clipped to [0, 1] (metrics_utils'
        # optimized path): a logit of -0.5 is negative at no threshold, not below the lowest one
        grid = np.array([0.0] + inner + [1.0])
        self._clips = len(grid) >= 3 and bool(np.allclose(grid, np.arange(len(grid), dtype=np.float32) / (len(grid) - 1),
                                                          atol=eps))
        self.curve = curve.upper()
        self.summation_method = summation_method
        self.from_logits = from_logits
        self.multi_label = bool(multi_label)
        self.num_labels = None if num_labels is None else int(num_labels)
        self.label_weights = None if label_weights is None else np.asarray(label_weights, np.float64).reshape(-1)
        self._explicit = thresholds is not None
        super().__init__(name=name, dtype=dtype)

    @property
    def thresholds(self) -> list[float]:
        return list(self._thresholds)

    def _initial_state(self):
        if getattr(self, "multi_label", False):
            return np.zeros((4, self.num_thresholds, self.num_labels or 0))
        return np.zeros((4, self.num_thresholds))

    def merge_stats(self, stats) -> None:
        stats = np.asarray(stats, np.float64)
        if self.multi_label and self._state.size == 0:  # the number of labels comes with the first batch
            self._state = np.zeros_like(stats)
        super().merge_stats(stats)

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        p = np.asarray(y_pred, np.float64)
        if self.from_logits:
            p = 1.0 / (1.0 + np.exp(-p))
        if self._clips:
            p = np.clip(p, 0.0, 1.0)
        if not self.multi_label:
            if self.label_weights is None:
                return self._counts(y_true, p, sample_weight)
            t = np.asarray(y_true, np.float64)
            w = np.ones(p.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
            w = w.reshape(w.shape + (1,) * (p.ndim - w.ndim)) * self.label_weights
            return self._counts(t, p, np.broadcast_to(w, p.shape))
        t = np.asarray(y_true, np.float64)
        if p.ndim != 2:
            raise ValueError(f"AUC(multi_label=True) expects y_pred of rank 2 (batch, labels), received shape "
                             f"{p.shape}.")
        t = t.reshape(p.shape)
        return np.stack([self._counts(t[:, j], p[:, j], sample_weight) for j in range(p.shape[1])], axis=-1)

    def _counts(self, t, p, w) -> np.ndarray:
        """(4, T) counts: evenly spaced thresholds by Keras 3's optimized bucketing (the float32 bucket
        ceil(s·(T-1)) - 1, floored at 0 for the -epsilon threshold), which a score on a threshold i/(T-1)
        falls in differently from a float64 comparison with it; other thresholds compared one by one."""
        if not self._clips:
            return confusion_counts(t, p, self._thresholds, w)
        from flexflow_keras.metrics.confusion_at import bucket_counts

        return bucket_counts(t, p, self.num_thresholds, w, floor_at_zero=True)

    def _interpolate_pr(self, tp, fp, fn) -> float:
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = _div(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _div(p[:-1], np.maximum(p[1:], 0)), 1.0)
        inc = _div(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0))
        return float(np.sum(inc))

    def result(self) -> float:
        if not self.multi_label:
            return self._auc(*self._state)
        if self._state.size == 0:
            return 0.0
        per_label = np.array([self._auc(*self._state[..., j]) for j in range(self._state.shape[-1])])
        if self.label_weights is None:
            return float(np.mean(per_label))
        return float(np.sum(per_label * self.label_weights) / np.sum(self.label_weights))

    def _auc(self, tp, fp, tn, fn) -> float:
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr(tp, fp, fn)
        recall = _div(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _div(fp, fp + tn), recall
        else:
            x, y = recall, _div(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return float(np.sum((x[:-1] - x[1:]) * heights))

    def get_config(self):
        config = {"num_thresholds": self.num_thresholds, "curve": self.curve,
                  "summation_method": self.summation_method, "name": self.name, "dtype": self.dtype,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
                  "from_logits": self.from_logits}
        if self._explicit:
            config["thresholds"] = list(self._thresholds[1:-1])
        return config
