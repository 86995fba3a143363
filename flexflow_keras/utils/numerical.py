"""Array helpers scripts call from `keras.utils`: `to_categorical` and `normalize`."""

from __future__ import annotations

import numpy as np


def to_categorical(x, num_classes: int | None = None) -> np.ndarray:
    """One-hot encode a vector of class ids (a trailing dim of size 1 is dropped first).

    Args:
        x: array-like of integers in ``[0, num_classes)``.
        num_classes: number of classes; ``max(x) + 1`` when None.

    Returns:
        A float64 array of shape ``x.shape + (num_classes,)`` (as Keras returns).

    Example:
        >>> to_categorical([0, 2], num_classes=3)
        array([[1., 0., 0.],
               [0., 0., 1.]])
    """
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError("to_categorical expects integer class ids, received non-integer values "
                             f"such as {arr[arr != np.round(arr)].ravel()[:3].tolist()}.")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"to_categorical expects integer class ids, received dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    shape = arr.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = arr.reshape(-1)
    if num_classes is None:
        num_classes = int(flat.max()) + 1 if flat.size else 0
    num_classes = int(num_classes)
    if flat.size and (flat.min() < 0 or flat.max() >= num_classes):
        bad = flat[(flat < 0) | (flat >= num_classes)][:3].tolist()
        raise ValueError(f"to_categorical got class ids {bad} outside [0, {num_classes}); pass "
                         f"num_classes={int(flat.max()) + 1} or fix the labels.")
    out = np.zeros((flat.size, num_classes), dtype=np.float64)
    out[np.arange(flat.size), flat] = 1.0
    return out.reshape(shape + (num_classes,))


def normalize(x, axis: int = -1, order: int = 2):
    """Divide `x` by its `order`-norm along `axis`.

    A NumPy array (or list) is normalised in NumPy (zero norms are left as 1) and a NumPy array comes back;
    a tensor (symbolic, or eager inside a train_step or under a GradientTape) goes through
    `keras.ops.normalize`, so the result stays on the graph or tape and gradients flow through it, as
    Keras returns a backend tensor for a backend tensor.

    Args:
        x: array-like or tensor.
        axis: the axis to normalise along.
        order: the norm's order (2 for L2).

    Example:
        >>> normalize(np.array([[3.0, 4.0]]))
        array([[0.6, 0.8]])
    """
    if not (type(x) is np.ndarray or isinstance(x, list | tuple | int | float)):  # EagerTensor subclasses ndarray
        from flexflow_keras.ops import numpy_extra

        return numpy_extra.normalize(x, axis=axis, order=order)
    arr = np.asarray(x)
    norm = np.atleast_1d(np.linalg.norm(arr, order, axis))
    norm[norm == 0] = 1
    return arr / np.expand_dims(norm, axis)
