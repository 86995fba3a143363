"""``ops.reshape(w, (x.shape[0], -1))`` where x.shape[0] is the batch an Input declared and w holds blocks
a reshape folded from x's samples (k rows per sample): the output has x's rows, as the int gives them in
TensorFlow (numpy_api._rows_of, as for ops.shape(x)[0]). The -1 was resolved from w's own rows, a silent
(24, 64) where tf.keras gives (6, 256)."""

import numpy as np
import pytest

import flexflow_keras

X = np.random.RandomState(0).randn(12, 8, 8, 4).astype("float32")


def _model(lib):
    inp = lib.Input((8, 8, 4), batch_size=6)
    w = lib.ops.reshape(inp, (-1, 4, 4, 4))  # (24, 4, 4, 4): 4 windows per sample
    flat = lib.ops.reshape(w, (inp.shape[0], -1))  # x's 6 rows
    return lib.Model(inp, lib.layers.Dense(3)(flat)), flat


def test_declared_batch_of_another_tensor_unfolds_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, flat = _model(flexflow_keras)
    theirs, tflat = _model(keras)
    assert tuple(flat.shape) == tuple(tflat.shape) == (6, 256)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.predict(X, batch_size=6, verbose=0), theirs.predict(X, batch_size=6, verbose=0),
                               rtol=1e-5, atol=1e-5)


def test_own_declared_batch_keeps_its_rows():
    inp = flexflow_keras.Input((8, 8, 4), batch_size=6)
    w = flexflow_keras.ops.reshape(inp, (-1, 4, 4, 4))
    assert tuple(flexflow_keras.ops.reshape(w, (w.shape[0], -1)).shape) == (24, 64)
