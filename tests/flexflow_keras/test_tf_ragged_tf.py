"""tf.strings.split of an array as a RaggedTensor (tf_ragged.py), against TensorFlow 2.21: keras.io's
movielens transformer reads ``tf.strings.to_number(tf.strings.split(s, ",")).to_tensor()`` in a dataset
map; and the names it also calls under the runner (tf.unstack, tf.dtypes.float32)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias, tf_strings  # noqa: E402
from flexflow_keras.tf_ragged import RaggedTensor  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
TEXT = np.array([b"movie_1,movie_20,movie_3", b"movie_4", b"", b"movie_5,movie_6"], dtype=object)
NUMS = np.array([b"1.0,2.5,4", b"3", b"5,0.5"], dtype=object)


def test_split_to_tensor_and_lists_match_tf():
    ours, theirs = tf_strings.split(TEXT, ","), tf.strings.split(tf.constant(TEXT), ",")
    assert isinstance(ours, RaggedTensor) and ours.to_list() == theirs.to_list()
    assert np.asarray(ours.to_tensor()).tolist() == theirs.to_tensor().numpy().tolist()
    assert ours.row_lengths().tolist() == theirs.row_lengths().numpy().tolist()
    assert np.asarray(ours.to_tensor(default_value=b"?", shape=[None, 2])).tolist() == \
        theirs.to_tensor(default_value=b"?", shape=[None, 2]).numpy().tolist()
    assert np.asarray(ours.flat_values).tolist() == theirs.flat_values.numpy().tolist()
    assert np.asarray(ours[0]).tolist() == theirs[0].numpy().tolist() and len(ours) == 4
    assert np.asarray(tf_strings.upper(ours).to_tensor()).tolist() == \
        tf.strings.upper(theirs).to_tensor().numpy().tolist()


def test_to_number_of_ragged_rows_matches_tf():
    ours = FFTF.strings.to_number(FFTF.strings.split(NUMS, ","), FFTF.dtypes.float32).to_tensor()
    theirs = tf.strings.to_number(tf.strings.split(tf.constant(NUMS), ","), tf.dtypes.float32).to_tensor()
    got, want = np.asarray(ours), theirs.numpy()
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    nested = tf_strings.split(np.array([[b"a b", b"c"]], dtype=object))
    assert nested.to_list() == tf.strings.split(tf.constant([[b"a b", b"c"]])).to_list()
    assert np.asarray(nested.to_tensor()).shape == tuple(tf.strings.split(tf.constant([[b"a b", b"c"]]))
                                                         .to_tensor().shape)


def test_unstack_runs_under_the_runner():
    x = np.arange(12, dtype="float32").reshape(2, 3, 2)
    for got, want in zip(FFTF.unstack(x, axis=1), tf.unstack(x, axis=1), strict=True):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_from_generator_takes_tensor_specs_under_the_runner():
    seqs = [np.arange(n, dtype="int64") for n in (3, 5, 2)]
    sig = (FFTF.TensorSpec((None,), FFTF.int64), FFTF.TensorSpec((), FFTF.float32))
    assert sig[0].shape == (None,) and sig[0].dtype == "int64"
    ds = FFTF.data.Dataset.from_generator(lambda: ((s, np.float32(len(s))) for s in seqs), output_signature=sig)
    assert [(list(x), float(y)) for x, y in ds.as_numpy_iterator()] == [(list(s), float(len(s))) for s in seqs]
