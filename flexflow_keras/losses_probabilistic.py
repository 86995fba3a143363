"""Two probabilistic losses of Keras 3: `poisson` and `categorical_generalized_cross_entropy` (with their
classes), composed of `flexflow_keras.ops` on symbolic tensors (so they train with each op's own backward)
and NumPy otherwise; `flexflow_keras.losses` re-exports them.

Formulas (Keras 3, `keras/src/losses/losses.py`), per sample, eps = backend epsilon:
- Poisson: ``mean(p - t · log(p + eps))`` over the last axis.
- generalized crossentropy (Zhang & Sabuncu, 2018): ``(1 - p_y^q) / q`` with p_y the predicted
  probability of the integer label y.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses_base import _align, _Builtin, _epsilon, _symbolic, result_dtype


def _ops():
    from flexflow_keras import ops

    return ops


def poisson(y_true, y_pred):
    """Per-sample Poisson loss ``mean(y_pred - y_true · log(y_pred + eps))`` over the last axis.

    Example:
        >>> poisson([[1.0, 2.0]], [[1.0, 2.0]]).round(4).tolist()
        [0.3069]
    """
    eps = _epsilon()
    if _symbolic(y_true, y_pred):
        ops = _ops()
        t = ops.cast(y_true, "float32")
        return ops.mean(ops.subtract(y_pred, ops.multiply(t, ops.log(ops.add(y_pred, eps)))), axis=-1)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np.mean(p - t * np.log(p + eps), axis=-1).astype(result_dtype(y_pred))


def _check_q(who: str, q, below_one: bool) -> float:
    """q as a float; the class takes it in (0, 1) as Keras' does, the function any q > 0."""
    number = not isinstance(q, bool) and isinstance(q, (int, float, np.integer, np.floating))
    if not number or q <= 0 or (below_one and q >= 1):
        interval = "the open interval (0, 1)" if below_one else "q > 0"
        raise ArgumentError(f"{who} expects q, the noise parameter, in {interval}; received q={q!r}. Values near 0 "
                         f"behave like crossentropy, near 1 like mean absolute error; try q=0.5.")
    return float(q)


def _class_ids(y_true, y_pred):
    """Integer labels of shape (N,) for an output of shape (N, C); a trailing label dim of 1 is dropped."""
    shape = tuple(getattr(y_true, "shape", np.shape(y_true)))
    if len(shape) == len(getattr(y_pred, "shape", np.shape(y_pred))) and shape and shape[-1] == 1:
        return _ops().squeeze(y_true, -1) if _symbolic(y_true, y_pred) else np.asarray(y_true)[..., 0]
    return y_true


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """Per-sample generalized crossentropy ``(1 - p_y^q) / q`` between integer labels and probabilities.

    Args:
        y_true: class ids, shape (N,) (or (N, 1)).
        y_pred: class probabilities, shape (N, C).
        q: the noise parameter in (0, 1): near 0 like crossentropy, near 1 like mean absolute error.

    Example:
        >>> categorical_generalized_cross_entropy([1], [[0.2, 0.8]], q=0.5).round(4).tolist()
        [0.2111]
    """
    q = _check_q("categorical_generalized_cross_entropy", q, below_one=False)
    y_true = _class_ids(y_true, y_pred)
    if _symbolic(y_true, y_pred):
        ops = _ops()
        # the label's column, as 1.0 where the id equals the column index (elementwise, so it splits
        # along the batch like the loss; ids outside [0, C) give zero rows, as one_hot does)
        columns = np.arange(y_pred.shape[-1], dtype=np.float32)
        onehot = ops.cast(ops.equal(ops.expand_dims(ops.cast(y_true, "float32"), -1), columns), "float32")
        picked = ops.sum(ops.multiply(y_pred, onehot), axis=-1)
        return ops.divide(ops.subtract(1.0, ops.power(picked, q)), q)
    p = np.asarray(y_pred, np.float64)
    ids = np.asarray(y_true).astype(np.int64)
    onehot = (ids[..., None] == np.arange(p.shape[-1])).astype(np.float64)  # out-of-range ids: zero rows
    picked = np.sum(p * onehot, axis=-1)
    return ((1.0 - np.power(picked, q)) / q).astype(result_dtype(y_pred))


class Poisson(_Builtin):
    """Poisson loss ``y_pred - y_true · log(y_pred)``, averaged over the last axis.

    Args:
        reduction, name, dtype: as `Loss`.

    Example:
        >>> Poisson()([[0., 1.], [0., 0.]], [[1., 1.], [0., 0.]])
    """

    _fn = staticmethod(poisson)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class CategoricalGeneralizedCrossEntropy(_Builtin):
    """Generalized crossentropy, robust to noisy labels, for integer labels and probabilities.

    Args:
        q: the noise parameter in (0, 1) (0.5).
        reduction, name, dtype: as `Loss`.

    Example:
        >>> CategoricalGeneralizedCrossEntropy()([0, 1], [[0.7, 0.3], [0.2, 0.8]])
    """

    _fn = staticmethod(categorical_generalized_cross_entropy)
    label_kind = "sparse"

    def __init__(self, q=0.5, reduction="sum_over_batch_size", name="categorical_generalized_cross_entropy",
                 dtype=None):
        q = _check_q(type(self).__name__, q, below_one=True)
        super().__init__(reduction=reduction, name=name, dtype=dtype, q=q)


CLASSES = (Poisson, CategoricalGeneralizedCrossEntropy)
FUNCTIONS = {poisson: Poisson, categorical_generalized_cross_entropy: CategoricalGeneralizedCrossEntropy}
