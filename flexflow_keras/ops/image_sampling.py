"""`keras.ops.image.affine_transform` and `keras.ops.image.map_coordinates`, on arrays (run now).

Both resample at computed coordinates, which no op here records in a model yet: a symbolic tensor is a
clear error that names the layers doing the same inside a model. `affine_transform` runs the augmentation
kernels' resampler (`kernels.augment`, TensorFlow's ImageProjectiveTransformV3 rules) for transforms
without projective terms; `map_coordinates` is Keras 3's TensorFlow-backend algorithm in NumPy (order 0
or 1).
"""

from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from flexflow_keras import backend
from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.graph import KerasTensor
from kernels import augment as kaug

_AFFINE_FILL = ("constant", "nearest", "wrap", "reflect")
_MAP_FILL = ("constant", "nearest", "wrap", "mirror", "reflect")


def _eager(who: str, value, fix: str) -> np.ndarray:
    if isinstance(value, KerasTensor):
        raise ShapeError(f"keras.ops.image.{who} runs on arrays only in flexflow_keras; it cannot be part of a "
                         f"model yet, and received the symbolic tensor {value.shape}. {fix}")
    return np.asarray(value)


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """Resample images through `transform` ([a0, a1, a2, b0, b1, b2, c0, c1] per image, or one for all):
    output pixel (x, y) reads the input at (a0 x + a1 y + a2, b0 x + b1 y + b2); c0 and c1 must be 0.

    Args:
        interpolation: "nearest" or "bilinear". fill_mode: "constant" (with `fill_value`), "nearest",
            "wrap" or "reflect", for reads outside the image.
    """
    who = "keras.ops.image.affine_transform"
    fix = ("Inside a model, use keras.layers.RandomRotation / RandomZoom / RandomTranslation / RandomFlip; "
           "otherwise transform the images before fit (in the data pipeline).")
    images = _eager("affine_transform", images, fix)
    transform = _eager("affine_transform", transform, fix)
    if interpolation not in kaug.INTERPOLATIONS:
        raise ValueError(f"{who}: Invalid value for argument `interpolation`. Expected of one {kaug.INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if fill_mode not in _AFFINE_FILL:
        raise ValueError(f"{who}: Invalid value for argument `fill_mode`. Expected of one {_AFFINE_FILL}. "
                         f"Received: fill_mode={fill_mode}")
    if images.ndim not in (3, 4):
        raise ValueError(f"{who}: Invalid images rank: expected rank 3 (single image) or rank 4 (batch of images). "
                         f"Received input with shape: images.shape={images.shape}")
    if transform.ndim not in (1, 2) or transform.shape[-1] != 8:
        raise ValueError(f"{who}: Invalid transform: expected shape (8,) or (batch, 8). Received input with shape: "
                         f"transform.shape={transform.shape}")
    single, cf = images.ndim == 3, backend.standardize_data_format(data_format, who) == "channels_first"
    x = images[None] if single else images
    if cf:
        x = np.transpose(x, (0, 2, 3, 1))
    mats = np.broadcast_to(transform.reshape(-1, 8), (x.shape[0], 8)).astype(np.float64)
    if np.any(mats[:, 6:] != 0):
        raise ValueError(f"{who}: projective terms (c0, c1 = {mats[:, 6:].tolist()}) are not implemented by "
                         f"flexflow_keras; give affine transforms (c0 = c1 = 0).")
    src = np.ascontiguousarray(x, np.float32)
    out = np.empty_like(src)
    kaug.affine_forward_cpu(src, out, mats[:, :6], interpolation == "bilinear", kaug.FILL_MODES.index(fill_mode),
                            float(fill_value))
    if cf:
        out = np.transpose(out, (0, 3, 1, 2))
    out = out[0] if single else out
    return _restore(out, images.dtype)


def _restore(out: np.ndarray, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.round(out).astype(dtype)
    return out.astype(dtype, copy=False)


def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0.0):
    """`inputs` sampled at `coordinates` (shape (inputs.ndim, ...)) by nearest (order 0) or linear (order 1)
    interpolation; `fill_mode` "constant" (with `fill_value`), "nearest", "wrap", "mirror" or "reflect"."""
    who = "keras.ops.image.map_coordinates"
    fix = "Sample the arrays before fit (in the data pipeline)."
    x = _eager("map_coordinates", inputs, fix)
    coords = _eager("map_coordinates", coordinates, fix)
    if coords.ndim < 2:
        raise ValueError(f"{who}: Invalid coordinates rank: expected at least rank 2. Received input with shape: "
                         f"{coords.shape}")
    if coords.shape[0] != x.ndim:
        raise ValueError(f"{who}: First dim of `coordinates` must be the same as the rank of `inputs`. Received "
                         f"inputs with shape: {x.shape} and coordinate leading dim of {coords.shape[0]}")
    if fill_mode not in _MAP_FILL:
        raise ValueError(f"{who}: Invalid value for argument `fill_mode`. Expected one of {set(_MAP_FILL)}. "
                         f"Received: fill_mode={fill_mode}")
    if order not in (0, 1):
        raise ValueError(f"{who}: order must be 0 (nearest) or 1 (linear), as Keras 3 takes it, received "
                         f"order={order!r}.")
    wdtype = coords.dtype if coords.dtype.kind == "f" else np.dtype(np.float32)
    per_axis = []
    for c, size in zip(coords, x.shape, strict=True):
        per_axis.append([(*_fix(i, size, fill_mode), w) for i, w in _taps(c, order, wdtype)])
    result = 0
    for items in itertools.product(*per_axis):
        idx, valid, weights = zip(*items, strict=True)
        got = x[tuple(idx)].astype(wdtype)
        if fill_mode == "constant":
            got = np.where(np.logical_and.reduce(valid), got, np.asarray(fill_value, wdtype))
        result = result + functools.reduce(operator.mul, weights) * got
    return _restore(np.asarray(result), x.dtype)


def _taps(c: np.ndarray, order: int, wdtype):
    if order == 0:
        idx = c if c.dtype.kind in "iu" else np.round(c)
        return [(idx.astype(np.int64), np.asarray(1, wdtype))]
    lower = np.floor(c)
    upper_w = (c - lower).astype(wdtype)
    return [(lower.astype(np.int64), (1 - upper_w).astype(wdtype)), (lower.astype(np.int64) + 1, upper_w)]


def _fix(index: np.ndarray, size: int, mode: str):
    """(safe index, valid) of integer indices under the fill mode, as Keras' TensorFlow backend maps them
    (clipped at the end, where TensorFlow's "mirror" would index past the edge)."""
    if mode == "constant":
        return np.clip(index, 0, size - 1), (index >= 0) & (index < size)
    ok = np.ones(index.shape, bool)
    if mode == "nearest":
        return np.clip(index, 0, size - 1), ok
    if mode == "wrap":
        return np.mod(index, size), ok
    a = np.abs(index)
    m = np.mod(a, 2 * size)
    out = np.where(m < size, m, 2 * size - m)
    if mode == "reflect":
        out = np.where(m >= size, out - 1, out)
    return np.clip(out, 0, size - 1), ok
