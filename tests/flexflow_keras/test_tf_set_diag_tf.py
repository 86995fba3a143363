"""tf.linalg.set_diag under the runner (tf_linalg_ops.set_diag), against TensorFlow 2.21: keras.io's
barlow_twins zeroes the diagonal of its cross-correlation matrix with ``tf.linalg.set_diag(c, zeros)`` in its
loss; it stopped with 'tf.linalg.set_diag: raw TensorFlow is not supported'. Square, wide, tall and
batched matrices, eagerly and on a model's symbolic tensors (trained through), and TensorFlow's errors."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
rng = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 3), (2, 2, 4, 3)])
def test_eager_values_equal_tensorflow(shape):
    x = rng.normal(size=shape).astype("float32")
    d = rng.normal(size=shape[:-2] + (min(shape[-2:]),)).astype("float32")
    ours = np.asarray(FFTF.linalg.set_diag(x, d))
    np.testing.assert_array_equal(ours, tf.linalg.set_diag(x, d).numpy())
    assert ours.dtype == np.float32
    ints = np.asarray(FFTF.linalg.set_diag(x.astype("int32"), d.astype("int32")))
    np.testing.assert_array_equal(ints, tf.linalg.set_diag(x.astype("int32"), d.astype("int32")).numpy())


def _model(lib, tfm):
    class OffDiagonal(lib.layers.Layer):
        def call(self, x):
            outer = tfm.matmul(x, x, transpose_b=True)  # (batch, 4, 4)
            return tfm.linalg.set_diag(outer, tfm.zeros_like(x[:, :, 0]))

    inp = lib.Input((4, 3))
    h = lib.layers.Dense(3, activation="tanh")(inp)
    return lib.Model(inp, lib.layers.Dense(2)(lib.layers.Flatten()(OffDiagonal()(h))))


def test_in_a_model_predicts_and_trains_as_tf_keras():
    x = rng.normal(size=(8, 4, 3)).astype("float32")
    y = rng.normal(size=(8, 2)).astype("float32")
    ours, theirs = _model(ff, FFTF), _model(tf.keras, tf)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for m, lib in ((ours, ff), (theirs, tf.keras)):
        m.compile(lib.optimizers.SGD(0.05), "mse")
    h1 = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)


def test_a_wrong_diagonal_and_other_diagonals_are_refused():
    x = np.zeros((3, 4), "float32")
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.linalg.set_diag(x, np.zeros(4, "float32"))
    with pytest.raises(InvalidArgumentError, match=r"diagonal must have shape input.shape\[:-2\] \+ \[3\]"):
        FFTF.linalg.set_diag(x, np.zeros(4, "float32"))
    with pytest.raises(RawTensorFlowError, match="k=0 only"):
        FFTF.linalg.set_diag(x, np.zeros(3, "float32"), k=1)
