"""RaggedTensor.numpy() as TensorFlow 2.21's: an object array of the rows when their lengths differ, one dense
array when they are all one length (and a (0, 0) array for no rows). The TensorFlow Developer certificate's
C3 W1 labs pad ``TextVectorization(ragged=True)(sentences).numpy()`` with pad_sequences; ours always gave an
object array."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import tf_ragged  # noqa: E402

pytestmark = pytest.mark.tf

CASES = {
    "ragged ints": [[1, 2, 3], [4], []],
    "uniform ints": [[1, 2], [3, 4], [5, 6]],
    "uniform floats": [[0.5], [1.5]],
    "uniform text": [[b"a", b"b"], [b"c", b"d"]],
    "ragged text": [[b"a"], [b"b", b"c"]],
    "one row": [[7, 8, 9]],
}


@pytest.mark.parametrize("case", list(CASES))
def test_numpy_as_tf(case):
    got = tf_ragged.constant(CASES[case]).numpy()
    want = tf.ragged.constant(CASES[case]).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == object and want.ndim == 1:
        assert [np.asarray(r).tolist() for r in got] == [r.tolist() for r in want]
        assert [np.asarray(r).dtype for r in got] == [r.dtype for r in want]
    else:
        assert got.tolist() == want.tolist()


def test_no_rows_as_tf():
    got = tf_ragged.RaggedTensor([], "int32").numpy()
    want = tf.RaggedTensor.from_row_lengths(tf.constant([], tf.int32), tf.constant([], tf.int64)).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
