"""tf.one_hot under the runner against TensorFlow 2.21: the result's dtype follows on_value / off_value
(Python ints int32, True bool, strings a string tensor) or `dtype`, with TensorFlow's TypeErrors when they
disagree. ZTM's TensorFlow course notebook 00 one-hot encodes with on_value="We're live!",
off_value="Offline": ours stopped with "could not convert string to float", and gave float32 for integer
on/off values and ignored dtype=tf.int64 when on/off were given."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
IDS = [0, 2, -1, 3, 1]

CASES = [
    {}, {"on_value": 5, "off_value": 0}, {"on_value": 5.0}, {"off_value": -1}, {"on_value": 1, "dtype": "int64"},
    {"on_value": 1, "off_value": 0, "dtype": "int64"}, {"on_value": 2, "dtype": "float32"},
    {"on_value": True, "off_value": False}, {"on_value": np.float64(0.5)}, {"dtype": "int32"},
    {"off_value": np.int64(0), "dtype": "int32"}, {"on_value": np.float64(2), "dtype": "float32"},
    {"on_value": 3.0, "off_value": 1.0, "axis": 0}, {"on_value": np.float64(0.5), "dtype": "int32"},
]


@pytest.mark.parametrize("kwargs", CASES, ids=[str(sorted(c.items())) for c in CASES])
def test_one_hot_values_and_dtype_as_tensorflow(kwargs):
    want = tf.one_hot(IDS, 3, **kwargs)
    got = FFTF.one_hot(IDS, 3, **kwargs)
    assert got.numpy().dtype == want.dtype.as_numpy_dtype and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_string_on_and_off_values_give_a_string_tensor():
    some_list = [0, 1, 2, 3]
    want = tf.one_hot(some_list, depth=4, on_value="We're live!", off_value="Offline")
    got = FFTF.one_hot(some_list, depth=4, on_value="We're live!", off_value="Offline")
    assert got.shape == (4, 4) and [[v.decode() for v in row] for row in want.numpy().tolist()] == got.numpy().tolist()
    assert FFTF.constant(["a"]).numpy().dtype.kind == got.numpy().dtype.kind  # ours' string tensors


@pytest.mark.parametrize("kwargs", [{"on_value": 1.5, "dtype": "int32"}, {"on_value": 1, "off_value": 0.0},
                                    {"on_value": "x"}, {"dtype": "bool"}])
def test_mismatched_dtypes_are_tensorflows_type_error(kwargs):
    with pytest.raises(TypeError):
        tf.one_hot(IDS, 3, **kwargs)
    with pytest.raises(TypeError, match="tf.one_hot"):
        FFTF.one_hot(IDS, 3, **kwargs)


def test_symbolic_indices_in_a_model():
    inp = keras.Input((2,), dtype="int32")
    model = keras.Model(inp, FFTF.one_hot(inp, 4, on_value=2, off_value=-1))
    ids = np.array([[0, 3], [5, 1]], np.int32)
    want = tf.one_hot(ids, 4, on_value=2, off_value=-1).numpy()
    got = np.asarray(model.predict(ids, verbose=0))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
