"""Sequential.build(shape) gives the model the Input dtype Keras 3 gives it, its first layer's compute dtype:
text for TextVectorization and StringLookup, int64 for IntegerLookup (models/sequential._build_dtype).
Building Sequential([TextVectorization, Dense, ...]) with build((None, 1)) made a float input, and fit on
text then stopped ("could not convert string to float")."""

import numpy as np
import pytest

import flexflow_keras as ffk

TEXTS = np.array([["red green"], ["blue"], ["green green blue"], ["red"]])
Y = np.array([[1.0], [0.0], [1.0], [0.0]], "float32")


def _model(keras):
    vec = keras.layers.TextVectorization(max_tokens=6, output_mode="tf_idf")
    vec.adapt(TEXTS.ravel())
    model = keras.Sequential([vec, keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)])
    model.build((None, 1))
    model.compile("sgd", "mse")
    return model


def test_build_takes_the_first_layers_dtype_without_tf():
    model = _model(ffk)
    assert model._input_layer.dtype == "string"
    before = model.predict(TEXTS, verbose=0)
    model.fit(TEXTS, Y, epochs=1, verbose=0)
    assert not np.allclose(model.predict(TEXTS, verbose=0), before)
    lookup = ffk.Sequential([ffk.layers.IntegerLookup(vocabulary=[3, 5]), ffk.layers.Dense(1)])
    lookup.build((None, 1))
    assert lookup._input_layer.dtype == "int64"
    dense = ffk.Sequential([ffk.layers.Dense(1)])
    dense.build((None, 2))
    assert dense._input_layer.dtype == "float32"


def test_build_then_fit_on_text_as_tf():
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    theirs, ours = _model(keras), _model(ffk)
    ours.set_weights(theirs.get_weights())
    texts = tf.constant(TEXTS)  # tf.keras takes text as tf.string tensors, not NumPy str arrays
    theirs.fit(texts, Y, epochs=2, batch_size=2, verbose=0, shuffle=False)
    ours.fit(TEXTS, Y, epochs=2, batch_size=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(ours.predict(TEXTS, verbose=0), theirs.predict(texts, verbose=0), rtol=1e-5)
