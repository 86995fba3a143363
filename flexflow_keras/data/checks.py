"""Checks on training data before anything runs: non-finite values (`check_finite`) and labels that do
not fit the loss (`check_labels`, used by `Loss.validate`). Every error names the array, the index and
the fix.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from flexflow_keras.errors import DataError

log = logging.getLogger("flexflow_keras")
_WARNED: set[str] = set()  # outputs already warned about non-integer class ids


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    flat = int(np.flatnonzero(mask.reshape(-1))[0])
    return tuple(int(i) for i in np.unravel_index(flat, mask.shape))


def check_finite(arrays: Sequence[np.ndarray] | np.ndarray, name: str = "x", names: Sequence[str] | None = None
                 ) -> None:
    """Raise DataError naming the array and the first index holding NaN or infinity.

    Args:
        arrays: one array or a list of arrays (integer arrays are skipped).
        name: what the arrays are ("x", "y", "sample_weight").
        names: per-array names (inputs/outputs); default ``name[i]`` for several arrays.
    """
    items = [arrays] if isinstance(arrays, np.ndarray) else list(arrays)
    for k, a in enumerate(items):
        a = np.asarray(a)
        if a.dtype.kind not in "fc":
            continue
        bad = ~np.isfinite(a)
        if bad.any():
            idx = _first_index(bad)
            label = names[k] if names else (name if len(items) == 1 else f"{name}[{k}]")
            raise DataError(f"{label} contains {int(bad.sum())} NaN or infinite value(s); the first is at index "
                            f"{idx} (value {a[idx]}). Clean the data before fit(), e.g. "
                            f"np.nan_to_num({label}) or drop those samples.")


def _int_like(y: np.ndarray) -> bool:
    if y.dtype.kind in "iub":
        return True
    return y.dtype.kind == "f" and y.size > 0 and bool(np.all(np.mod(y, 1) == 0))


def _shape(y_shape: tuple) -> str:
    return "(N" + "".join(f", {d}" for d in y_shape[1:]) + (",)" if len(y_shape) == 1 else ")")


def check_labels(kind: str | None, loss_name: str, y: np.ndarray, y_pred_shape: tuple, output: str,
                 from_logits: bool = False) -> None:
    """Raise DataError when labels `y` cannot be used with the loss.

    Args:
        kind: "categorical", "sparse", "binary", "regression", or None (custom loss: NaN only).
        loss_name: the loss' name for messages.
        y: the labels of one output.
        y_pred_shape: the output's shape (batch dim may be None).
        output: the output's name.
        from_logits: the loss reads logits (for the message only).
    """
    who = f"Labels for output '{output}' (loss {loss_name})"
    if y.dtype.kind in "fc":
        bad = ~np.isfinite(y)
        if bad.any():
            idx = _first_index(bad)
            raise DataError(f"{who} contain {int(bad.sum())} NaN or infinite value(s); the first is at index "
                            f"{idx}. Clean the labels (drop or fix those samples) before training.")
    if y.dtype.kind not in "iubf":
        raise DataError(f"{who} must be numeric; received dtype {y.dtype}. Convert them with np.asarray(y, "
                        f"dtype='float32') (or integer class ids).")
    if y.ndim == 0:
        raise DataError(f"{who} must have a batch dimension; received a scalar.")
    pred = tuple(y_pred_shape)
    units = pred[-1] if len(pred) > 1 else 1
    if kind == "categorical":
        _check_categorical(who, loss_name, y, pred, units)
    elif kind == "sparse":
        _check_sparse(who, y, pred, units)
    elif kind == "binary":
        _check_binary(who, y, pred, units, from_logits)
    elif kind == "regression":
        _check_same_shape(who, y, pred)


def _check_categorical(who, loss_name, y, pred, units):
    if len(pred) >= 2 and (y.ndim == len(pred) - 1 or (y.ndim == len(pred) and y.shape[-1] == 1 and units > 1)):
        if _int_like(y):
            lo, hi = int(y.min()), int(y.max())
            raise DataError(
                f"{who} expects one-hot labels of shape {_shape(pred)}, but received integer class labels of "
                f"shape {y.shape} (values {lo}..{hi}). Use loss='sparse_categorical_crossentropy', or convert "
                f"the labels with keras.utils.to_categorical(y, {units}).")
    if y.ndim != len(pred) or tuple(y.shape[1:]) != tuple(pred[1:]):
        raise DataError(f"{who} expects labels of shape {_shape(pred)} to match the output, received shape "
                        f"{y.shape}.")


def _check_sparse(who, y, pred, units):
    labels = y[..., 0] if (y.ndim == len(pred) and y.shape[-1] == 1) else y
    if y.ndim == len(pred) and y.shape[-1] == units and units > 1:
        raise DataError(
            f"{who} expects integer class labels of shape (N,) or (N, 1), but received labels of shape "
            f"{y.shape} that look one-hot. Use loss='categorical_crossentropy', or pass "
            f"np.argmax(y, axis=-1) as the labels.")
    if labels.ndim != len(pred) - 1 or tuple(labels.shape[1:]) != tuple(pred[1:-1]):
        raise DataError(f"{who} expects class ids of shape {_shape(pred[:-1])} for an output of shape "
                        f"{_shape(pred)}, received shape {y.shape}.")
    if labels.size == 0:
        return
    if not _int_like(labels):
        # Keras 3 (TensorFlow) casts float class ids to int64, truncating toward zero, and trains on them
        # (keras.io's DeepLabV3+ resizes its masks bilinearly); its sparse accuracy compares the float labels,
        # so those never count as correct. The same happens here, said once per output.
        idx = _first_index(np.mod(labels, 1) != 0)
        if who not in _WARNED:
            _WARNED.add(who)
            log.warning("%s should be integer class ids; received the non-integer value %s at index %s. The loss "
                        "truncates them toward zero, as Keras 3 on TensorFlow does (and sparse accuracy counts "
                        "them as wrong). Pass class ids 0..%d (resize label masks with method='nearest').",
                        who, labels[idx], idx, units - 1)
        labels = np.trunc(labels)
    out = (labels < 0) | (labels >= units)
    if out.any():
        idx = _first_index(out)
        raise DataError(
            f"{who} must be class ids in [0, {units}) for an output with {units} units; received values "
            f"{labels.min():g}..{labels.max():g} (the first out of range is {labels[idx]:g} at index {idx}). "
            f"Give the last layer as many units as classes, or remap the labels to 0..{units - 1}.")


def _check_binary(who, y, pred, units, from_logits):
    _check_same_shape(who, y, pred)
    if y.size == 0:
        return
    out = (y < 0) | (y > 1)
    if out.any():
        idx = _first_index(out)
        classes = np.unique(y) if _int_like(y) else None
        hint = ""
        if classes is not None and len(classes) > 2 and units == 1:
            hint = (f" The labels have {len(classes)} classes: for multi-class use a Dense({len(classes)}, "
                    f"activation='softmax') output with loss='sparse_categorical_crossentropy'.")
        raise DataError(f"{who} must be in [0, 1]; received values {y.min():g}..{y.max():g} (the first out of "
                        f"range is {y[idx]:g} at index {idx}). Map the labels to {{0, 1}}.{hint}")


def _check_same_shape(who, y, pred):
    ys = tuple(y.shape)
    # Keras aligns a trailing size-1 dim: (N,) labels fit a (N, 1) output and vice versa.
    if len(ys) == len(pred) - 1 and pred[-1] == 1:
        ys = ys + (1,)
    elif len(ys) == len(pred) + 1 and ys[-1] == 1:
        ys = ys[:-1]
    if len(ys) != len(pred) or tuple(ys[1:]) != tuple(pred[1:]):
        raise DataError(f"{who} expect shape {_shape(pred)} to match the output, received shape {y.shape}.")
