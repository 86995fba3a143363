"""tf.gather with batch_dims under the runner (tf_tensor_basics._gather) against TensorFlow 2.21: values for
batch_dims 1 and 2, negative ones, axes past the batch dims and the default axis, tape gradients, the error
for an axis before the batch dims, and keras.io's masked autoencoder's use: each sample's patches picked by
its own indices inside a layer of a model trained with fit."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)
P = RNG.normal(size=(3, 4, 5, 2)).astype(np.float32)


@pytest.mark.parametrize(("ishape", "high", "axis", "b"), [((3, 6), 4, 1, 1), ((3, 2, 3), 4, 1, 1), ((3, 6), 5, 2, 1),
                                                          ((3, 4, 2), 5, 2, 2), ((3, 2), 2, -1, 1), ((3, 2), 4, None, 1),
                                                          ((3, 4, 3), 2, 3, -1)])
def test_values_equal_tensorflows(ishape, high, axis, b):
    idx = RNG.integers(0, high, ishape)
    want = tf.gather(P, idx, axis=axis, batch_dims=b).numpy()
    got = np.asarray(FFTF.gather(P, idx, axis=axis, batch_dims=b))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_tape_gradients_and_errors():
    idx = RNG.integers(0, 4, (3, 6))
    w = RNG.normal(size=(3, 6, 5, 2)).astype(np.float32)
    ov, tv = keras.Variable(P), tf.Variable(P)
    with FFTF.GradientTape() as tape:
        lo = FFTF.reduce_sum(FFTF.gather(ov * 1.0, idx, axis=1, batch_dims=1) * w)
    with tf.GradientTape() as ttape:
        lt = tf.reduce_sum(tf.gather(tv * 1.0, idx, axis=1, batch_dims=1) * w)
    np.testing.assert_allclose(float(lo), float(lt), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tape.gradient(lo, ov)), ttape.gradient(lt, tv).numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="batch_dims <= axis"):
        FFTF.gather(P, idx, axis=0, batch_dims=1)


def _picker(k, t):
    class Pick(k.layers.Layer):  # each sample's 3 rows of smallest first feature
        def call(self, x, order):
            idx = t.argsort(order, axis=-1)[:, :3]
            return t.gather(x, idx, axis=1, batch_dims=1)

    inp = k.Input((6, 4))
    x = k.layers.Dense(4)(inp)
    return k.Model(inp, k.layers.Dense(1)(k.layers.Flatten()(Pick()(x, inp[:, :, 0]))))


def test_a_model_gathering_per_sample_trains_as_tf_keras():
    x = RNG.normal(size=(8, 6, 4)).astype(np.float32)
    y = RNG.normal(size=(8, 1)).astype(np.float32)
    theirs, ours = _picker(tf.keras, tf), _picker(keras, FFTF)
    ours.set_weights(theirs.get_weights())
    theirs.compile(tf.keras.optimizers.SGD(0.05), loss="mse")
    ours.compile(keras.optimizers.SGD(0.05), loss="mse")
    h1 = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
