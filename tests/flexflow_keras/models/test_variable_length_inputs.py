"""Functional models on Input(shape=(None, ...)): variable-length sequences into Embedding and recurrent
layers run at the data's sample shape, share their weights across shapes, and match tf.keras."""

import numpy as np
import pytest

import flexflow_keras as keras


def _model(lib, steps):
    inputs = lib.Input(shape=(steps,), dtype="int32")
    x = lib.layers.Embedding(20, 4)(inputs)
    x = lib.layers.Bidirectional(lib.layers.LSTM(3, return_sequences=True))(x)
    x = lib.layers.GRU(3)(x)
    return lib.Model(inputs, lib.layers.Dense(1, activation="sigmoid")(x))


@pytest.fixture(scope="module")
def open_model():
    return _model(keras, None)


def test_predict_at_several_lengths_matches_fixed_length_models(open_model):
    rng = np.random.default_rng(0)
    for steps in (5, 9):
        x = rng.integers(0, 20, (6, steps))
        fixed = _model(keras, steps)
        fixed.set_weights(open_model.get_weights())
        np.testing.assert_allclose(open_model.predict(x, verbose=0), fixed.predict(x, verbose=0), rtol=1e-5,
                                   atol=1e-6)


def test_training_updates_the_shared_weights(open_model):
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 20, (32, 7)), rng.integers(0, 2, (32, 1)).astype("float32")
    open_model.compile("adam", "binary_crossentropy")
    before = [w.copy() for w in open_model.get_weights()]
    open_model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    after = open_model.get_weights()
    assert all(not np.allclose(a, b) for a, b in zip(after, before, strict=True))
    assert open_model.predict(rng.integers(0, 20, (3, 4)), verbose=0).shape == (3, 1)


@pytest.mark.tf
def test_matches_tf_keras_on_copied_weights(open_model):
    tf = pytest.importorskip("tensorflow")
    theirs = _model(tf.keras, None)
    theirs.set_weights(open_model.get_weights())
    x = np.random.default_rng(2).integers(0, 20, (4, 6))
    np.testing.assert_allclose(open_model.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4,
                               atol=1e-5)


def test_sequential_with_an_open_input_dimension_trains_and_predicts():
    model = keras.Sequential([keras.Input((None,), dtype="int32"), keras.layers.Embedding(10, 4),
                              keras.layers.LSTM(3), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    rng = np.random.default_rng(3)
    model.fit(rng.integers(0, 10, (16, 5)), rng.random((16, 1)), epochs=1, verbose=0)
    assert model.predict(rng.integers(0, 10, (2, 3)), verbose=0).shape == (2, 1)
