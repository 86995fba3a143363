"""tf.cast of a complex value under the runner, against TensorFlow 2.21: keras.io's
mlp_image_classification FNet reads its Fourier mix as
``tf.cast(tf.signal.fft2d(tf.cast(x, tf.complex64)), dtype=tf.dtypes.float32)``, TensorFlow's real part.
Inside a model that cast of the (real, imag) pair was a TypeError ('float() argument must be ... not
SymbolicComplex'); eagerly NumPy warned ComplexWarning where TensorFlow is silent."""

import warnings

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
        def call(self, x):
            if kind == "fnet":  # keras.io's FNetLayer, as written
                return x + tfm.cast(tfm.signal.fft2d(tfm.cast(x, dtype=tfm.dtypes.complex64)),
                                    dtype=tfm.dtypes.float32)
            z = tfm.cast(tfm.signal.fft(tfm.complex(x, x * 0.5)), tfm.complex128)  # complex to complex
            return x + tfm.cast(tfm.math.imag(z) + tfm.cast(z, tfm.float64), "float32")
    return Block()


def _model(lib, tfm, kind):
    inp = lib.Input((6, 8))
    h = lib.layers.Dense(8, activation="tanh")(inp)
    h = _block(lib, tfm, kind)(h)
    return lib.Model(inp, lib.layers.Dense(4)(h))


@pytest.mark.parametrize("kind", ["fnet", "complex128"])
def test_cast_in_a_model_predicts_and_trains_as_tf_keras(kind):
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


def test_eager_complex_cast_is_the_real_part_without_a_warning():
    cplx = (np.random.RandomState(3).randn(2, 3) + 1j * np.random.RandomState(4).randn(2, 3)).astype(np.complex64)
    for dtype in ("float32", "float64", "int32"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours = np.asarray(FFTF.cast(cplx, dtype))
        theirs = tf.cast(cplx, dtype).numpy()
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
