"""A Reshape of an open (None) time dim, as keras.io's DeepSpeech2 writes it (``Reshape((-1, 193, 1))`` after
``Input((None, 193))``), and the batch size cast to a number as a shape entry (its CTC loss'
``tf.ones(shape=(tf.cast(tf.shape(y_true)[0], "int64"), 1))``); Keras 3's shapes."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers, ops
from flexflow_keras.errors import ShapeError


def test_reshape_keeps_an_open_dim_open_and_runs_on_each_length():
    inputs = keras.Input((None, 6))
    x = layers.Reshape((-1, 3, 2))(inputs)
    assert tuple(x.shape) == (None, None, 3, 2)  # Keras 3: (None, None, 3, 2)
    y = layers.Reshape((-1, 6))(x)
    model = keras.Model(inputs, layers.Dense(1, use_bias=False, kernel_initializer="ones")(y))
    for length in (4, 5):
        data = np.arange(2 * length * 6, dtype=np.float32).reshape(2, length, 6)
        np.testing.assert_allclose(model.predict(data, verbose=0), data.sum(-1, keepdims=True), rtol=1e-6)
    with pytest.raises(ValueError, match="at most one -1"):
        layers.Reshape((-1, -1, 2))(inputs)


def test_the_batch_size_cast_to_a_number_is_a_shape_entry():
    x = keras.Input((None, 4))
    batch = ops.cast(ops.cast(ops.shape(x)[0], "int64"), "int32")
    ones = ops.ones((batch, 1), dtype="int64")
    assert tuple(ones.shape) == (None, 1) and ones.dtype == "int64"
    steps = ops.cast(ops.shape(x)[1], "int64")
    model = keras.Model(x, steps * ops.ones(shape=(ops.cast(ops.shape(x)[0], "int64"), 1), dtype="int64"))
    assert model.predict(np.zeros((3, 7, 4), np.float32), verbose=0).tolist() == [[7], [7], [7]]
    with pytest.raises(ShapeError, match="symbolic tensor"):
        ops.ones((ops.sum(x), 1))
