"""The overlap losses of Keras 3 for segmentation, `dice` and `tversky` (with their classes), composed of
`flexflow_keras.ops` on symbolic tensors (so they train with each op's own backward) and NumPy otherwise;
`flexflow_keras.losses` re-exports them.

Formulas (Keras 3, `keras/src/losses/losses.py`), sums over `axis` (None: every axis, the whole batch),
eps = backend epsilon:
- Dice: ``1 - 2·sum(t·p) / (sum(t) + sum(p) + eps)``
- Tversky: ``1 - sum(t·p) / (sum(t·p) + alpha·sum((1-p)·t) + beta·sum(p·(1-t)) + eps)``

When `axis` covers the batch axis the loss is one number for the batch. In a training graph, which
needs a loss value per sample, that number stands once per sample: their mean (the batch loss) is the
number itself, and sample weights scale it by their mean, as Keras' reduction does.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError
from flexflow_keras.losses_base import _align, _Builtin, _epsilon, _symbolic
from flexflow_keras.ops.graph import KerasTensor


def _ops():
    from flexflow_keras import ops

    return ops


def _axes(who: str, axis):
    """`axis` as None, an int or a tuple of ints (a JSON config gives a list)."""
    if axis is None:
        return None
    items = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if not items or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in items):
        raise ArgumentError(f"{who} expects axis to be None, an int or a tuple of ints (the dimensions summed over, "
                         f"e.g. (1, 2, 3) for one loss per image); received axis={axis!r}.")
    items = tuple(int(a) for a in items)
    return items[0] if isinstance(axis, (int, np.integer)) else items


def _covers_batch(axis, ndim: int) -> bool:
    if axis is None:
        return True
    return any(a % max(ndim, 1) == 0 for a in (axis if isinstance(axis, tuple) else (axis,)))


def _operands(y_true, y_pred):
    """(math module, y_true, y_pred): `flexflow_keras.ops` on tensors, NumPy in float64 on arrays (ranks
    aligned as Keras' loss wrapper does), so each formula below is written once for both."""
    if _symbolic(y_true, y_pred):
        ops = _ops()
        return ops, ops.cast(y_true, "float32"), y_pred
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np, t, p


def _result(xp, value):
    return value if xp is not np else np.asarray(value, np.float32)


def dice(y_true, y_pred, axis=None):
    """Dice loss ``1 - 2·sum(y_true·y_pred) / (sum(y_true) + sum(y_pred) + eps)`` over `axis`.

    Args:
        y_true, y_pred: targets and predictions in [0, 1], the same shape.
        axis: the dimensions summed over: None (every one: one value for the batch), or e.g. (1, 2, 3)
            for one value per image.

    Example:
        >>> float(dice([[1.0, 0.0]], [[0.5, 0.5]]))
        0.5
    """
    axis = _axes("dice", axis)
    xp, t, p = _operands(y_true, y_pred)
    twice_overlap = xp.multiply(xp.sum(xp.multiply(t, p), axis=axis), 2.0)
    total = xp.add(xp.add(xp.sum(t, axis=axis), xp.sum(p, axis=axis)), _epsilon())
    return _result(xp, xp.subtract(1.0, xp.divide(twice_overlap, total)))


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """Tversky loss ``1 - tp / (tp + alpha·fp + beta·fn + eps)`` with soft counts summed over `axis`:
    ``tp = sum(t·p)``, ``fp = sum((1-p)·t)``, ``fn = sum(p·(1-t))`` (Keras 3's names).

    Args:
        y_true, y_pred: targets and predictions in [0, 1], the same shape.
        alpha, beta: the weights of fp and fn; 0.5 each gives the Dice loss.
        axis: the dimensions summed over, as `dice`.

    Example:
        >>> float(tversky([[1.0, 0.0]], [[0.5, 0.5]], alpha=0.5, beta=0.5))
        0.5
    """
    axis = _axes("tversky", axis)
    xp, t, p = _operands(y_true, y_pred)
    tp = xp.sum(xp.multiply(t, p), axis=axis)
    fp = xp.sum(xp.multiply(xp.subtract(1.0, p), t), axis=axis)
    fn = xp.sum(xp.multiply(p, xp.subtract(1.0, t)), axis=axis)
    denominator = xp.add(xp.add(xp.add(tp, xp.multiply(fp, float(alpha))), xp.multiply(fn, float(beta))), _epsilon())
    return _result(xp, xp.subtract(1.0, xp.divide(tp, denominator)))


def _one_per_sample(value, like: KerasTensor):
    """`value` (no batch dim) once per sample of `like`, with no gradient through `like`."""
    ops = _ops()
    zeros = ops.zeros_like(like, dtype="float32")
    if zeros.ndim > 1:
        zeros = ops.sum(zeros, axis=tuple(range(1, zeros.ndim)))
    return ops.add(zeros, value)


class _Overlap(_Builtin):
    """A loss summed over `axis`: per sample in a training graph even when `axis` spans the batch."""

    def per_sample(self, y_true, y_pred):
        values = self.call(y_true, y_pred)
        if isinstance(y_pred, KerasTensor) and _covers_batch(_axes(self.name, self.axis), y_pred.ndim):
            return _one_per_sample(values, y_pred)
        return values


class Dice(_Overlap):
    """Dice loss over `axis`.

    Args:
        reduction, name: as `Loss`.
        axis: the dimensions summed over (None: the whole batch is one value; (1, 2, 3): one per image).
        dtype: as `Loss`.

    Example:
        >>> Dice(axis=(1, 2, 3), reduction=None)(y_true, y_pred)   # one value per image
    """

    _fn = staticmethod(dice)

    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        _axes(type(self).__name__, axis)  # checked now; kept as given for get_config
        super().__init__(reduction=reduction, name=name, dtype=dtype, axis=axis)


class Tversky(_Overlap):
    """Tversky loss over `axis`: Dice with separate weights for the two kinds of disagreement.

    Args:
        alpha: the weight of ``sum((1 - y_pred)·y_true)``. beta: the weight of ``sum(y_pred·(1 - y_true))``
            (0.5 each: the Dice loss).
        reduction, name: as `Loss`.
        axis: the dimensions summed over, as `Dice`.
        dtype: as `Loss`.
    """

    _fn = staticmethod(tversky)

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky", axis=None, dtype=None):
        _axes(type(self).__name__, axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype, alpha=alpha, beta=beta, axis=axis)


CLASSES = (Dice, Tversky)
FUNCTIONS = {dice: Dice, tversky: Tversky}
