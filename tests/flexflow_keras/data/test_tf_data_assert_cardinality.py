"""`tf.data.experimental.assert_cardinality` under the runner (tf_data.py): ``ds.apply(assert_cardinality(n))``
gives the dataset back when it holds n elements, as TensorFlow, and a clear error when it does not. keras.io-style
pipelines (TextLineDataset -> map -> padded_batch) assert their length this way so that fit knows the epoch."""

import numpy as np
import pytest

from flexflow_keras import tf_compat
from flexflow_keras.data.derived import text_line_dataset
from flexflow_keras.data.slices import SliceDataset as D
from flexflow_keras.errors import DataError


def _assert(n):
    return tf_compat.mapped_call("tf.data.experimental.assert_cardinality")(n)


def _lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"{i}\t{'w ' * (i % 4 + 1)}\n" for i in range(7)))
    return str(path)


def test_assert_cardinality_gives_the_dataset_back(tmp_path):
    ds = D.from_tensor_slices(np.arange(10)).batch(4).apply(_assert(3))
    assert int(ds.cardinality()) == 3
    assert [list(b.numpy()) for b in ds][-1] == [8, 9]
    lines = text_line_dataset(_lines(tmp_path)).map(lambda s: s).padded_batch(3).apply(_assert(3))
    assert len(list(lines)) == 3
    assert D.range(3).repeat().apply(_assert(-1)).is_endless()


def test_assert_cardinality_mismatch_says_both_counts():
    with pytest.raises(DataError, match=r"expected to contain 4 element\(s\).*contains 3"):
        D.from_tensor_slices(np.arange(10)).batch(4).apply(_assert(4))
    with pytest.raises(DataError, match="contains -1"):
        D.range(3).repeat().apply(_assert(3))


def test_assert_cardinality_as_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    path = _lines(tmp_path)

    def pipeline(data, n):
        ds = data.TextLineDataset(path).map(lambda s: s).batch(2)
        return ds.apply(data.experimental.assert_cardinality(n))

    theirs = pipeline(tf.data, 4)
    ours = pipeline(_Runner(), 4)
    assert int(ours.cardinality()) == int(theirs.cardinality()) == 4
    assert [list(b.numpy()) for b in ours] == [list(b.numpy()) for b in theirs]


def test_fit_reads_an_asserted_dataset():
    import flexflow_keras as keras

    x = np.random.RandomState(0).rand(10, 3).astype("float32")
    ds = D.from_tensor_slices((x, x[:, :1])).batch(4).apply(_assert(3))
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(ds, epochs=2, verbose=0)
    assert int(model.optimizer.iterations) == 6


class _Runner:
    """`tf.data` as the runner maps it, for the side-by-side test."""

    @staticmethod
    def TextLineDataset(path):  # noqa: N802 - tf.data's name
        return tf_compat.mapped_call("tf.data.TextLineDataset")(path)

    class experimental:  # noqa: N801 - tf.data's name
        assert_cardinality = staticmethod(_assert)
