"""A `keras.Variable` passed straight to a `keras.ops` function as its input (not as a kernel): under a
GradientTape it gets the gradient tf.GradientTape gives (it was None for the window ops, whose eager path
read a copy of the value), and inside a layer's call() the op reads the weight at every step (it was
computed once, at build time, into a constant)."""

import numpy as np
import pytest

import flexflow_keras as fk
from flexflow_keras.ops.tape import GradientTape

_RNG = np.random.default_rng(7)
_X = _RNG.normal(size=(2, 6, 5, 3)).astype(np.float32)
_DEPTH = _RNG.normal(size=(3, 3, 3, 2)).astype(np.float32)
_CONV = _RNG.normal(size=(3, 2, 3, 4)).astype(np.float32)
_TRANS = _RNG.normal(size=(3, 3, 4, 3)).astype(np.float32)
_POINT = _RNG.normal(size=(1, 1, 6, 4)).astype(np.float32)

CASES = {
    "conv": lambda K, v: K.ops.conv(v, _CONV, strides=(2, 1), padding="same"),
    "conv_1d": lambda K, v: K.ops.conv(v[0], _CONV[0], padding="valid"),
    "depthwise_conv": lambda K, v: K.ops.depthwise_conv(v, _DEPTH, padding="same"),
    "depthwise_conv_strided": lambda K, v: K.ops.depthwise_conv(v, _DEPTH, strides=2),
    "conv_transpose": lambda K, v: K.ops.conv_transpose(v, _TRANS, strides=2, padding="same"),
    "separable_conv": lambda K, v: K.ops.separable_conv(v, _DEPTH, _POINT, padding="same"),
    "max_pool": lambda K, v: K.ops.max_pool(v, 2),
    "average_pool": lambda K, v: K.ops.average_pool(v, 2, padding="same"),
    "relu": lambda K, v: K.ops.relu(v),
    "transpose": lambda K, v: K.ops.transpose(v, (0, 3, 1, 2)),
    "cumsum": lambda K, v: K.ops.cumsum(v, axis=1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_of_a_variable_input_matches_tf_gradient_tape(case):
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    fn = CASES[case]
    weights = None
    tv = keras.Variable(_X)
    with tf.GradientTape() as tape:
        y = fn(keras, tv)
        weights = np.cos(np.arange(np.prod(y.shape), dtype=np.float32)).reshape(y.shape)
        loss = tf.reduce_sum(y * weights)
    want = tape.gradient(loss, tv.value).numpy()
    fv = fk.Variable(_X)
    with GradientTape() as tape:
        loss = fk.ops.sum(fn(fk, fv) * weights)
    got = tape.gradient(loss, fv)
    assert got is not None, f"{case}: no gradient for the Variable"
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def _image_layer(K):
    class LearnedImage(K.layers.Layer):
        """Adds a depthwise-filtered, transposed-convolved learned image to its input."""

        def build(self, input_shape):
            self.image = self.add_weight(shape=(1, 4, 4, 2), initializer="random_normal", name="image")
            self.depth = self.add_weight(shape=(3, 3, 2, 1), initializer="random_normal", name="depth")
            self.up = self.add_weight(shape=(2, 2, 2, 2), initializer="random_normal", name="up")

        def call(self, x):
            d = K.ops.depthwise_conv(self.image, self.depth, padding="same")
            return x + K.ops.conv_transpose(d, self.up, strides=2)

    return LearnedImage


def test_a_weight_as_op_input_in_call_trains_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(1)
    init = [rng.normal(size=s).astype(np.float32) for s in ((1, 4, 4, 2), (3, 3, 2, 1), (2, 2, 2, 2))]
    x = rng.normal(size=(4, 8, 8, 2)).astype(np.float32)
    y = rng.normal(size=(4, 8, 8, 2)).astype(np.float32)
    models = []
    for K in (keras, fk):
        model = K.Sequential([K.Input((8, 8, 2)), _image_layer(K)()])
        model.set_weights(init)
        model.compile(K.optimizers.SGD(0.05), "mse")
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        models.append(model)
    for want, got in zip(models[0].get_weights(), models[1].get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(models[1].predict(x, verbose=0), models[0].predict(x, verbose=0), rtol=1e-5,
                               atol=1e-5)
