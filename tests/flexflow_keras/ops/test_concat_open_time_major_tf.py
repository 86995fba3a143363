"""Concatenating along axis 0 a time-major tensor of an open length (Input((None, 3)) transposed to
(time, batch, 3)) joins time steps, as in TensorFlow: the batch-axis ShapeError (1ea35f2) refused it at
the call, since both dims read None while the graph is built. A batch-first tensor with an open length
joined along its batch is still that error, when the graph is recorded at the data's length."""

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras.errors import ShapeError

X = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")


def _time_major(lib):
    i = lib.Input((None, 3))
    t = lib.ops.transpose(i, (1, 0, 2))
    joined = lib.ops.concatenate([t, t * 2.0], axis=0)
    return lib.Model(i, lib.ops.transpose(joined, (1, 0, 2)))


def test_time_major_open_length_concat_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    got = _time_major(ff).predict(X, verbose=0)
    want = _time_major(tf.keras).predict(X, verbose=0)
    assert got.shape == want.shape == (2, 10, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_batch_first_open_length_concat_on_the_batch_is_still_the_error():
    i = ff.Input((None, 3))
    model = ff.Model(i, ff.ops.concatenate([i, i * 2.0], axis=0))
    with pytest.raises(ShapeError, match="axis 0 is the batch"):
        model.predict(X, verbose=0)
