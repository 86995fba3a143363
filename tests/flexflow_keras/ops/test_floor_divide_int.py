"""keras.ops.floor_divide / mod keep integers integers of Keras' result dtype (they returned floats, mod
even float64), eager and in a model feeding an Embedding; and the runner's tf.math.floordiv / floormod /
mod (keras.io's quotient-remainder embedding), with TensorFlow's floored signs."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers, ops
from flexflow_keras.tf_compat import mapped_call

A = np.array([7, -7, 12, 0, -1], dtype="int64")


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_results_stay_integer(dtype):
    a = A.astype(dtype)
    q, r = np.asarray(ops.floor_divide(a, 5)), np.asarray(ops.mod(a, 5))
    assert q.dtype == r.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(q, np.floor_divide(a, 5))
    np.testing.assert_array_equal(r, np.mod(a, 5))
    np.testing.assert_array_equal(np.asarray(mapped_call("tf.math.floormod")(a, -3)), np.mod(a, -3))
    np.testing.assert_array_equal(np.asarray(mapped_call("tf.math.floordiv")(a, 4)), np.floor_divide(a, 4))
    np.testing.assert_array_equal(np.asarray(mapped_call("tf.math.mod")(a, 4)), np.mod(a, 4))


def test_floats_unchanged():
    x = np.float32([7.5, -7.5])
    np.testing.assert_allclose(np.asarray(ops.floor_divide(x, 2.0)), [3.0, -4.0])
    assert np.asarray(ops.mod(x, 2.0)).dtype == np.float32


def test_quotient_remainder_ids_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    ids = keras.Input((), dtype="int64")
    q, r = layers.Embedding(4, 2), layers.Embedding(4, 2)
    out = layers.Lambda(lambda t: q(ops.floor_divide(t, 4)) * r(ops.mod(t, 4)))(ids)
    model = keras.Model(ids, out)
    x = np.array([0, 5, 15, 10], dtype="int64")
    want = q.get_weights()[0][x // 4] * r.get_weights()[0][x % 4]
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-6)
