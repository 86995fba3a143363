"""The hinge losses of Keras (`hinge`, `squared_hinge`, `categorical_hinge` and their classes), composed of
`flexflow_keras.ops` on symbolic tensors (so they train with each op's own backward) and NumPy otherwise.

Formulas (Keras 3), per sample over the last axis:
- hinge: ``mean(max(1 - t·p, 0))``
- squared hinge: ``mean(max(1 - t·p, 0)²)``
  (for both, labels that are all 0 or 1 in the batch are first mapped to -1 / 1, as Keras does)
- categorical hinge: ``max(max((1 - t)·p) - sum(t·p) + 1, 0)``
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.losses_base import _align, _Builtin, _symbolic, result_dtype


def _ops():
    from flexflow_keras import ops

    return ops


def _hinge_terms(y_true, y_pred):
    """``max(1 - t·p, 0)`` with binary {0, 1} labels mapped to {-1, 1}: symbolic or NumPy."""
    if _symbolic(y_true, y_pred):
        ops = _ops()
        binary = ops.all(ops.logical_or(ops.equal(y_true, 0.0), ops.equal(y_true, 1.0)))
        t = ops.where(binary, ops.subtract(ops.multiply(y_true, 2.0), 1.0), y_true)
        return ops.maximum(ops.subtract(1.0, ops.multiply(t, y_pred)), 0.0)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    if np.all((t == 0) | (t == 1)):
        t = 2.0 * t - 1.0
    return np.maximum(1.0 - t * p, 0.0)


def hinge(y_true, y_pred):
    """Per-sample ``mean(max(1 - y_true · y_pred, 0))`` over the last axis (labels -1/1, or 0/1)."""
    terms = _hinge_terms(y_true, y_pred)
    if _symbolic(y_true, y_pred):
        return _ops().mean(terms, axis=-1)
    return np.mean(terms, axis=-1).astype(result_dtype(y_pred))


def squared_hinge(y_true, y_pred):
    """Per-sample ``mean(max(1 - y_true · y_pred, 0)²)`` over the last axis (labels -1/1, or 0/1)."""
    terms = _hinge_terms(y_true, y_pred)
    if _symbolic(y_true, y_pred):
        ops = _ops()
        return ops.mean(ops.square(terms), axis=-1)
    return np.mean(np.square(terms), axis=-1).astype(result_dtype(y_pred))


def categorical_hinge(y_true, y_pred):
    """Per-sample ``max(max((1 - y_true) · y_pred) - sum(y_true · y_pred) + 1, 0)`` (one-hot labels)."""
    if _symbolic(y_true, y_pred):
        ops = _ops()
        pos = ops.sum(ops.multiply(y_true, y_pred), axis=-1)
        neg = ops.max(ops.multiply(ops.subtract(1.0, y_true), y_pred), axis=-1)
        return ops.maximum(ops.add(ops.subtract(neg, pos), 1.0), 0.0)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    pos = np.sum(t * p, axis=-1)
    neg = np.max((1.0 - t) * p, axis=-1)
    return np.maximum(neg - pos + 1.0, 0.0).astype(result_dtype(y_pred))


class Hinge(_Builtin):
    """Hinge loss (labels -1/1, or 0/1 mapped to -1/1). Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(hinge)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(_Builtin):
    """Squared hinge loss (labels -1/1, or 0/1 mapped to -1/1). Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(squared_hinge)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(_Builtin):
    """Categorical hinge loss (one-hot labels). Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(categorical_hinge)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


CLASSES = (Hinge, SquaredHinge, CategoricalHinge)
FUNCTIONS = {hinge: Hinge, squared_hinge: SquaredHinge, categorical_hinge: CategoricalHinge}
