"""TextVectorization(ragged=True) as Keras 3.15 on TensorFlow: a batch of split strings gives a RaggedTensor of
int64 ids (cut, not padded, by output_sequence_length); one string, or split=None, a dense array; ragged=True
with another output_mode is an error; get_config keeps it. The TensorFlow Developer certificate's C3 W1 labs
call ``TextVectorization(ragged=True)`` and pad ``layer(sentences).numpy()`` with pad_sequences; ours refused
ragged=True ("flexflow_keras has no ragged tensors")."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.errors import ArgumentError  # noqa: E402

pytestmark = pytest.mark.tf

S = ["I love my dog", "I love my cat", "You love my dog!", "Do you think my dog is amazing?"]
TEST = ["i really love my dog", "", "my dog loves my manatee"]


def _both(**kwargs):
    ours, theirs = ff.layers.TextVectorization(**kwargs), keras.layers.TextVectorization(**kwargs)
    ours.adapt(S)
    theirs.adapt(S)
    return ours, theirs


@pytest.mark.parametrize("kwargs", [{}, {"output_sequence_length": 3}, {"ngrams": 2}, {"max_tokens": 6},
                                    {"split": "character", "output_sequence_length": 9}])
def test_batch_gives_ragged_ids_as_keras(kwargs):
    ours, theirs = _both(ragged=True, **kwargs)
    for x in (S, TEST, np.array([[s] for s in S])):
        got, want = ours(x), theirs(x)
        assert type(got).__name__ == "RaggedTensor" and got.to_list() == want.to_list()
        assert str(got.dtype) == want.dtype.name == "int64"
        a, b = got.numpy(), want.numpy()
        assert a.dtype == b.dtype and [np.asarray(r).tolist() for r in a] == [np.asarray(r).tolist() for r in b]


@pytest.mark.parametrize("kwargs", [{}, {"output_sequence_length": 2}, {"output_sequence_length": 8}])
def test_one_string_and_no_split_are_dense_as_keras(kwargs):
    ours, theirs = _both(ragged=True, **kwargs)
    got, want = ours("my dog is amazing"), theirs("my dog is amazing")
    assert np.asarray(got).tolist() == want.numpy().tolist() and np.asarray(got).dtype == want.numpy().dtype
    ours, theirs = _both(ragged=True, split=None, **kwargs)
    got, want = ours(S), theirs(S)
    assert np.asarray(got).tolist() == want.numpy().tolist() and np.asarray(got).shape == tuple(want.shape)


def test_notebook_padding_and_dataset_map_as_keras():
    ours, theirs = _both(ragged=True)
    got = ff.utils.pad_sequences(ours(S).numpy(), maxlen=4, padding="post", truncating="post")
    want = keras.utils.pad_sequences(theirs(S).numpy(), maxlen=4, padding="post", truncating="post")
    assert got.tolist() == want.tolist()
    assert ff.utils.pad_sequences(ours(S).numpy()).tolist() == keras.utils.pad_sequences(theirs(S).numpy()).tolist()
    from flexflow_keras.data.slices import SliceDataset

    mapped = [np.asarray(v).tolist() for v in SliceDataset.from_tensor_slices(S).map(ours)]
    assert mapped == [v.numpy().tolist() for v in tf.data.Dataset.from_tensor_slices(S).map(theirs)]


def test_config_and_errors():
    ours, theirs = _both(ragged=True)
    assert ours.get_config()["ragged"] is True is theirs.get_config()["ragged"]
    again = ff.layers.TextVectorization.from_config(ours.get_config())
    assert again.ragged and again(S).to_list() == theirs(S).to_list()
    with pytest.raises(ValueError):
        keras.layers.TextVectorization(ragged=True, output_mode="multi_hot")
    with pytest.raises(ArgumentError, match="ragged=True only applies to output_mode='int'"):
        ff.layers.TextVectorization(ragged=True, output_mode="multi_hot")
    with pytest.raises(ArgumentError, match="RaggedTensors"):
        ours(ff.Input(shape=(1,), dtype="string"))
