"""`tf.image.image_gradients` and `tf.image.ssim` for `python -m flexflow_keras`, composed from keras.ops
(slicing, `pad`, `depthwise_conv`, element-wise maths), so they run in a layer's call(), in a custom
`train_step` and under a GradientTape: keras.io's monocular depth estimation trains on a loss of both.

As TensorFlow defines them:
- `image_gradients(image)`: a batch (N, H, W, C) gives (dy, dx), the one-step forward differences along the
  height and the width, each with a zero last row (dy) or column (dx) so that both keep the image's shape;
- `ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, return_index_map=False)`:
  integer images are scaled to [0, 1] floats, `max_val` with them; each channel is filtered with a
  `filter_size` square Gaussian window (a softmax of the squared centred coordinates) without padding;
  luminance ``(2 mu_x mu_y + c1) / (mu_x^2 + mu_y^2 + c1)`` times contrast-structure
  ``(2 cov_xy + c2) / (var_x + var_y + c2)`` with ``c1 = (k1 max_val)^2`` and ``c2 = (k2 max_val)^2``,
  averaged over the filtered height and width (unless `return_index_map`), then over the channels.
Images are (H, W, C) or a batch (N, H, W, C); the height, width and channels must be known in a model.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def image_gradients(image):
    """`tf.image.image_gradients(image)`: (dy, dx) of a batch (N, H, W, C), each of the image's shape."""
    from flexflow_keras import ops

    shape = _shape(image)
    if len(shape) != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {shape}.")
    if not hasattr(image, "shape"):
        image = ops.convert_to_tensor(image)
    dy = ops.subtract(image[:, 1:, :, :], image[:, :-1, :, :])
    dx = ops.subtract(image[:, :, 1:, :], image[:, :, :-1, :])
    return ops.pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]]), ops.pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]])


def _gaussian_window(size: int, sigma: float) -> np.ndarray:
    """The (size, size) window TensorFlow's ssim filters with: a softmax over the grid of
    ``-(i^2 + j^2) / (2 sigma^2)`` for coordinates centred on the window, in float32."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2.0)
    g = np.square(coords) * (np.float32(-0.5) / np.square(np.float32(sigma)))
    grid = (g[None, :] + g[:, None]).reshape(-1)
    e = np.exp(grid - grid.max())
    return (e / e.sum()).astype(np.float32).reshape(size, size)


def _to_unit_float(x, dtype: np.dtype):
    from flexflow_keras import ops

    y = ops.cast(x, "float32")
    return ops.multiply(y, np.float32(1.0 / np.iinfo(dtype).max)) if dtype.kind in "ui" else y


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, return_index_map=False):
    """`tf.image.ssim`: the structural similarity of each image pair, (N,) for batches (N, H, W, C), or the
    map (N, H - filter_size + 1, W - filter_size + 1) with `return_index_map=True`."""
    from flexflow_keras import ops
    from flexflow_keras.ops.dtype_rules import dtype_of

    s1, s2 = _shape(img1), _shape(img2)
    if len(s1) not in (3, 4) or len(s2) != len(s1) or s1[-3:] != s2[-3:] or None in s1[-3:]:
        raise ArgumentError(f"tf.image.ssim expects two images (height, width, channels) or two batches of them "
                            f"of one known height, width and channels, received shapes {s1} and {s2}.")
    h, w, c = (int(d) for d in s1[-3:])
    size = int(filter_size)
    if h < size or w < size:
        raise ArgumentError(f"tf.image.ssim: the images ({h}x{w}) are smaller than filter_size={size}; pass a "
                            f"filter_size of at most {min(h, w)} or larger images.")
    if not hasattr(img1, "shape"):
        img1 = ops.convert_to_tensor(img1)
    if not hasattr(img2, "shape"):
        img2 = ops.convert_to_tensor(img2)
    d1, d2 = np.dtype(dtype_of(img1)), np.dtype(dtype_of(img2))
    if d1 != d2:
        raise ArgumentError(f"tf.image.ssim expects two images of one dtype, received {d1} and {d2}: cast one, "
                            f"e.g. tf.cast(img2, img1.dtype).")
    top = np.asarray(max_val).astype(d1)
    top = np.float32(top) / np.float32(np.iinfo(d1).max) if d1.kind in "ui" else np.float32(top)
    x, y = _to_unit_float(img1, d1), _to_unit_float(img2, d2)
    single = len(s1) == 3
    if single:
        x, y = ops.expand_dims(x, 0), ops.expand_dims(y, 0)
    kernel = np.ascontiguousarray(np.broadcast_to(_gaussian_window(size, float(filter_sigma))[:, :, None, None],
                                                  (size, size, c, 1)))

    def reducer(t):
        return ops.depthwise_conv(t, kernel, strides=1, padding="valid")

    c1 = np.float32((np.float32(k1) * top) ** 2)
    c2 = np.float32((np.float32(k2) * top) ** 2)
    mean_x, mean_y = reducer(x), reducer(y)
    num0 = ops.multiply(ops.multiply(mean_x, mean_y), np.float32(2.0))
    den0 = ops.add(ops.square(mean_x), ops.square(mean_y))
    luminance = ops.divide(ops.add(num0, c1), ops.add(den0, c1))
    num1 = ops.multiply(reducer(ops.multiply(x, y)), np.float32(2.0))
    den1 = reducer(ops.add(ops.square(x), ops.square(y)))
    cs = ops.divide(ops.add(ops.subtract(num1, num0), c2), ops.add(ops.subtract(den1, den0), c2))
    per_channel = ops.multiply(luminance, cs)
    if not return_index_map:
        per_channel = ops.mean(per_channel, axis=(-3, -2))
    out = ops.mean(per_channel, axis=-1)
    return ops.squeeze(out, axis=0) if single else out


NAMES = ("image_gradients", "ssim")
