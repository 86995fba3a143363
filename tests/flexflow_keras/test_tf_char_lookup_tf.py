"""TensorFlow's text generation tutorial turns text into character ids and back with TensorFlow calls:
``tf.strings.unicode_split(texts, 'UTF-8')`` of a batch of strings (a RaggedTensor of characters),
``StringLookup(vocabulary=...)`` of it (ragged ids, ``.to_tensor()`` for the model), ``StringLookup(...,
invert=True)`` back, ``tf.strings.reduce_join(chars, axis=-1)``, and its prediction mask
``tf.sparse.to_dense(tf.SparseTensor(values=[-inf], indices=skip_ids, dense_shape=[vocab]))``. Under
`python -m flexflow_keras` unicode_split gave a Python list (StringLookup: "the list of inputs is not
rectangular") and tf.SparseTensor was refused. They now give TensorFlow 2.21's values."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
VOCAB = sorted(set("ROMEO: thou art\n"))


def _pipeline(t, layers):
    chars = t.strings.unicode_split(["abc", "ROMEO:", "tú"], input_encoding="UTF-8")
    ids_from_chars = layers.StringLookup(vocabulary=VOCAB)
    chars_from_ids = layers.StringLookup(vocabulary=ids_from_chars.get_vocabulary(), invert=True)
    ids = ids_from_chars(chars)
    back = chars_from_ids(ids)
    return chars, ids, back, t.strings.reduce_join(back, axis=-1), t.strings.reduce_join(chars, axis=None)


def test_unicode_split_lookup_and_join_as_tensorflow():
    got = _pipeline(FFTF, ff.layers)
    want = _pipeline(tf, tf.keras.layers)
    for g, w in zip(got[:3], want[:3], strict=True):
        assert g.shape[0] == w.shape[0] and g.to_list() == w.to_list()
    np.testing.assert_array_equal(got[1].to_tensor(), want[1].to_tensor().numpy())
    assert list(np.asarray(got[3])) == list(want[3].numpy())
    assert np.asarray(got[4]).item() == want[4].numpy()
    one = FFTF.strings.unicode_split("héllo", "UTF-8")
    assert list(np.asarray(one)) == list(tf.strings.unicode_split("héllo", "UTF-8").numpy())


def test_reduce_join_of_ragged_refuses_other_axes():
    chars = FFTF.strings.unicode_split(["ab", "c"], "UTF-8")
    with pytest.raises(ValueError, match="joins along its last axis"):
        FFTF.strings.reduce_join(chars, axis=0)


def test_sparse_tensor_mask_as_tensorflow():
    for t in (FFTF, tf):
        sp = t.SparseTensor(values=[-float("inf")] * 2, indices=np.array([[0], [3]]), dense_shape=[5])
        assert tuple(sp.shape) == (5,)
    want = tf.sparse.to_dense(tf.SparseTensor(values=[-float("inf")] * 2, indices=[[0], [3]], dense_shape=[5]))
    got = FFTF.sparse.to_dense(FFTF.SparseTensor(values=[-float("inf")] * 2, indices=[[0], [3]], dense_shape=[5]))
    assert np.asarray(got).dtype == want.numpy().dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), want.numpy())
    ints = [[0, 1], [2, 0]]
    np.testing.assert_array_equal(
        np.asarray(FFTF.sparse.to_dense(FFTF.SparseTensor(ints, [3, 4], [3, 2]), default_value=-1)),
        tf.sparse.to_dense(tf.SparseTensor(ints, [3, 4], [3, 2]), default_value=-1).numpy())


@pytest.mark.parametrize("indices,what", [([[0], [0]], "repeated"), ([[3], [1]], "out of order"),
                                          ([[7]], "out of bounds")])
def test_sparse_to_dense_checks_indices_as_tensorflow(indices, what):
    values = [1.0] * len(indices)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.sparse.to_dense(tf.SparseTensor(indices, values, [5]))
    with pytest.raises(ValueError, match=what):
        FFTF.sparse.to_dense(FFTF.SparseTensor(indices, values, [5]))
    if what != "out of bounds":  # unchecked, TensorFlow writes them as given
        np.testing.assert_array_equal(
            np.asarray(FFTF.sparse.to_dense(FFTF.SparseTensor(indices, values, [5]), validate_indices=False)),
            tf.sparse.to_dense(tf.SparseTensor(indices, values, [5]), validate_indices=False).numpy())


def test_sparse_reorder_as_tensorflow():
    indices, values = [[2, 1], [0, 3], [2, 0], [1, 1]], [1.0, 2.0, 3.0, 4.0]
    got = FFTF.sparse.reorder(FFTF.SparseTensor(indices, values, [3, 4]))
    want = tf.sparse.reorder(tf.SparseTensor(indices, values, [3, 4]))
    np.testing.assert_array_equal(got.indices, want.indices.numpy())
    np.testing.assert_array_equal(got.values, want.values.numpy())
    np.testing.assert_array_equal(np.asarray(FFTF.sparse.to_dense(got)), tf.sparse.to_dense(want).numpy())


def test_sparse_tensor_checks_its_shapes():
    with pytest.raises(ValueError, match="indices of shape"):
        FFTF.SparseTensor(indices=[0, 3], values=[1.0, 2.0], dense_shape=[5])
