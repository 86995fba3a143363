"""Arithmetic operators on weights inside a custom layer's call(): graph ops that compute and train."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.ops.graph import KerasTensor, Variable


class _Scaled(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="w")
        self.s = self.add_weight(shape=(1,), initializer="ones", name="s")
        self.b = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="b")

    def call(self, x):
        return x * (self.w / self.s) - 2.0 * self.b + (-self.b) ** 2


def test_operators_on_weights_are_symbolic_inside_call():
    seen = {}

    class Probe(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            for name, value in (("add", self.w + self.w), ("rsub", 1.0 - self.w), ("mul", self.w * 2),
                                ("div", self.w / 2), ("neg", -self.w), ("pow", self.w ** 2), ("abs", abs(self.w))):
                seen[name] = value
            return x

    Probe()(keras.Input((3,)))
    assert all(isinstance(v, KerasTensor) and tuple(v.shape) == (3,) for v in seen.values()), seen


def test_values_match_numpy_and_the_weights_train():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = x * np.array([0.5, -1.0, 2.0, 0.0], np.float32) + 0.3
    model = keras.Sequential([keras.Input((4,)), _Scaled()])
    layer = model.layers[0]
    got = {v.name.split("/")[-1]: np.asarray(a) for v, a in zip(layer.weights, layer.get_weights(), strict=True)}
    w, s, b = got["w"], got["s"], got["b"]
    np.testing.assert_allclose(model.predict(x, verbose=0), x * (w / s) - 2 * b + b ** 2, rtol=1e-5, atol=1e-6)
    model.compile(keras.optimizers.Adam(0.05), "mse")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=5, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * before
    after = {v.name.split("/")[-1]: np.asarray(a) for v, a in zip(layer.weights, layer.get_weights(), strict=True)}
    assert not np.allclose(after["s"], s) and not np.allclose(after["b"], b)


def test_eager_operators_compute_on_the_value():
    v = Variable("w", (3,), initializer=np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(np.asarray(v * 2), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(np.asarray(1.0 / v), [1.0, 0.5, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(-v), [-1.0, -2.0, -3.0])
    with pytest.raises(TypeError):
        v + "a"


def test_softmax_of_a_weight_in_call_reads_its_ndim():
    """keras.io's neural decision tree: ``keras.activations.softmax(self.pi)`` on a [leaves, classes] weight."""

    class Leaves(keras.layers.Layer):
        def build(self, input_shape):
            self.pi = self.add_weight(shape=(4, 3), initializer="random_normal", name="pi")

        def call(self, x):
            return keras.ops.matmul(x, keras.activations.softmax(self.pi))

    layer = Leaves()
    inp = keras.Input((4,))
    model = keras.Model(inp, layer(inp))
    assert layer.pi.ndim == 2
    x = np.random.default_rng(0).random((2, 4)).astype("float32")
    pi = layer.pi.numpy()
    want = x @ (np.exp(pi) / np.exp(pi).sum(-1, keepdims=True))
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-5)
