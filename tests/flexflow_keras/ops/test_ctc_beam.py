"""Beam-search CTC decoding (ops/ctc_beam.py, ops/ctc.py) against TensorFlow 2.21 and Keras 3 on random small
cases: tf.nn.ctc_beam_search_decoder and tf.compat.v1's, keras.ops.ctc_decode(strategy="beam_search") with the
blank first and last, Keras 2's keras.backend.ctc_decode(greedy=False), tf.nn.ctc_greedy_decoder; the paths
exactly, the scores within 1e-4."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras3 = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend
legacy = pytest.importorskip("keras.src.legacy.backend")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import ops, tf_compat  # noqa: E402
from flexflow_keras.errors import ArgumentError, DataError  # noqa: E402
from flexflow_keras.ops import ctc_beam  # noqa: E402

pytestmark = pytest.mark.tf


def _cases(seed: int, count: int):
    """(logits (batch 3, frames, classes) float32, lengths (3,) int32, beam_width, top_paths) at random."""
    r = np.random.RandomState(seed)
    for _ in range(count):
        frames, classes = r.randint(1, 13), r.randint(4, 7)
        logits = (r.randn(3, frames, classes) * r.choice([0.5, 1.0, 3.0])).astype("float32")
        beam_width = int(r.choice([1, 3, 10]))
        yield logits, r.randint(1, frames + 1, 3).astype("int32"), beam_width, int(r.randint(1, min(3, beam_width) + 1))


def _same_sparse(ours, theirs):
    np.testing.assert_array_equal(ours.indices, theirs.indices.numpy())
    np.testing.assert_array_equal(ours.values, theirs.values.numpy())
    np.testing.assert_array_equal(ours.dense_shape, theirs.dense_shape.numpy())


@pytest.mark.parametrize("merge_repeated", [None, True, False])
def test_tf_beam_search_decoder_matches_tensorflow(merge_repeated):
    for logits, lengths, width, top in _cases(0 if merge_repeated is None else 1 + merge_repeated, 12):
        inputs = logits.transpose(1, 0, 2)  # time-major
        if merge_repeated is None:  # tf.nn's (v2): repeats kept
            theirs, their_scores = tf.nn.ctc_beam_search_decoder(inputs, lengths, beam_width=width, top_paths=top)
            ours, our_scores = tf_compat.mapped_call("tf.nn.ctc_beam_search_decoder")(inputs, lengths, width, top)
        else:
            theirs, their_scores = tf.compat.v1.nn.ctc_beam_search_decoder(inputs, lengths, width, top,
                                                                          merge_repeated=merge_repeated)
            ours, our_scores = ctc_beam.ctc_beam_search_decoder_v1(inputs, lengths, width, top, merge_repeated)
        assert len(ours) == len(theirs) == top
        for mine, tfs in zip(ours, theirs, strict=True):
            _same_sparse(mine, tfs)
        assert our_scores.shape == (3, top) and our_scores.dtype == np.float32
        np.testing.assert_allclose(our_scores, their_scores.numpy(), atol=1e-4)


@pytest.mark.parametrize("mask_index", [0, "last", None])
def test_keras_ops_ctc_decode_beam_search_matches_keras(mask_index):
    for logits, lengths, width, top in _cases(10 + (mask_index is None) + 2 * (mask_index == "last"), 8):
        mask = logits.shape[2] - 1 if mask_index == "last" else mask_index
        theirs, their_scores = keras3.ops.ctc_decode(logits, lengths, strategy="beam_search", beam_width=width,
                                                     top_paths=top, mask_index=mask)
        ours, our_scores = ops.ctc_decode(logits, lengths, strategy="beam_search", beam_width=width, top_paths=top,
                                          mask_index=mask)
        assert ours.shape == (top, 3, logits.shape[1]) and ours.dtype == np.int32
        np.testing.assert_array_equal(ours, np.asarray(theirs))
        np.testing.assert_allclose(our_scores, np.asarray(their_scores), atol=1e-4)


def test_backend_ctc_decode_beam_search_matches_keras_2():
    for logits, lengths, width, top in _cases(20, 8):
        probs = np.asarray(tf.nn.softmax(logits))
        theirs, their_scores = legacy.ctc_decode(probs, lengths, greedy=False, beam_width=width, top_paths=top)
        ours, our_scores = keras.backend.ctc_decode(probs, lengths, greedy=False, beam_width=width, top_paths=top)
        assert len(ours) == top
        for mine, dense in zip(ours, theirs, strict=True):
            assert mine.dtype == np.int64
            np.testing.assert_array_equal(mine, dense.numpy())
        np.testing.assert_allclose(our_scores, their_scores.numpy(), atol=1e-4)


def test_greedy_decoder_and_to_dense_match_tensorflow():
    for logits, lengths, _, _ in _cases(30, 4):
        inputs = logits.transpose(1, 0, 2)
        for merge, blank in ((True, None), (False, 0)):
            (theirs,), their_scores = tf.nn.ctc_greedy_decoder(inputs, lengths, merge_repeated=merge, blank_index=blank)
            (ours,), our_scores = tf_compat.mapped_call("tf.nn.ctc_greedy_decoder")(inputs, lengths, merge, blank)
            _same_sparse(ours, theirs)
            np.testing.assert_allclose(our_scores, their_scores.numpy(), atol=1e-4)
            np.testing.assert_array_equal(tf_compat.mapped_call("tf.sparse.to_dense")(ours, default_value=-1),
                                          tf.sparse.to_dense(theirs, default_value=-1).numpy())
        dense, _ = ops.ctc_decode(logits, lengths, merge_repeated=False, mask_index=2)
        their_dense, _ = keras3.ops.ctc_decode(logits, lengths, merge_repeated=False, mask_index=2)
        np.testing.assert_array_equal(dense, np.asarray(their_dense))


def test_errors_name_the_argument():
    logits = np.random.RandomState(0).randn(2, 4, 5).astype("float32")
    with pytest.raises(ArgumentError, match="top_paths=3 > beam_width=2"):
        ops.ctc_decode(logits, [4, 4], strategy="beam_search", beam_width=2, top_paths=3)
    with pytest.raises(ArgumentError, match="beam_width"):
        ops.ctc_decode(logits, [4, 4], strategy="beam_search", beam_width=0)
    with pytest.raises(DataError, match="sample 1 has length 6"):
        ops.ctc_decode(logits, [4, 6], strategy="beam_search")
    with pytest.raises(DataError, match="fewer than top_paths=2"):  # no frames: one path (the empty one)
        ops.ctc_decode(logits, [4, 0], strategy="beam_search", top_paths=2)
    with pytest.raises(ArgumentError, match="strategy"):
        ops.ctc_decode(logits, [4, 4], strategy="prefix")
    with pytest.raises(ArgumentError, match="SparseTensor"):
        ctc_beam.sparse_to_dense(np.zeros((2, 2)))
    with pytest.raises(ArgumentError, match="symbolic"):
        ops.ctc_decode(keras.Input((4, 5)), [4], strategy="beam_search")
