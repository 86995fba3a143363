"""tf.lookup.StaticHashTable / KeyValueTensorInitializer under the runner (tf_lookup.py): lookups on arrays
with TensorFlow's dtypes and default, and on a string Input inside a layer's call as a host step, with
``ops.shape`` of the strings read from a numeric stand-in (keras.io's mixed-dimension embedding:
``tf.zeros((tf.shape(inputs)[0], dim))``)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, ops
from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.tf_compat import mapped_call

StaticHashTable = mapped_call("tf.lookup.StaticHashTable")
Init = mapped_call("tf.lookup.KeyValueTensorInitializer")


def _table():
    return StaticHashTable(Init(["a", "b", "c"], [0, 1, 1]), default_value=-1)


def test_lookup_on_arrays():
    table = _table()
    out = np.asarray(table.lookup(np.array([["a", "z"], ["c", "b"]], dtype=object)))
    np.testing.assert_array_equal(out, [[0, -1], [1, 1]])
    assert out.dtype == np.int32 and table.size() == 3  # Python ints: int32, as tf.convert_to_tensor
    np.testing.assert_array_equal(np.asarray(table.lookup(np.array([b"b"]))), [1])  # bytes match str keys
    ints = StaticHashTable(Init(np.array([10, 20], "int64"), [0.5, 1.5]), default_value=0.0)
    np.testing.assert_allclose(np.asarray(ints.lookup(np.array([20, 30], "int64"))), [1.5, 0.0])
    with pytest.raises(DataError, match="string keys"):
        _table().lookup(np.array([1, 2]))
    with pytest.raises(ArgumentError, match="same length"):
        Init(["a"], [1, 2])


class Blocks(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.table = _table()

    def call(self, words):
        block = self.table.lookup(words)
        out = ops.zeros((ops.shape(words)[0], 2))
        for b in (0, 1):
            out = out + ops.expand_dims(ops.cast(block == b, "float32"), 1) * (b + 1)
        return out


def test_lookup_and_shape_of_a_string_input_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    words = keras.Input((), dtype="string")
    model = keras.Model(words, Blocks()(words))
    x = np.array(["a", "b", "q", "c"], dtype=object)
    np.testing.assert_allclose(model.predict(x, verbose=0), [[1, 1], [2, 2], [0, 0], [2, 2]])
