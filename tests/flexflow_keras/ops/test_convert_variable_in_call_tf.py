"""``keras.ops.convert_to_tensor(self.w)`` in a layer's call() reads the weight as any op does: in a model,
the graph's read of it (keras.io's FNet PositionEmbedding slices and broadcasts its embeddings this way, and
they were baked in as a constant of their build-time value: set_weights and training never reached them);
eagerly, its value as a GradientTape sees it (a gradient flows to the Variable)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.ops.tape import GradientTape  # noqa: E402

pytestmark = pytest.mark.tf


def _layer_class(K):
    class PositionEmbedding(K.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="embeddings", shape=(input_shape[-2], input_shape[-1]))

        def call(self, inputs):
            shape = K.ops.shape(inputs)
            pe = K.ops.convert_to_tensor(self.w)
            pe = K.ops.slice(pe, (0, 0), (shape[-2], shape[-1]))
            return inputs + K.ops.broadcast_to(pe, shape)

    return PositionEmbedding


def _model(K):
    inp = K.Input((3, 4))
    out = K.layers.Dense(2)(_layer_class(K)()(inp))
    return K.Model(inp, out)


X = np.random.RandomState(0).rand(6, 3, 4).astype("float32")
Y = np.random.RandomState(1).rand(6, 3, 2).astype("float32")


def _weights(model):
    rng = np.random.RandomState(2)
    return [rng.randn(*np.shape(w)).astype("float32") for w in model.get_weights()]


def test_convert_to_tensor_of_a_weight_follows_it_in_a_model():
    ref, got = _model(tk), _model(ff)
    ws = _weights(ref)
    ref.set_weights(ws)
    got.set_weights(ws)
    np.testing.assert_allclose(got.predict(X, verbose=0), ref.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    for m, K in ((ref, tk), (got, ff)):
        m.compile(optimizer=K.optimizers.SGD(0.5), loss="mse")
        m.fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(got.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_convert_to_tensor_of_a_weight_is_differentiated_eagerly():
    v = ff.Variable(np.arange(6, dtype="float32").reshape(2, 3))
    with GradientTape() as tape:
        y = ff.ops.sum(ff.ops.convert_to_tensor(v) ** 2)
    grad = tape.gradient(y, v)
    assert grad is not None
    np.testing.assert_allclose(np.asarray(grad), 2 * np.arange(6, dtype="float32").reshape(2, 3))
