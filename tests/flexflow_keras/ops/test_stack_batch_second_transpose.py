"""A stack on axis 0 of symbolic batch-first tensors, transposed to put the batch first again: TensorFlow's
time-series tutorial's autoregressive FeedBack model collects its step predictions in a list, then
``tf.transpose(tf.stack(predictions), [1, 0, 2])``. Trained against tf.keras from the same weights."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import ShapeError
from flexflow_keras.keras_alias import _TensorFlow

tf = _TensorFlow("tensorflow")


def _feedback(k, stack, transpose, steps=3):
    class FeedBack(k.Model):
        def __init__(self):
            super().__init__()
            self.cell = k.layers.LSTMCell(5)
            self.rnn = k.layers.RNN(self.cell, return_state=True)
            self.dense = k.layers.Dense(2)

        def call(self, inputs, training=None):
            x, *state = self.rnn(inputs)
            prediction = self.dense(x)
            predictions = [prediction]
            for _ in range(1, steps):
                x, state = self.cell(prediction, states=state, training=training)
                prediction = self.dense(x)
                predictions.append(prediction)
            return transpose(stack(predictions), [1, 0, 2])
    return FeedBack()


def test_feedback_model_trains_as_tf_keras():
    tf_ref = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4, 2)).astype("float32")
    y = rng.normal(size=(16, 3, 2)).astype("float32")
    theirs = _feedback(tf_ref.keras, tf_ref.stack, tf_ref.transpose)
    ours = _feedback(keras, tf.stack, tf.transpose)
    theirs(x[:2])
    ours(x[:2])
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    ours.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=tf_ref.keras.optimizers.SGD(0.1), loss="mse")
    h_ours = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    h_theirs = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-4)


def test_other_uses_of_the_stack_name_the_batch_first_way():
    a, b = keras.Input((3,)), keras.Input((3,))
    s = tf.stack([a, b])
    assert s.shape == (2, None, 3)
    assert tf.transpose(s, [1, 0, 2]).shape == (None, 2, 3)
    assert tf.transpose(s, [1, 2, 0]).shape == (None, 3, 2)
    for use in (lambda: tf.transpose(s, [0, 2, 1]), lambda: s[0], lambda: s.ndim, lambda: np.asarray(s)):
        with pytest.raises(ShapeError, match=r"before the batch dim.*transposed to put the batch first.*axis=1"):
            use()
