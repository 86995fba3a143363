"""tf.linalg.matrix_transpose / tf.linalg.adjoint under the runner, against TensorFlow 2.21. keras.io's
mlp_image_classification transposes tokens and channels with ``tf.linalg.matrix_transpose`` in its
MLP-Mixer and gMLP layers (refused as raw TensorFlow before): such a layer must predict and train as tf.keras
from the same weights, and eager values (int, float, complex with conjugate) equal TensorFlow's."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.random.RandomState(0).randn(12, 6, 8).astype(np.float32)
Y = np.random.RandomState(1).randn(12, 6, 4).astype(np.float32)


def _block(lib, tfm, kind):
    class Block(lib.layers.Layer):
        def __init__(self):
            super().__init__()
            if kind in ("mixer", "adjoint"):
                self.mix = lib.layers.Dense(6)  # across tokens, on the transposed tensor

        def call(self, x):
            if kind == "mixer":
                return x + tfm.linalg.matrix_transpose(self.mix(tfm.linalg.matrix_transpose(x)))
            if kind == "adjoint":
                return x + tfm.linalg.adjoint(self.mix(tfm.linalg.adjoint(x)))
            z = tfm.signal.fft2d(tfm.cast(x, tfm.complex64))  # conjugate transpose of a complex value
            zt = tfm.linalg.matrix_transpose(z, conjugate=True)
            return x + tfm.linalg.matrix_transpose(tfm.math.imag(zt) + tfm.math.real(zt))
    return Block()


def _model(lib, tfm, kind):
    inp = lib.Input((6, 8))
    h = lib.layers.Dense(8, activation="tanh")(inp)
    h = _block(lib, tfm, kind)(h)
    return lib.Model(inp, lib.layers.Dense(4)(h))


@pytest.mark.parametrize("kind", ["mixer", "adjoint", "complex-conjugate"])
def test_in_a_model_predicts_and_trains_as_tf_keras(kind):
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


def test_eager_values_and_dtypes_equal_tensorflow():
    real = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    cplx = (np.random.RandomState(3).randn(2, 3, 4) + 1j * np.random.RandomState(4).randn(2, 3, 4)).astype(
        np.complex64)
    for value in (real, real.astype(np.float32), cplx):
        for conjugate in (False, True):
            ours = FFTF.linalg.matrix_transpose(value, conjugate=conjugate)
            theirs = tf.linalg.matrix_transpose(value, conjugate=conjugate)
            assert np.asarray(ours).dtype == theirs.numpy().dtype
            np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
        np.testing.assert_array_equal(np.asarray(FFTF.linalg.adjoint(value)), tf.linalg.adjoint(value).numpy())


def test_a_vector_is_refused_as_tensorflow_refuses_it():
    with pytest.raises(ValueError, match=r"should be a \(batch\) matrix with rank >= 2"):
        tf.linalg.matrix_transpose(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"should be a \(batch\) matrix with rank >= 2.*use tf.transpose"):
        FFTF.linalg.matrix_transpose(np.array([1.0, 2.0], np.float32))
