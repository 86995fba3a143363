"""`kernels.augment.resize_image_cpu` (tf.image.resize under the runner, and the image loaders' resize) takes
its source coordinates in float32 as TensorFlow's ResizeBilinear / ResizeNearestNeighbor kernels do:
``(x + 0.5f) * (in / out) - 0.5f``. In float64 the lerp weights moved by an ulp (bilinear pixels up to
3e-3 of 255 off, so a uint8 cast after the resize differed by 1: keras.io's conditional GAN resizes its
generated digits 28 -> 96 and casts them) and nearest picked the neighbouring pixel where the float32
coordinate lands on a whole number (30x40 -> 11x9: 9% of the pixels)."""

import math

import numpy as np
import pytest

from kernels.augment import resize_image_cpu

_CASES = [(28, 28, 96, 96), (30, 40, 11, 9), (224, 224, 150, 150), (100, 37, 299, 64), (13, 9, 5, 3)]


def _resize(src, h, w, bilinear):
    out = np.empty((h, w, src.shape[2]), np.float32)
    resize_image_cpu(np.ascontiguousarray(src), out, bilinear)
    return out


def _nearest_float32(n_in, n_out):
    """TensorFlow's half-pixel nearest source index, in float32."""
    scale = np.float32(n_in) / np.float32(n_out)
    return [min(int(math.floor((np.float32(j) + np.float32(0.5)) * scale)), n_in - 1) for j in range(n_out)]


def test_nearest_takes_the_float32_source_pixel():
    src = np.arange(30 * 40, dtype=np.float32).reshape(30, 40, 1)
    out = _resize(src, 11, 9, bilinear=False)[:, :, 0]
    rows, cols = _nearest_float32(30, 11), _nearest_float32(40, 9)
    np.testing.assert_array_equal(out, src[np.ix_(rows, cols)][:, :, 0])


def test_bilinear_weights_are_float32_lerps():
    # 3 -> 7 columns of a ramp: each output is the float32 lerp of its two neighbours by the float32 weight
    src = np.array([[[0.0], [255.0], [17.0]]], np.float32)
    out = _resize(src, 1, 7, bilinear=True)[0, :, 0]
    scale = np.float32(3) / np.float32(7)
    want = []
    for j in range(7):
        c = (np.float32(j) + np.float32(0.5)) * scale - np.float32(0.5)
        f = math.floor(c)
        a, b = src[0, min(max(f, 0), 2), 0], src[0, min(max(math.ceil(c), 0), 2), 0]
        want.append(a + (b - a) * np.float32(c - np.float32(f)))
    np.testing.assert_array_equal(out, np.asarray(want, np.float32))


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_bit_equal_to_tensorflow(method):
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    for h_in, w_in, h, w in _CASES:
        for dtype in (np.uint8, np.float32):
            src = rng.integers(0, 256, (h_in, w_in, 3)).astype(dtype)
            want = tf.image.resize(src, (h, w), method=method).numpy().astype(np.float32)
            np.testing.assert_array_equal(_resize(src, h, w, method == "bilinear"), want,
                                          err_msg=f"{h_in}x{w_in} -> {h}x{w} {dtype.__name__} {method}")
