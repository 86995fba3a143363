"""Keras 3's `KerasVariable` operators (comparisons, ``abs``, ``**``, ``@``, ``//``, ``%``, ``& | ^ ~``,
``round`` and the reflected forms) on `keras.Variable`: eagerly against Keras 3.15 on TensorFlow, under a
GradientTape against tf.GradientTape, and inside a layer's call() in a model that predicts and takes an SGD
step as tf.keras does."""

import numpy as np
import pytest

import flexflow_keras as fk
from flexflow_keras.ops.tape import GradientTape

VALUES = {"v": np.array([[1.55, -2.5], [3.0, -4.25]], np.float32), "i": np.array([1, 2, -5], np.int32),
          "b": np.array([True, False, True])}
EXPRESSIONS = ["v > 0.0", "v < 0", "v >= 1.55", "v <= 1.5", "0 < v", "abs(v)", "-v", "v ** 2", "2 ** v", "v @ v",
               "round(v)", "round(v, 1)", "round(v, -1)", "v // 2", "3 // v", "v % 2", "3 % v", "~b", "~i",
               "i & 3", "i | 0", "i ^ 1", "b & True", "True & b", "b | b", "b ^ True", "True ^ b", "i // 2",
               "i % 3", "2 ** (i * i)", "i ** 2", "7 // i", "7 % i", "round(i)", "round(i, -1)", "v > v[0]"]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_eager_operators_match_keras(expr):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    got = eval(expr, {}, {k: fk.Variable(a) for k, a in VALUES.items()})  # noqa: S307 - the test's own strings
    want = np.asarray(eval(expr, {}, {k: keras.Variable(a) for k, a in VALUES.items()}))  # noqa: S307
    assert isinstance(got, np.ndarray), type(got)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_gradients_through_the_operators_match_tf_gradient_tape():
    tf = pytest.importorskip("tensorflow")
    v0, m = VALUES["v"], np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)

    def loss(v, lib_sum, cast):
        return lib_sum((abs(v) + v ** 2 + (v @ m) * 3.0 + 2.0 ** v - v % 1.5 + 1.0 // v) * cast(v > 0.0))

    tv = tf.Variable(v0)
    with tf.GradientTape() as tape:
        out = loss(tv, tf.reduce_sum, lambda c: tf.cast(c, tf.float32))
    want = tape.gradient(out, tv).numpy()
    fv = fk.Variable(v0)
    with GradientTape() as tape:
        out = loss(fv, fk.ops.sum, lambda c: fk.ops.cast(c, "float32"))
    np.testing.assert_allclose(np.asarray(tape.gradient(out, fv)), want, rtol=1e-5)


def _gated(K):
    class Gated(K.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 3), initializer="random_normal", name="w")

        def call(self, x):
            mask = K.ops.cast((self.w > 0) & ~(self.w >= 0.5), x.dtype)
            return ((x @ self.w) + x @ (abs(self.w) * mask) + K.ops.sum(self.w ** 2, axis=0)
                    - K.ops.cast(0.0 >= self.w[0], x.dtype))

    return Gated


def test_layer_using_weight_operators_predicts_and_trains_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = rng.normal(size=(8, 3)).astype(np.float32)
    models = []
    for K in (keras, fk):
        model = K.Sequential([K.Input((4,)), _gated(K)()])
        model.set_weights([w])
        model.compile(K.optimizers.SGD(0.1), "mse")
        models.append(model)
    want, got = (np.asarray(m.predict(x, verbose=0)) for m in models)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for m in models:
        m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(models[1].get_weights()[0], models[0].get_weights()[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(models[1].get_weights()[0], w)
