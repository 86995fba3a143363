"""A custom layer called eagerly under a GradientTape: Python arithmetic on its input inside call()
(``x / keep_prob``, ``x * mask``, ``-x``, as keras.io's DropPath / stochastic depth layers write it) is
recorded, so the gradients of the layers before it exist and equal TensorFlow's."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers, ops
from flexflow_keras.ops.tape import GradientTape


class _Arith(layers.Layer):
    def call(self, x, training=False):
        if training:
            mask = np.array([1.0, 0.0, 1.0, 1.0], "float32").reshape(4, 1)
            return (x / 0.8) * mask - x ** 2
        return x


def _setup(mod):
    rng = np.random.RandomState(0)
    x = rng.rand(4, 3).astype("float32")
    kernel = rng.randn(3, 2).astype("float32")
    dense = mod.layers.Dense(2, kernel_initializer=mod.initializers.Constant(kernel))
    return x, dense


def _grads_ff(training):
    x, dense = _setup(keras)
    arith = _Arith()
    with GradientTape() as tape:
        y = arith(dense(x), training=training)
        loss = ops.sum(y * y)
    return [None if g is None else np.asarray(g) for g in tape.gradient(loss, dense.trainable_variables)]


@pytest.mark.parametrize("training", [False, True])
def test_gradients_through_call_arithmetic_exist(training):
    grads = _grads_ff(training)
    assert all(g is not None for g in grads), grads


def test_gradients_through_call_arithmetic_equal_tf():
    tf = pytest.importorskip("tensorflow")
    tk = pytest.importorskip("keras")

    class TfArith(tk.layers.Layer):
        def call(self, x, training=False):
            mask = np.array([1.0, 0.0, 1.0, 1.0], "float32").reshape(4, 1)
            return (x / 0.8) * mask - x ** 2

    x, dense = _setup(tk)
    with tf.GradientTape() as tape:
        y = TfArith()(dense(x), training=True)
        loss = tf.reduce_sum(y * y)
    ref = [g.numpy() for g in tape.gradient(loss, dense.trainable_variables)]
    for got, want in zip(_grads_ff(True), ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
