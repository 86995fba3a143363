"""`tf.image`'s linear colour spaces (`rgb_to_yuv`, `yuv_to_rgb`, `rgb_to_yiq`, `yiq_to_rgb`) and its "area"
and "bicubic" resizes, for `python -m flexflow_keras` (tf_image.py dispatches here).

- The colour conversions are TensorFlow's: a tensordot of the last axis with its 3x3 kernel, in the image's
  float dtype (TensorFlow gives integer images no meaning here; they are an error). On a model's or a tape's
  tensor they are composed from keras.ops, so they run in a layer's call() and differentiate; on arrays (a
  Dataset.map's images, keras.io's sub-pixel super-resolution) they run in NumPy.
- `resize(method="area")` is TensorFlow's ResizeArea without aligned corners: each output pixel is the mean of
  the source box it covers, partly covered pixels weighted by their overlap, computed as one weight matrix per
  axis (the box's rows, then its columns). Float32 results whatever the input dtype, as TensorFlow.
- `resize(method="bicubic")` is TensorFlow's ResizeBicubic with half-pixel centres (tf.image.resize's, without
  antialiasing): Keys' cubic (a = -0.5) read from TensorFlow's 1024-entry table at the rounded fraction, taps
  outside the image weighted 0 and the other weights renormalised; one weight matrix per axis, as for area.
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras.errors import ArgumentError

# TensorFlow's kernels (image_ops_impl): column j of each gives output channel j.
_RGB_TO_YUV = ((0.299, -0.14714119, 0.61497538), (0.587, -0.28886916, -0.51496512), (0.114, 0.43601035, -0.10001026))
_YUV_TO_RGB = ((1.0, 1.0, 1.0), (0.0, -0.394642334, 2.03206185), (1.13988303, -0.58062185, 0.0))
_RGB_TO_YIQ = ((0.299, 0.59590059, 0.2115), (0.587, -0.27455667, -0.52273617), (0.114, -0.32134392, 0.31119955))
_YIQ_TO_RGB = ((1.0, 1.0, 1.0), (0.95598634, -0.27201283, -1.10674021), (0.6208248, -0.64720424, 1.70423049))


def _convert(images, kernel, who: str):
    from flexflow_keras import ops, tf_image_ops
    from flexflow_keras.ops.dtype_rules import dtype_of

    on_tensors = tf_image_ops.on_tensors(images)
    a = images if on_tensors else np.asarray(images)
    dtype = np.dtype(dtype_of(a)) if on_tensors else a.dtype
    shape = tuple(a.shape)
    if not shape or shape[-1] != 3:
        raise ArgumentError(f"tf.image.{who} expects images with 3 channels last, received shape {shape}.")
    if dtype.kind != "f":
        raise ArgumentError(f"tf.image.{who} expects float images, received {dtype}: convert them first, e.g. "
                            f"tf.image.convert_image_dtype(images, tf.float32).")
    k = np.asarray(kernel, dtype)
    if on_tensors:
        return ops.tensordot(a, k, axes=[[len(shape) - 1], [0]])
    from flexflow_keras.data.dataset import as_tensor

    return as_tensor(np.tensordot(a, k, axes=[[a.ndim - 1], [0]]).astype(dtype, copy=False))


def rgb_to_yuv(images):
    """RGB floats in [0, 1] to YUV (Y in [0, 1], U in [-0.436, 0.436], V in [-0.615, 0.615]), as TensorFlow."""
    return _convert(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """YUV to RGB, the inverse of `rgb_to_yuv`, as TensorFlow."""
    return _convert(images, _YUV_TO_RGB, "yuv_to_rgb")


def rgb_to_yiq(images):
    """RGB floats in [0, 1] to YIQ, as TensorFlow."""
    return _convert(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """YIQ to RGB, the inverse of `rgb_to_yiq`, as TensorFlow."""
    return _convert(images, _YIQ_TO_RGB, "yiq_to_rgb")


def _area_weights(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) overlap of each output cell's box [y*s, (y+1)*s) with each source cell, s = n_in / n_out
    in float32 as TensorFlow's CalculateResizeScale; boxes past the edge read the last cell."""
    scale = np.float32(n_in) / np.float32(n_out)
    w = np.zeros((n_out, n_in), np.float32)
    for y in range(n_out):
        lo, hi = np.float32(y) * scale, np.float32(y + 1) * scale
        for i in range(math.floor(lo), math.ceil(hi)):
            first, last = np.float32(i) < lo, np.float32(i + 1) > hi
            part = (scale if last else np.float32(i + 1) - lo) if first else (hi - np.float32(i) if last else 1.0)
            w[y, min(i, n_in - 1)] += np.float32(part)
    return w


_CUBIC_TABLE = 1024


def _keys_table() -> np.ndarray:
    """TensorFlow's bicubic coefficient table (resize_bicubic_op.cc, a = -0.5), in float32: row i holds the
    weight at distance i / 1024 and at distance 1 + i / 1024."""
    a = np.float32(-0.5)
    x = (np.arange(_CUBIC_TABLE + 1, dtype=np.float64) / _CUBIC_TABLE).astype(np.float32)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + np.float32(1.0)
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


def _bicubic_weights(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) weights of TensorFlow's half-pixel bicubic along one axis: source position
    (y + 0.5) * s - 0.5 with s = n_in / n_out in float32, four taps around it."""
    table = _keys_table()
    scale = np.float32(n_in) / np.float32(n_out)
    w = np.zeros((n_out, n_in), np.float32)
    for y in range(n_out):
        loc = (np.float32(y) + np.float32(0.5)) * scale - np.float32(0.5)
        base = math.floor(loc)
        offset = int(np.rint(np.float32(loc - np.float32(base)) * np.float32(_CUBIC_TABLE)))
        taps = (table[offset, 1], table[offset, 0], table[_CUBIC_TABLE - offset, 0], table[_CUBIC_TABLE - offset, 1])
        inside = [(base - 1 + k, t) for k, t in enumerate(taps) if 0 <= base - 1 + k < n_in]
        total = np.float32(sum(t for _, t in inside))
        norm = np.float32(1.0) / total if abs(total) >= 1000 * np.finfo(np.float32).tiny else np.float32(1.0)
        for i, t in inside:
            w[y, i] = np.float32(t * norm)
    return w


def resize_bicubic(batch: np.ndarray, h: int, w: int) -> np.ndarray:
    """TensorFlow's bicubic resize (half-pixel centres, no antialiasing) of a batch (N, H, W, C) to (N, h, w, C),
    float32."""
    wy, wx = _bicubic_weights(batch.shape[1], h), _bicubic_weights(batch.shape[2], w)
    out = np.einsum("yi,nijc,xj->nyxc", wy.astype(np.float64), batch.astype(np.float64), wx.astype(np.float64))
    return out.astype(np.float32)


def resize_area(batch: np.ndarray, h: int, w: int) -> np.ndarray:
    """TensorFlow's area resize of a batch (N, H, W, C) to (N, h, w, C), float32."""
    wy, wx = _area_weights(batch.shape[1], h), _area_weights(batch.shape[2], w)
    norm = 1.0 / (np.float32(batch.shape[1]) / np.float32(h) * (np.float32(batch.shape[2]) / np.float32(w)))
    out = np.einsum("yi,nijc,xj->nyxc", wy.astype(np.float64), batch.astype(np.float64), wx.astype(np.float64))
    return (out * np.float64(np.float32(norm))).astype(np.float32)


NAMES = ("rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb")
