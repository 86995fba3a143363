"""Accuracy metrics (Keras 3): Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy. Each is the mean of a per-sample function."""

from __future__ import annotations

from flexflow_keras.metrics import functions as F
from flexflow_keras.metrics.base import MeanMetricWrapper


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly. Args: name, dtype."""

    direction = "up"

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(F.accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches binary labels. Args: name, dtype, threshold (0.5)."""

    direction = "up"

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(F.binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    """How often argmax of the prediction matches argmax of one-hot labels. Args: name, dtype."""

    direction = "up"

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(F.categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often argmax of the prediction matches integer labels. Args: name, dtype."""

    direction = "up"

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(F.sparse_categorical_accuracy, name=name, dtype=dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label is in the top `k` predictions. Args: k (5), name, dtype."""

    direction = "up"

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(F.top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is in the top `k` predictions. Args: k (5), name, dtype,
    from_sorted_ids (y_pred holds class ids sorted by score)."""

    direction = "up"

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None, from_sorted_ids=False):
        super().__init__(F.sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
        self.k = k
        self.from_sorted_ids = from_sorted_ids
