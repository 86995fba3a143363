"""Per-sample metric functions on NumPy arrays with Keras 3's shape rules (`keras.metrics.*_accuracy`).

Each returns a float32 array of per-sample (or per-element) values that `MeanMetricWrapper` averages.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.losses import _align


def accuracy(y_true, y_pred):
    """1.0 where y_pred equals y_true exactly (ranks aligned as Keras)."""
    t, p = _align(np.asarray(y_true), np.asarray(y_pred))
    return (t.astype(np.float64) == p.astype(np.float64)).astype(np.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where ``y_pred > threshold`` matches the binary label."""
    t, p = _align(np.asarray(y_true), np.asarray(y_pred))
    return (t.astype(np.float64) == (p > threshold).astype(np.float64)).astype(np.float32)


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax of the one-hot label equals argmax of the prediction."""
    t = np.argmax(np.asarray(y_true), axis=-1)
    p = np.argmax(np.asarray(y_pred), axis=-1)
    return (t == p).astype(np.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label equals argmax of the prediction."""
    t = np.asarray(y_true)
    p = np.asarray(y_pred)
    if t.ndim == p.ndim and t.shape[-1] == 1:
        t = t[..., 0]
    matches = (t.astype(np.float64) == np.argmax(p, axis=-1).astype(np.float64)).astype(np.float32)
    if matches.ndim > 1 and matches.shape[-1] == 1:
        matches = matches[..., 0]
    return matches


def _in_top_k(targets: np.ndarray, predictions: np.ndarray, k: int) -> np.ndarray:
    """TF's in_top_k: the target's score is beaten by fewer than k classes (ties count as in)."""
    preds = predictions.reshape(-1, predictions.shape[-1]).astype(np.float64)
    targets = targets.reshape(-1).astype(np.int64)
    target_score = np.take_along_axis(preds, targets[:, None], axis=1)
    greater = np.sum(preds > target_score, axis=1)
    return (greater < k) & np.isfinite(target_score[:, 0])


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the one-hot label's class is among the k highest predictions."""
    t = np.argmax(np.asarray(y_true), axis=-1)
    p = np.asarray(y_pred)
    return _in_top_k(t, p, k).astype(np.float32).reshape(t.shape)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1.0 where the integer label is among the k highest predictions (or the first k sorted ids)."""
    t = np.asarray(y_true)
    p = np.asarray(y_pred)
    if t.ndim == p.ndim and t.shape[-1] == 1:
        t = t[..., 0]
    if from_sorted_ids:
        flat = p.reshape(-1, p.shape[-1])[:, :k]
        return np.any(flat == t.reshape(-1, 1), axis=1).astype(np.float32).reshape(t.shape)
    return _in_top_k(t, p, k).astype(np.float32).reshape(t.shape)
