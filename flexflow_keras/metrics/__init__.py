"""`keras.metrics`: additive metrics (see `metrics/base.py` for the protocol), `get`, and
`resolve_metric`, which turns compile()'s metric identifiers into metric objects as Keras 3's
compile_utils does.

Contract with the training loop: every metric has ``batch_stats(y_true, y_pred, sample_weight=None)``
(NumPy partial sums for one shard), ``merge_stats(stats)``, ``result()``, ``reset_state()`` and Keras'
``update_state``; ``metric.name`` is its key in the logs (the loop prefixes ``<output>_`` for models with
several outputs, as Keras 3 does); ``metric.direction`` ("up"/"down") tells EarlyStopping's mode="auto"
which way is better.
"""

from __future__ import annotations

import inspect
import re

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses import (  # Keras exposes the loss functions as metrics too
    binary_crossentropy,
    binary_focal_crossentropy,
    categorical_crossentropy,
    categorical_focal_crossentropy,
    categorical_hinge,
    hinge,
    huber,
    kl_divergence,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from flexflow_keras.metrics import functions
from flexflow_keras.metrics.accuracy import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
)
from flexflow_keras.metrics.base import Mean, MeanMetricWrapper, Metric, Sum
from flexflow_keras.metrics.confusion import (
    AUC,
    FalseNegatives,
    FalsePositives,
    Precision,
    Recall,
    TrueNegatives,
    TruePositives,
)
from flexflow_keras.metrics.confusion_at import (
    PrecisionAtRecall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
)
from flexflow_keras.metrics.correlation import (
    ConcordanceCorrelation,
    PearsonCorrelation,
    concordance_correlation,
    pearson_correlation,
)
from flexflow_keras.metrics.extra import (
    BinaryIoU,
    CategoricalHinge,
    CosineSimilarity,
    F1Score,
    FBetaScore,
    Hinge,
    IoU,
    KLDivergence,
    LogCoshError,
    MeanAbsolutePercentageError,
    MeanIoU,
    MeanSquaredLogarithmicError,
    OneHotIoU,
    OneHotMeanIoU,
    Poisson,
    SquaredHinge,
)
from flexflow_keras.metrics.functions import (
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from flexflow_keras.metrics.r2_score import R2Score
from flexflow_keras.metrics.regression import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    MeanAbsoluteError,
    MeanSquaredError,
    RootMeanSquaredError,
    SparseCategoricalCrossentropy,
)
from flexflow_keras.utils.naming import to_snake_case

mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

_CLASSES = [Mean, Sum, MeanMetricWrapper, Accuracy, BinaryAccuracy, CategoricalAccuracy,
            SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, MeanSquaredError,
            MeanAbsoluteError, RootMeanSquaredError, CategoricalCrossentropy, SparseCategoricalCrossentropy,
            BinaryCrossentropy, Precision, Recall, AUC, TruePositives, FalsePositives, TrueNegatives,
            FalseNegatives, BinaryIoU, CategoricalHinge, CosineSimilarity, F1Score, FBetaScore, Hinge, IoU,
            KLDivergence, LogCoshError, MeanAbsolutePercentageError, MeanIoU, MeanSquaredLogarithmicError, OneHotIoU,
            OneHotMeanIoU, Poisson, SquaredHinge, R2Score, PearsonCorrelation, ConcordanceCorrelation,
            PrecisionAtRecall, RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity]


def _keras_snake(name: str) -> str:
    """Keras' to_snake_case ("TopKCategoricalAccuracy" -> "top_k_categorical_accuracy", "AUC" -> "auc")."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


_NAMES: dict[str, type[Metric]] = {}
for _cls in _CLASSES:
    _NAMES[_cls.__name__] = _cls
    _NAMES[_keras_snake(_cls.__name__)] = _cls
_NAMES.update({"mse": MeanSquaredError, "MSE": MeanSquaredError, "mae": MeanAbsoluteError,
               "MAE": MeanAbsoluteError, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
               "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
               "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError, "kld": KLDivergence,
               "KLD": KLDivergence, "kl_divergence": KLDivergence, "logcosh": LogCoshError,
               "log_cosh": LogCoshError})
# classes that need constructor arguments cannot be named by a string alone: an example of each
_NEED_ARGS = {IoU: "num_classes=3, target_class_ids=[0]", MeanIoU: "num_classes=3", OneHotIoU:
              "num_classes=3, target_class_ids=[0]", OneHotMeanIoU: "num_classes=3", PrecisionAtRecall: "recall=0.8",
              RecallAtPrecision: "precision=0.8", SensitivityAtSpecificity: "specificity=0.8",
              SpecificityAtSensitivity: "sensitivity=0.8"}
_NO_ARGS_NEEDED = {name for name, cls in _NAMES.items() if cls not in (MeanMetricWrapper,) and cls not in _NEED_ARGS}


def _unknown(identifier) -> ValueError:
    valid = sorted(n for n in _NO_ARGS_NEEDED if n.islower() or n.isupper())
    return ValueError(f"Could not interpret metric identifier {identifier!r}. Valid metrics: 'accuracy' (or "
                      f"'acc', chosen from the labels and outputs), {', '.join(valid)}; or a Metric object, or "
                      f"a function metric(y_true, y_pred) returning per-sample values.")


def _wrap_callable(fn) -> Metric:
    from flexflow_keras.losses import Loss

    if isinstance(fn, Loss):
        return MeanMetricWrapper(fn.per_sample, name=fn.name)
    # Keras 3 names a function metric by its name in snake case: myMAE logs as my_mae, a lambda as lambda
    return MeanMetricWrapper(fn, name=to_snake_case(getattr(fn, "__name__", "metric")))


def get(identifier):
    """A metric object from a name, a config dict, a Metric class or object, or a function.

    Raises:
        ValueError: for an unknown name, listing the valid ones.
    """
    if identifier is None:
        return None
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _NAMES.get(identifier)
        if cls is None or cls is MeanMetricWrapper:
            raise _unknown(identifier)
        if cls in _NEED_ARGS:
            raise ArgumentError(f"Metric {identifier!r} needs constructor arguments; pass an object, e.g. "
                             f"metrics=[keras.metrics.{cls.__name__}({_NEED_ARGS[cls]})].")
        return cls()
    if inspect.isclass(identifier) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return _wrap_callable(identifier)
    raise _unknown(identifier)


def serialize(metric: Metric) -> dict:
    """Keras 3's serialized form of a metric object."""
    return {"module": "keras.metrics", "class_name": type(metric).__name__, "config": metric.get_config(),
            "registered_name": None}


def deserialize(config: dict, custom_objects: dict | None = None) -> Metric:
    """Rebuild a metric from `serialize`'s dict (or ``{"class_name", "config"}``)."""
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _NAMES.get(name)
    if cls is None:
        raise _unknown(name)
    return cls.from_config(dict(config.get("config", {})))


def _label_shape(loss, y_pred_shape):
    """The label shape a loss implies when no labels are known (synthetic data)."""
    kind = getattr(loss, "label_kind", None)
    if kind == "sparse":
        return tuple(y_pred_shape[:-1])
    return tuple(y_pred_shape)


def _is_binary_or_sparse(y_true_shape, y_pred_shape):
    """Keras' compile_utils.is_binary_or_sparse_categorical."""
    is_binary = y_pred_shape[-1] == 1
    is_sparse = len(y_true_shape) < len(y_pred_shape) or (y_true_shape[-1] == 1 and y_pred_shape[-1] > 1)
    return is_binary, is_sparse


def resolve_metric(identifier, loss=None, y_true_shape=None, y_pred_shape=None) -> Metric:
    """The metric object compile(metrics=[identifier]) uses for one output, named as Keras 3 names it.

    'accuracy'/'acc' become BinaryAccuracy (one output unit), SparseCategoricalAccuracy (labels of lower
    rank, or a last dim of 1 against several units) or CategoricalAccuracy, exactly Keras 3's rule on
    the label and output shapes, named as written ('acc' stays 'acc'). Without label shapes (synthetic
    data) the shape the loss implies is used. 'crossentropy'/'ce' resolve the same way to the matching
    crossentropy metric (Keras 2's convenience), with the loss' from_logits. Other strings name the
    metric after the string ('mse' logs as 'mse'); objects keep their name; functions are named after
    the function.

    Args:
        identifier: a string, Metric, class, dict or function.
        loss: the output's loss object (used when label shapes are unknown, and for from_logits).
        y_true_shape: the labels' shape (batch dim may be None), or None.
        y_pred_shape: the output's shape.
    """
    if identifier is None:
        raise ValueError("Expected a metric, received None.")
    key = str(identifier).lower() if isinstance(identifier, str) else None
    if key in ("accuracy", "acc", "crossentropy", "ce"):
        if y_pred_shape is None:
            raise ValueError(f"metric {identifier!r} needs the model output's shape to choose its variant.")
        y_true_shape = tuple(y_true_shape) if y_true_shape is not None else _label_shape(loss, y_pred_shape)
        is_binary, is_sparse = _is_binary_or_sparse(y_true_shape, tuple(y_pred_shape))
        if key in ("accuracy", "acc"):
            cls = BinaryAccuracy if is_binary else SparseCategoricalAccuracy if is_sparse else CategoricalAccuracy
            return cls(name=identifier)
        logits = bool(getattr(loss, "from_logits", False))
        cls = BinaryCrossentropy if is_binary else SparseCategoricalCrossentropy if is_sparse else \
            CategoricalCrossentropy
        return cls(name=identifier, from_logits=logits)
    metric = get(identifier)
    if isinstance(identifier, str):
        metric.name = identifier
    return metric


__all__ = [c.__name__ for c in _CLASSES] + [
    "Metric", "functions", "get", "resolve_metric", "serialize", "deserialize", "accuracy", "binary_accuracy",
    "categorical_accuracy", "sparse_categorical_accuracy", "top_k_categorical_accuracy",
    "sparse_top_k_categorical_accuracy", "mean_squared_error", "mean_absolute_error", "categorical_crossentropy",
    "sparse_categorical_crossentropy", "binary_crossentropy", "mse", "mae", "binary_focal_crossentropy",
    "categorical_focal_crossentropy", "categorical_hinge", "hinge", "squared_hinge", "huber", "kl_divergence",
    "log_cosh", "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "poisson",
    "pearson_correlation", "concordance_correlation"]
