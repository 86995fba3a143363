"""A layer owns the Keras Variables assigned to its attributes, as Keras 3's tracker does: keras.io's Swin
Transformer keeps ``self.relative_position_index = keras.Variable(..., trainable=False)`` and an attention
mask Variable; tf.keras lists them in `weights` (set_weights of tf.keras' weights failed on the count), and
a trainable ``keras.Variable`` attribute is trained by fit (it was left at its initial value, silently).
A raw ``tf.Variable`` attribute is not a Keras weight, as on TensorFlow."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.keras_alias import _TensorFlow  # noqa: E402

pytestmark = pytest.mark.tf
fftf = _TensorFlow("tensorflow")


def _layer(K, T):
    class Owner(K.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.shift = K.Variable(np.full((2,), 0.5, "float32"), trainable=False)
            self.raw = T.Variable(np.zeros((3,), "float32"), trainable=False)
            self.scales = [K.Variable(np.ones((4,), "float32"))]
            self.table = {"offsets": K.Variable(np.arange(5, dtype="float32"), trainable=False)}

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], 2), name="kernel")
            self.bias = K.Variable(np.zeros((6,), "float32"))

        def call(self, x):
            y = K.ops.matmul(x, self.kernel) * self.scales[0][:2] + self.bias[1:3] + self.shift
            return y + self.table["offsets"][:2] + self.raw[:2]

    return Owner()


def _model(K, T):
    inp = K.Input((3,))
    layer = _layer(K, T)
    return K.Model(inp, layer(inp)), layer


def test_keras_variable_attributes_are_weights_as_in_tf_keras():
    (ref, rl), (got, gl) = _model(tk, tf), _model(ff, fftf)
    assert [(tuple(w.shape), w.trainable) for w in gl.weights] == \
           [(tuple(w.shape), w.trainable) for w in rl.weights]
    assert [tuple(w.shape) for w in gl.trainable_weights] == [(4,), (3, 2), (6,)]
    assert [tuple(w.shape) for w in gl.non_trainable_weights] == [(2,), (5,)]
    assert len(got.get_weights()) == len(ref.get_weights()) == 5


def test_a_trainable_keras_variable_attribute_trains_as_in_tf_keras():
    (ref, _), (got, _) = _model(tk, tf), _model(ff, fftf)
    rng = np.random.RandomState(0)
    ws = [rng.randn(*np.shape(w)).astype("float32") for w in ref.get_weights()]
    ref.set_weights(ws)
    got.set_weights(ws)
    x = rng.rand(8, 3).astype("float32")
    y = rng.rand(8, 2).astype("float32")
    np.testing.assert_allclose(got.predict(x, verbose=0), ref.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for m, K in ((ref, tk), (got, ff)):
        m.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
        m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for a, b, w in zip(got.get_weights(), ref.get_weights(), ws, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert a.shape != (4,) or not np.allclose(a, w)  # the list's Variable moved
