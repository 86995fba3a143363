"""RNN layers' get_initial_state (the TensorFlow text-generation tutorial starts its GRU from it): zeros of
(batch, units) per state, for an int batch size, ops.shape(x)[0], or a tensor whose batch it is."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import layers, ops


def test_shapes_per_layer():
    assert [s.shape for s in layers.GRU(5).get_initial_state(3)] == [(3, 5)]
    assert [s.shape for s in layers.LSTM(4).get_initial_state(2)] == [(2, 4), (2, 4)]
    assert [s.shape for s in layers.RNN(layers.LSTMCell(3)).get_initial_state(2)] == [(2, 3), (2, 3)]
    assert not np.asarray(layers.SimpleRNN(2).get_initial_state(np.ones((6, 4, 1)))[0]).any()
    with pytest.raises(ValueError, match="batch size"):
        layers.GRU(2).get_initial_state("four")


def test_a_scalar_tensor_is_the_batch_size():
    # tf.shape(x)[0] of an eager x (the tutorial's custom train_step, run eagerly): a 0-d integer tensor
    from flexflow_keras.ops.eager_tensor import eager

    assert [s.shape for s in layers.GRU(5).get_initial_state(eager(np.array(3, np.int32)))] == [(3, 5)]
    assert [s.shape for s in layers.LSTM(2).get_initial_state(np.array(4, np.int64))] == [(4, 2), (4, 2)]


def test_the_text_generation_tutorial_pattern():
    class Generator(keras.Model):
        def __init__(self):
            super().__init__()
            self.embedding = layers.Embedding(20, 4)
            self.gru = layers.GRU(6, return_sequences=True, return_state=True)
            self.dense = layers.Dense(20)

        def call(self, x, states=None, return_state=False):
            x = self.embedding(x)
            if states is None:
                states = self.gru.get_initial_state(ops.shape(x)[0])
            x, state = self.gru(x, initial_state=states)
            x = self.dense(x)
            return (x, state) if return_state else x

    model = Generator()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.default_rng(0).integers(0, 20, (16, 5))
    hist = model.fit(x, np.roll(x, -1, axis=1), epochs=3, batch_size=8, verbose=0).history["loss"]
    assert hist[-1] < hist[0]
    logits, state = model(x[:2], return_state=True)
    assert np.asarray(logits).shape == (2, 5, 20) and np.asarray(state).shape == (2, 6)
