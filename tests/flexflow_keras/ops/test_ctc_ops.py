"""CTC as Keras computes it (ops/ctc.py, losses_ctc.py): keras.backend.ctc_batch_cost / ctc_decode,
keras.ops.ctc_loss / ctc_decode, keras.losses.CTC, against TensorFlow 2.21's values (the literals), and training
through fit (keras.io's CTCLoss with the batch size cast into tf.ones) to TensorFlow's losses."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import ops
from flexflow_keras.errors import DataError, FlexFlowKerasError

LENGTHS_IN, LENGTHS_LABEL = np.array([7, 5, 6]), np.array([3, 2, 1])


def _data():
    r = np.random.RandomState(0)
    logits = r.randn(3, 7, 5).astype("float32")
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return logits, e / e.sum(-1, keepdims=True)


def test_losses_match_tensorflow():
    logits, probs = _data()
    labels = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    cost = keras.backend.ctc_batch_cost(labels, probs, LENGTHS_IN[:, None], LENGTHS_LABEL[:, None])
    assert cost.shape == (3, 1)
    np.testing.assert_allclose(cost.ravel(), [6.844131, 4.8593287, 6.2764263], rtol=1e-5)
    zero_blank = np.array([[1, 2, 2], [3, 1, 0], [4, 0, 0]])
    np.testing.assert_allclose(ops.ctc_loss(zero_blank, logits, LENGTHS_LABEL, LENGTHS_IN),
                               [9.928749, 4.5582075, 6.3846054], rtol=1e-5)
    np.testing.assert_allclose(keras.losses.ctc(zero_blank, logits), [9.928749, 7.374404, 6.7992263], rtol=1e-5)
    assert float(keras.losses.CTC()(zero_blank, logits)) == pytest.approx(8.034127, rel=1e-5)
    assert isinstance(keras.losses.get("ctc"), keras.losses.CTC)
    with pytest.raises(DataError, match="blank"):  # a label equal to the blank (0 for ops.ctc_loss)
        ops.ctc_loss(np.array([[1, 0, 2]]), logits[:1], np.array([3]), np.array([7]))


def test_greedy_decoding_matches_tensorflow():
    logits, probs = _data()
    decoded, scores = keras.backend.ctc_decode(probs, LENGTHS_IN, greedy=True)
    assert decoded[0].dtype == np.int64 and decoded[0].tolist() == [
        [3, 1, 3, 1, -1, -1, -1], [1, 3, 2, 1, 0, -1, -1], [2, 0, 1, 2, -1, -1, -1]]
    np.testing.assert_allclose(np.asarray(scores).ravel(), [5.6647635, 3.973788, 5.2191114], rtol=1e-5)
    decoded, scores = ops.ctc_decode(logits, LENGTHS_IN)
    assert decoded.dtype == np.int32 and decoded.shape == (1, 3, 7)
    assert decoded[0].tolist() == [[3, 1, 4, 3, 1, -1, -1], [1, 3, 2, 1, -1, -1, -1], [2, 4, 1, 2, -1, -1, -1]]
    np.testing.assert_allclose(np.asarray(scores).ravel(), [-10.32003, -4.773791, -7.588023], rtol=1e-5)
    decoded, scores = keras.backend.ctc_decode(probs, LENGTHS_IN, greedy=False)  # beam search: test_ctc_beam.py
    assert len(decoded) == 1 and decoded[0].shape == (3, 7) and scores.shape == (3, 1)


def _fit_losses(loss, softmax: bool):
    r = np.random.RandomState(0)
    x = r.randn(16, 10, 6).astype("float32")
    y = np.stack([np.pad(r.randint(1, 5, n), (0, 4 - n)) for n in r.randint(1, 5, 16)]).astype("int64")
    weights = [r.randn(6, 6).astype("float32") * 0.5, np.zeros(6, "float32")]
    inputs = keras.Input((None, 6))
    model = keras.Model(inputs, keras.layers.Dense(6, activation="softmax" if softmax else None)(inputs))
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=loss)
    return model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]


def test_training_matches_tensorflow():
    def ctc_loss_keras_io(y_true, y_pred):  # keras.io's ctc_asr / OCR examples
        batch_len = ops.cast(ops.shape(y_true)[0], dtype="int64")
        input_length = ops.cast(ops.shape(y_pred)[1], dtype="int64") * ops.ones(shape=(batch_len, 1), dtype="int64")
        label_length = ops.cast(ops.shape(y_true)[1], dtype="int64") * ops.ones(shape=(batch_len, 1), dtype="int64")
        return keras.backend.ctc_batch_cost(y_true, y_pred, input_length, label_length)

    np.testing.assert_allclose(_fit_losses(ctc_loss_keras_io, True), [11.20435, 7.89653], rtol=1e-4)
    np.testing.assert_allclose(_fit_losses(keras.losses.CTC(), False), [10.68486, 5.46092], rtol=1e-4)


def test_sparse_label_conversion_says_it_is_missing():
    with pytest.raises(FlexFlowKerasError, match="SparseTensor"):
        keras.backend.ctc_label_dense_to_sparse  # noqa: B018
