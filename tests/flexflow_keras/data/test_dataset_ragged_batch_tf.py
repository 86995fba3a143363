"""`tf.data.Dataset.ragged_batch` as TensorFlow 2.21's: components whose elements differ in length become
RaggedTensors, the others dense batches. The TensorFlow Developer certificate's C3 W2-W3 labs pad their
tokenized reviews with ``ds.ragged_batch(batch_size=ds.cardinality()).get_single_element().numpy()`` then
``pad_sequences``; ours had no ragged_batch (AttributeError)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import DataError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
TEXT = ["the movie was great", "bad", "a very long and dull film indeed", "so so", "fine"]


def _plain(v):
    """A batch component as (kind, Python lists): RaggedTensor or dense."""
    if hasattr(v, "to_list"):
        return ("ragged", v.to_list())
    return ("dense", np.asarray(v).tolist())


def _cases(t):
    words = t.data.Dataset.from_tensor_slices(TEXT).map(lambda s: t.strings.split(s))
    grid = t.data.Dataset.from_tensor_slices(np.arange(15).reshape(5, 3))
    return {
        "dense base": grid.ragged_batch(2),
        "split words": words.ragged_batch(2),
        "drop remainder": words.ragged_batch(2, drop_remainder=True),
        "tuple of ragged, scalar, fixed": t.data.Dataset.from_tensor_slices(TEXT).map(
            lambda s: (t.strings.split(s), t.strings.length(s), t.zeros([2]))).ragged_batch(3),
        "dict": words.map(lambda w: {"w": w}).ragged_batch(4),
        "batches of batches": grid.batch(2).ragged_batch(3),
        "int32 row splits": words.ragged_batch(5, row_splits_dtype=t.int32),
    }


@pytest.mark.parametrize("case", list(_cases(tf)))
def test_ragged_batch_as_tf(case):
    ours, theirs = _cases(FFTF)[case], _cases(tf)[case]
    assert int(ours.cardinality()) == int(theirs.cardinality())

    def flat(batch):
        if isinstance(batch, dict):
            return {k: _plain(v) for k, v in batch.items()}
        return [_plain(v) for v in batch] if isinstance(batch, tuple) else _plain(batch)
    assert [flat(b) for b in ours] == [flat(b) for b in theirs]


def test_notebook_padding_func_as_tf():
    """C3_W3_Lab_1's padding_func: one ragged batch of every tokenized review, its .numpy(), pad_sequences."""
    def padded(t):
        vectorize = t.keras.layers.TextVectorization(max_tokens=50)
        reviews = t.data.Dataset.from_tensor_slices(TEXT)
        vectorize.adapt(reviews)
        seqs = reviews.map(lambda review: vectorize(review))
        seqs = seqs.ragged_batch(batch_size=seqs.cardinality()).get_single_element()
        rows = seqs.numpy()
        return rows, t.keras.utils.pad_sequences(rows, maxlen=5, truncating="post", padding="pre")

    (rows, got), (want_rows, want) = padded(FFTF), padded(tf)
    assert [r.tolist() for r in rows] == [r.tolist() for r in want_rows]
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_ragged_batch_errors():
    ds = FFTF.data.Dataset.from_tensor_slices(TEXT).map(lambda s: FFTF.strings.split(s))
    with pytest.raises(DataError, match="batch_size"):
        ds.ragged_batch(0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.data.Dataset.from_tensor_slices(TEXT).ragged_batch(0)
    with pytest.raises(DataError, match="row_splits_dtype"):
        ds.ragged_batch(2, row_splits_dtype="float32")
    with pytest.raises(DataError, match="ranks"):  # rows of rank 0 and 1 cannot be one RaggedTensor
        list(FFTF.data.Dataset.from_tensor_slices(TEXT[:2]).map(
            lambda s: FFTF.strings.split(s) if len(s.numpy()) > 3 else s).ragged_batch(2))
