"""keras.io's handwriting recognition scores its predictions in a callback with TensorFlow calls on values:
``tf.edit_distance(tf.cast(tf.sparse.from_dense(pred), tf.int64), tf.cast(tf.sparse.from_dense(labels),
tf.int64), normalize=False)`` and ``tf.gather(x, tf.where(tf.math.not_equal(x, -1)))``. Under
`python -m flexflow_keras` they were refused (tf.sparse.from_dense, tf.edit_distance) or a TypeError
(one-argument tf.where). They now give TensorFlow 2.21's values."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
HYP = np.array([[1, 2, 0], [3, 0, 0], [0, 0, 0], [5, 5, 5], [0, 4, 4]], "int64")
TRUTH = np.array([[1, 3, 0], [0, 0, 0], [0, 0, 0], [5, 0, 5], [4, 4, 2]], "int64")


def test_from_dense_and_cast_as_tensorflow():
    for x in (HYP, np.array([[[0.0, 1.5], [2.0, 0.0]]], "float32")):
        got, want = FFTF.sparse.from_dense(x), tf.sparse.from_dense(x)
        np.testing.assert_array_equal(got.indices, want.indices.numpy())
        np.testing.assert_array_equal(got.values, want.values.numpy())
        np.testing.assert_array_equal(got.dense_shape, want.dense_shape.numpy())
        np.testing.assert_array_equal(np.asarray(FFTF.sparse.to_dense(got)), tf.sparse.to_dense(want).numpy())
    cast = FFTF.cast(FFTF.sparse.from_dense(HYP), FFTF.float32)
    assert cast.values.dtype == np.float32 == tf.cast(tf.sparse.from_dense(HYP), tf.float32).values.dtype


@pytest.mark.parametrize("normalize", [True, False])
def test_edit_distance_as_tensorflow(normalize):
    def run(t):
        h = t.cast(t.sparse.from_dense(HYP), t.int64)
        return np.asarray(t.edit_distance(h, t.cast(t.sparse.from_dense(TRUTH), t.int64), normalize=normalize))

    got, want = run(FFTF), run(tf)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # inf where the truth is empty, 0 where both are
    h3, t3 = np.array([[[1, 2], [0, 1]]], "int64"), np.array([[[1, 0], [2, 1]]], "int64")
    np.testing.assert_array_equal(np.asarray(FFTF.edit_distance(FFTF.sparse.from_dense(h3), FFTF.sparse.from_dense(t3))),
                                  tf.edit_distance(tf.sparse.from_dense(h3), tf.sparse.from_dense(t3)).numpy())


def test_one_argument_where_as_tensorflow():
    for cond in (np.array([[True, False], [False, True]]), np.array([0.0, 2.0, 3.0], "float32"),
                 np.zeros((2, 2), bool)):
        got, want = np.asarray(FFTF.where(cond)), tf.where(cond).numpy()
        assert got.dtype == want.dtype == np.int64 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    row = np.array([3, 1, -1, -1], "int64")
    np.testing.assert_array_equal(np.asarray(FFTF.gather(row, FFTF.where(FFTF.math.not_equal(row, -1)))),
                                  tf.gather(row, tf.where(tf.math.not_equal(row, -1))).numpy())
    with pytest.raises(ValueError):
        FFTF.where(np.array([True]), np.array([1.0]))
