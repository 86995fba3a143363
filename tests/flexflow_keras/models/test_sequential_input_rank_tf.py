"""Keras 3's input rank rule on a Sequential built on an Input (Keras runs it through its Functional, whose
`_adjust_input_rank` squeezes a trailing 1 or adds a missing one). TensorFlow's autoencoder tutorial
reshapes its noisy images to (N, 28, 28, 1, 1) and fits a subclassed Denoise model whose encoder is
``Sequential([Input((28, 28, 1)), Conv2D, ...])``: tf.keras 3.15 trains it, ours stopped on "Input 0 of
layer 'sequential' is incompatible: expected shape (None, 28, 28, 1), got shape (None, 28, 28, 1, 1)"."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("tensorflow.keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

rs = np.random.RandomState(0)
X = rs.rand(8, 6, 6, 1).astype("float32")
KERNEL = rs.randn(3, 3, 1, 1).astype("float32") * 0.5


def _encoder(lib):
    seq = lib.Sequential([lib.layers.Input((6, 6, 1)), lib.layers.Conv2D(1, 3, padding="same")])
    seq.set_weights([KERNEL, np.zeros(1, "float32")])
    return seq


def _denoise(lib):
    class Denoise(lib.Model):
        def __init__(self):
            super().__init__()
            self.encoder = _encoder(lib)

        def call(self, x):
            return self.encoder(x)

    return Denoise()


@pytest.mark.parametrize("data", [X[..., None], X[..., 0]], ids=["extra_trailing_1", "missing_trailing_1"])
def test_eager_call_and_predict_adjust_the_rank(data):
    want = np.asarray(_encoder(tf_keras)(data))
    np.testing.assert_allclose(np.asarray(_encoder(ff)(data)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_encoder(ff).predict(data, verbose=0), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("data", [X[..., None], X[..., 0]], ids=["extra_trailing_1", "missing_trailing_1"])
def test_subclassed_model_fits_through_the_sequential(data):
    results = []
    for lib in (ff, tf_keras):
        model = _denoise(lib)
        model.compile(lib.optimizers.SGD(0.1), loss="mse")
        hist = model.fit(data, X, epochs=2, batch_size=4, shuffle=False, verbose=0)
        results.append((hist.history["loss"], model.get_weights()[0]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)


def test_other_ranks_still_name_the_fix():
    with pytest.raises(ValueError, match=r"expected shape \(None, 6, 6, 1\), got shape \(2, 6, 6, 2\)"):
        _encoder(ff)(np.zeros((2, 6, 6, 2), "float32"))
