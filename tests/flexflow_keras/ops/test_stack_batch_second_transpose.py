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
    assert s[0] is a and len(s) == 2  # indexing the stacked axis is allowed (ops/batch_second.py)
    for use in (lambda: tf.transpose(s, [0, 2, 1]), lambda: s.ndim, lambda: np.asarray(s)):
        with pytest.raises(ShapeError, match=r"before the batch dim.*transposed to put the batch first.*axis=1"):
            use()


def test_hasattr_operators_and_model_outputs_explain_the_stack():
    a, b = keras.Input((3,)), keras.Input((3,))
    s = tf.stack([a, b])
    assert not hasattr(s, "numpy")  # an AttributeError (carrying the explanation), as Python's protocol wants
    with pytest.raises(AttributeError, match="before the batch dim"):
        s.numpy()
    uses = (lambda: s + 1, lambda: 1 + s, lambda: s * 2, lambda: 2 * s, lambda: s - 1, lambda: -s,
            lambda: keras.ops.add(s, 1), lambda: keras.Model([a, b], s), lambda: keras.Model([a, b], [a, s]))
    for use in uses:
        with pytest.raises(ShapeError, match=r"before the batch dim.*transposed to put the batch first.*axis=1"):
            use()


def test_moveaxis_swapaxes_and_unstack_are_the_allowed_transpose():
    ops = keras.ops
    a, b = keras.Input((3,)), keras.Input((3,))
    s = tf.stack([a, b])
    for out in (ops.moveaxis(s, 0, 1), ops.swapaxes(s, 0, 1), ops.swapaxes(s, 1, 0), tf.transpose(s, [1, 0, 2])):
        assert out.shape == (None, 2, 3)
    assert ops.moveaxis(s, 0, 2).shape == (None, 3, 2)
    assert ops.unstack(s, axis=0) == [a, b] and tf.unstack(s) == [a, b]
    for use in (lambda: ops.moveaxis(s, 1, 2), lambda: ops.swapaxes(s, 1, 2), lambda: ops.unstack(s, axis=1)):
        with pytest.raises(ShapeError, match="before the batch dim"):
            use()
    model = keras.Model([a, b], [ops.moveaxis(s, 0, 1), ops.swapaxes(s, 0, 1)])
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for got in model.predict([x, x + 10], verbose=0):
        np.testing.assert_array_equal(got, np.stack([x, x + 10], axis=1))
