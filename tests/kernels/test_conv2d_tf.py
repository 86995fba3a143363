"""conv2d and pool2d kernels against TensorFlow itself (the semantics peer): "same" padding's split,
strides, and every gradient. Needs the 'tf' extra; deselect with -m 'not tf'."""

import numpy as np
import pytest

from kernels import conv2d as K
from kernels import pool2d as P

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


@pytest.mark.parametrize("shape, kernel, strides, padding", [
    ((2, 8, 7, 3), (2, 3, 3, 4), (2, 2), "same"),
    ((2, 9, 9, 2), (3, 3, 2, 5), (2, 1), "same"),
    ((1, 7, 7, 32), (3, 3, 32, 32), (1, 1), "same"),  # the Winograd path
    ((2, 10, 9, 1), (3, 3, 1, 4), (3, 2), "valid"),
])
def test_conv2d_matches_tensorflow(shape, kernel, strides, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    k = (rng.standard_normal(kernel) / np.sqrt(np.prod(kernel[:3]))).astype(np.float32)
    b = rng.standard_normal(kernel[-1]).astype(np.float32)
    tx, tk, tb = tf.constant(x), tf.constant(k), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([tx, tk, tb])
        ty = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(tx, tk, strides, padding.upper()), tb))
        loss = tf.reduce_sum(ty * tf.constant(np.linspace(-1, 1, ty.shape.num_elements(), dtype=np.float32)
                                              .reshape(ty.shape)))
    tgx, tgk, tgb = tape.gradient(loss, [tx, tk, tb])
    y = np.empty(ty.shape, np.float32)
    K.conv2d_forward_cpu(x, k, b, y, strides, padding, "relu")
    np.testing.assert_allclose(y, ty.numpy(), rtol=1e-4, atol=1e-5)
    gy = np.linspace(-1, 1, y.size, dtype=np.float32).reshape(y.shape)
    gx, gk, gb = np.empty_like(x), np.empty_like(k), np.empty_like(b)
    K.conv2d_backward_cpu(x, k, y, gy, gx, gk, gb, strides, padding, "relu")
    for got, want in ((gx, tgx), (gk, tgk), (gb, tgb)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("shape, pool, strides, padding", [
    ((2, 7, 8, 3), (2, 2), (2, 2), "same"),
    ((1, 7, 6, 2), (3, 2), (2, 1), "same"),
    ((2, 9, 9, 2), (3, 3), (2, 2), "valid"),
])
def test_pool2d_matches_tensorflow(mode, shape, pool, strides, padding):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    tx = tf.constant(x)
    fn = tf.nn.max_pool2d if mode == "max" else tf.nn.avg_pool2d
    with tf.GradientTape() as tape:
        tape.watch(tx)
        ty = fn(tx, pool, strides, padding.upper())
        w = np.linspace(-1, 1, ty.shape.num_elements(), dtype=np.float32).reshape(ty.shape)
        loss = tf.reduce_sum(ty * w)
    y = np.empty(ty.shape, np.float32)
    argmax = np.empty(ty.shape, np.int32)
    P.pool2d_forward_cpu(x, y, pool, strides, padding, mode, argmax)
    np.testing.assert_allclose(y, ty.numpy(), rtol=1e-6, atol=1e-6)
    gx = np.empty_like(x)
    P.pool2d_backward_cpu(x, w, gx, pool, strides, padding, mode, argmax)
    np.testing.assert_allclose(gx, tape.gradient(loss, tx).numpy(), rtol=1e-5, atol=1e-6)
