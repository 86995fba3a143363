"""tf.signal's Fourier transforms and TensorFlow's complex numbers on a model's symbolic tensors under the
runner (tf_signal_graph.py), against TensorFlow 2.21: keras.io's FNet mixes tokens with
``tf.math.real(tf.signal.fft2d(tf.cast(x, tf.complex64)))`` in a layer's call(); the model must predict and
train as tf.keras from the same weights. Open transformed dims are refused naming the fix."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import ArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.random.RandomState(0).randn(16, 6, 8).astype(np.float32)
Y = np.random.RandomState(1).randn(16, 6, 4).astype(np.float32)


def _mixer(lib, tfm, kind):
    class Mix(lib.layers.Layer):
        def call(self, x):
            if kind == "fnet":  # FNet's encoder mixing
                return x + tfm.math.real(tfm.signal.fft2d(tfm.cast(x, tfm.complex64)))
            if kind == "fft-abs":
                return tfm.abs(tfm.signal.fft(tfm.cast(x, tfm.complex64)))
            z = tfm.complex(x, x * 0.5)  # ifft2d of fft2d, imaginary part
            return tfm.math.imag(tfm.signal.ifft2d(tfm.signal.fft2d(z))) + tfm.math.real(tfm.signal.fft2d(z))
    return Mix()


def _model(lib, tfm, kind, input_shape=(6, 8)):
    inp = lib.Input(input_shape)
    h = lib.layers.Dense(8, activation="tanh")(inp)
    h = _mixer(lib, tfm, kind)(h)
    return lib.Model(inp, lib.layers.Dense(4)(h))


@pytest.mark.parametrize("kind", ["fnet", "fft-abs", "complex-ifft2d"])
def test_fourier_mixing_in_a_model_predicts_and_trains_as_tf_keras(kind):
    ours, theirs = _model(ff, FFTF, kind), _model(tf.keras, tf, kind)
    weights = [(np.random.RandomState(2).randn(*w.shape) * 0.3).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=2e-4, atol=2e-5)
    ours.compile(ff.optimizers.SGD(0.01), "mse")
    theirs.compile(tf.keras.optimizers.SGD(0.01), "mse")
    h1 = ours.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_open_transformed_dims_are_refused_naming_the_fix():
    with pytest.raises(ArgumentError, match=r"fixed length, e.g. keras.Input\(shape=\(MAX_LENGTH,\)\)"):
        _model(ff, FFTF, "fnet", input_shape=(None, 8))


def test_a_real_graph_tensor_is_refused_as_tensorflow_does():
    inp = ff.Input((6, 8))
    with pytest.raises(ArgumentError, match="expects a complex tensor"):
        FFTF.signal.fft2d(inp)
