"""tf.ragged.constant under the runner (tf_ragged.constant) and the lookup layers reading its rows, against
TensorFlow 2.21 / tf.keras 3.15: keras.io's multi-label example adapts ``StringLookup(output_mode="multi_hot")``
on ``tf.ragged.constant(label_lists)`` and calls it on them (one multi-hot row per label set)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import ArgumentError, DataError  # noqa: E402
from flexflow_keras.tf_ragged import RaggedTensor  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
LABELS = [["cs.LG"], ["stat.ML", "cs.AI"], ["cs.LG", "cs.CV", "cs.AI"], [], ["cs.LG", "cs.LG"]]


@pytest.mark.parametrize("value, dtype", [(LABELS, None), ([[1, 2], [3], []], None), ([[1.5], [2.0, 3.0]], None),
                                          ([[True], [False, True]], None), ([[1, 2], [3]], "int64"),
                                          ([[[1, 2], [3]], [[4]]], None), ([[], []], None),
                                          ([[2**40], [1]], None)],
                         ids=["strings", "ints", "floats", "bools", "int64", "3-levels", "empty", "big-int"])
def test_constant_rows_and_dtype_match_tf(value, dtype):
    ours = FFTF.ragged.constant(value, dtype=dtype)
    theirs = tf.ragged.constant(value, dtype=dtype)
    assert isinstance(ours, RaggedTensor)
    assert ours.to_list() == theirs.to_list()
    assert ours.dtype == theirs.dtype.name
    if len(ours.shape) == 2:
        assert np.asarray(ours.to_tensor()).tolist() == theirs.to_tensor().numpy().tolist()


@pytest.mark.parametrize("mode", ["multi_hot", "count", "tf_idf", "int"])
def test_string_lookup_adapts_and_calls_on_ragged_rows_as_tf_keras(mode):
    ours = ff.layers.StringLookup(output_mode=mode)
    theirs = tf.keras.layers.StringLookup(output_mode=mode)
    ours.adapt(FFTF.ragged.constant(LABELS))
    theirs.adapt(tf.ragged.constant(LABELS))
    assert [str(t) for t in ours.get_vocabulary()] == [str(t) for t in theirs.get_vocabulary()]
    query = LABELS + [["unknown", "cs.CV"]]
    a, b = ours(FFTF.ragged.constant(query)), theirs(tf.ragged.constant(query))
    if mode == "int":
        assert isinstance(a, RaggedTensor) and a.to_list() == b.to_list()
    else:
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-6)
        assert np.asarray(a).dtype == b.numpy().dtype


def test_integer_lookup_multi_hot_of_ragged_rows_as_tf_keras():
    rows = [[3, 7], [7], [9, 3, 3]]
    ours, theirs = ff.layers.IntegerLookup(output_mode="multi_hot"), tf.keras.layers.IntegerLookup(output_mode="multi_hot")
    ours.adapt(FFTF.ragged.constant(rows, dtype="int64"))
    theirs.adapt(tf.ragged.constant(rows, dtype="int64"))
    np.testing.assert_array_equal(np.asarray(ours(FFTF.ragged.constant(rows, dtype="int64"))),
                                  theirs(tf.ragged.constant(rows, dtype="int64")).numpy())


def test_refusals_name_the_fix():
    with pytest.raises(ArgumentError, match="ragged_rank"):
        FFTF.ragged.constant(LABELS, ragged_rank=1)
    layer = ff.layers.StringLookup(output_mode="one_hot", vocabulary=["a", "b"])
    with pytest.raises(DataError, match="to_tensor"):
        layer(FFTF.ragged.constant([["a"], ["a", "b"]]))
