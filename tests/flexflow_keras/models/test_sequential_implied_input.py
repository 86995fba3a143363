"""A Sequential whose input shape came from its first data (or build()) runs at other sequence lengths, as
Keras runs its layers (keras-io's NER transformer trains at one length and predicts at another through a
Sequential inside a subclassed model); one built on an explicit Input keeps its shape."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers
from flexflow_keras.errors import ShapeError


def _ffn():
    return keras.Sequential([layers.Dense(6, activation="relu"), layers.Dense(3)])


def test_an_implied_input_takes_other_lengths_with_the_same_weights():
    rng = np.random.default_rng(0)
    ffn = _ffn()
    ffn.compile("adam", "mse")
    ffn.fit(rng.random((16, 10, 4)), rng.random((16, 10, 3)), epochs=1, verbose=0)
    short = rng.random((2, 7, 4)).astype("float32")
    (w1, b1, w2, b2) = ffn.get_weights()
    want = np.maximum(short @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(ffn.predict(short, verbose=0), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ffn(short)), want, rtol=1e-5, atol=1e-6)
    ffn.fit(rng.random((8, 5, 4)), rng.random((8, 5, 3)), epochs=1, verbose=0)  # trains at another length too
    with pytest.raises(ShapeError):
        ffn(np.ones((2, 7, 5), "float32"))  # the features stay fixed


def test_inside_a_subclassed_model():
    class Tagger(keras.Model):
        def __init__(self):
            super().__init__()
            self.emb = layers.Embedding(50, 8)
            self.ffn = _ffn()

        def call(self, x):
            return self.ffn(self.emb(x))

    model = Tagger()
    model.compile("adam", "mse")
    model.fit(np.random.randint(0, 50, (32, 20)), np.random.rand(32, 20, 3), epochs=1, verbose=0)
    assert model.predict(np.random.randint(0, 50, (1, 8)), verbose=0).shape == (1, 8, 3)


def test_an_explicit_input_keeps_its_shape():
    ffn = keras.Sequential([keras.Input((10, 4)), layers.Dense(3)])
    with pytest.raises(ValueError, match="incompatible|expects"):
        ffn(np.ones((2, 7, 4), "float32"))


def test_adding_a_layer_forgets_the_graphs_recorded_for_other_lengths():
    s = keras.Sequential([layers.Dense(2)])
    s.predict(np.ones((4, 3, 5)), verbose=0)
    s.predict(np.ones((4, 7, 5)), verbose=0)
    s.add(layers.Dense(1))
    assert s.predict(np.ones((4, 7, 5)), verbose=0).shape == (4, 7, 1)


def test_an_embedding_stack_takes_other_sequence_lengths():
    s = keras.Sequential([layers.Embedding(50, 4), layers.GlobalAveragePooling1D(), layers.Dense(1)])
    s.compile("adam", "mse")
    x = np.random.default_rng(0).integers(0, 50, (8, 20))
    s.fit(x, np.zeros(8), epochs=1, verbose=0)
    emb, (w, b) = s.get_weights()[0], s.get_weights()[1:]
    want = emb[x[:, :8]].mean(axis=1) @ w + b
    np.testing.assert_allclose(s.predict(x[:, :8], verbose=0), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(s(x[:, :8])), want, rtol=1e-5, atol=1e-6)
