"""Bin ids in the output modes of Keras 3's hashing and bucketing layers (`Hashing`, `HashedCrossing`,
`Discretization`), on NumPy, with the shapes Keras' `encode_categorical_inputs` gives on TensorFlow:

- "int": the ids as they are;
- "one_hot": a last axis of `depth` (a trailing axis of size 1 is replaced; a scalar becomes (1, depth));
- "multi_hot" / "count": a scalar or a 1-D input is one sample, (depth,); a 2-D input is (batch, depth),
  counted along its last axis; from rank 3 Keras reduces axis 1, so (a, b, c) gives (a, c, depth).
"""

from __future__ import annotations

import numpy as np


def encode(ids: np.ndarray, mode: str, depth: int, dtype: str) -> np.ndarray:
    """Encode integer bin ids (all in [0, depth)) in `mode`, as an array of `dtype`."""
    ids = np.asarray(ids, np.int64)
    if mode == "int":
        return ids.astype(dtype)
    if ids.ndim == 0:
        ids = ids[None]
    if mode == "one_hot":
        if ids.ndim > 1 and ids.shape[-1] == 1:
            ids = ids[..., 0]
        return (ids[..., None] == np.arange(depth)).astype(dtype)
    if ids.ndim <= 2:  # TensorFlow's bincount along the last axis
        rows = ids.reshape(int(np.prod(ids.shape[:-1])), ids.shape[-1])
        counts = np.zeros((rows.shape[0], depth), np.int64)
        np.add.at(counts, (np.repeat(np.arange(rows.shape[0]), rows.shape[1]), rows.ravel()), 1)
        counts = counts.reshape(ids.shape[:-1] + (depth,))
    else:  # one-hot, then summed (count) or maxed (multi_hot) over axis 1
        counts = (ids[..., None] == np.arange(depth)).sum(axis=1)
    if mode == "multi_hot":
        counts = np.minimum(counts, 1)
    return counts.astype(dtype)


def encoded_shape(shape: tuple, mode: str, depth) -> tuple:
    """The shape `encode` gives an input of `shape` (entries may be None)."""
    shape = tuple(shape)
    if mode == "int":
        return shape
    if mode == "one_hot":
        if not shape:
            return (1, depth)
        return (shape[:-1] if len(shape) > 1 and shape[-1] == 1 else shape) + (depth,)
    if len(shape) < 2:
        return (depth,)
    return (shape[0],) + shape[2:] + (depth,)
