"""TextVectorization, StringLookup and IntegerLookup against Keras 3 (TensorFlow backend): vocabularies
from adapt, ids, output modes, idf weights, inversion and configs, on the same data."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

DOCS = ["The cat sat.", "the dog, the CAT!", "a bird", "zebra apple apple", "É é naïve  tabs\tand\nlines", ""]


def _both(cls_name, adapt=None, **kwargs):
    ours, theirs = getattr(ff.layers, cls_name)(**kwargs), getattr(keras.layers, cls_name)(**kwargs)
    if adapt is not None:
        ours.adapt(adapt)
        theirs.adapt(adapt)
    return ours, theirs


def _plain(v):
    return [x.decode() if isinstance(x, bytes) else (x.item() if hasattr(x, "item") else x) for x in v]


def _same(ours, theirs, x):
    a, b = np.asarray(ours(x)), np.asarray(theirs(x))
    assert a.shape == b.shape, (a.shape, b.shape)
    if b.dtype.kind == "O":
        assert a.tolist() == b.tolist()
    else:
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-6)


TV_CASES = [
    dict(max_tokens=8),
    dict(),
    dict(output_sequence_length=5),
    dict(ngrams=2, output_mode="multi_hot"),
    dict(ngrams=(2,), standardize="lower"),
    dict(ngrams=3, output_sequence_length=12),
    dict(output_mode="count", max_tokens=10, pad_to_max_tokens=True),
    dict(output_mode="tf_idf", max_tokens=6),
    dict(output_mode="tf_idf"),
    dict(split="character", standardize=None),
    dict(standardize="strip_punctuation"),
    dict(split=None, output_mode="int"),
]


@pytest.mark.parametrize("kwargs", TV_CASES, ids=[str(c) for c in TV_CASES])
def test_text_vectorization_matches_keras(kwargs):
    ours, theirs = _both("TextVectorization", adapt=np.array(DOCS), **kwargs)
    assert _plain(ours.get_vocabulary()) == _plain(theirs.get_vocabulary())
    assert ours.vocabulary_size() == theirs.vocabulary_size()
    for x in (np.array(["the cat flew", "apple", "", "zebra zebra qq apple"]), np.array([["the dog"], ["a b c"]]),
              np.array([b"THE Cat", b"bird"], dtype=object)):
        _same(ours, theirs, x)


def test_text_vectorization_given_vocabulary_and_idf():
    kwargs = dict(output_mode="tf_idf", vocabulary=["hello", "world"], idf_weights=[0.5, 2.0])
    ours, theirs = _both("TextVectorization", **kwargs)
    _same(ours, theirs, np.array(["Hello, world! ok world", "nothing"]))
    ours, theirs = _both("TextVectorization", vocabulary=["hello", "world"], output_sequence_length=4)
    _same(ours, theirs, np.array(["hello world world again and again"]))
    assert _plain(ours.get_vocabulary()) == _plain(theirs.get_vocabulary())
    # the vocabulary as get_vocabulary gives it (reserved tokens first) sets the same layer
    again = ff.layers.TextVectorization(vocabulary=ours.get_vocabulary())
    assert again.get_vocabulary() == ours.get_vocabulary()


def test_text_vectorization_scalar_and_callable_standardize():
    def standardize(x):  # as keras-io scripts write it, on an array of strings here
        return np.char.replace(np.char.lower(x), "<br />", " ")

    ours = ff.layers.TextVectorization(standardize=standardize, vocabulary=["good", "film"])
    np.testing.assert_array_equal(np.asarray(ours("A GOOD<br />film")), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(ours(["good film", "film"])), [[2, 3], [3, 0]])


STRING_CASES = [
    dict(),
    dict(max_tokens=3),
    dict(mask_token=""),
    dict(output_mode="one_hot"),
    dict(output_mode="multi_hot"),
    dict(output_mode="count", mask_token=""),
    dict(output_mode="tf_idf"),
    dict(num_oov_indices=0),
]


@pytest.mark.parametrize("kwargs", STRING_CASES, ids=[str(c) for c in STRING_CASES])
def test_string_lookup_matches_keras(kwargs):
    data = np.array([["b", "a"], ["a", "c"], ["b", "a"], ["", "d"]])
    ours, theirs = _both("StringLookup", adapt=data, **kwargs)
    assert _plain(ours.get_vocabulary()) == _plain(theirs.get_vocabulary())
    x = np.array([["a", "b"], ["c", "a"]]) if kwargs.get("num_oov_indices") == 0 else np.array([["a", "z"], ["c", ""]])
    if kwargs.get("output_mode") == "one_hot":
        x = x[:, :1]
    _same(ours, theirs, x)


def test_string_lookup_rank_one_and_inversion():
    ours, theirs = _both("StringLookup", vocabulary=["x", "y"], output_mode="multi_hot")
    _same(ours, theirs, np.array(["x", "y"]))  # one sample
    ours, theirs = _both("StringLookup", vocabulary=["x", "y"], invert=True, mask_token="")
    _same(ours, theirs, np.array([0, 1, 2, 3, 7]))
    ours, theirs = _both("StringLookup", vocabulary=["x", "y"])
    _same(ours, theirs, "y")
    with pytest.raises(ValueError, match="repeats"):
        ff.layers.StringLookup(vocabulary=["x", "x"])
    with pytest.raises(ff.errors.DataError, match="num_oov_indices=0"):
        ff.layers.StringLookup(vocabulary=["x"], num_oov_indices=0)(np.array(["q"]))


def test_integer_lookup_matches_keras():
    data = np.array([5, 3, 3, 9, 5, 3, 0])
    for kwargs in (dict(), dict(mask_token=0), dict(output_mode="multi_hot"), dict(num_oov_indices=3)):
        ours, theirs = _both("IntegerLookup", adapt=data, **kwargs)
        assert _plain(ours.get_vocabulary()) == _plain(theirs.get_vocabulary()), kwargs
        _same(ours, theirs, np.array([[3, 7], [9, 0], [11, 5]]))
    ours, theirs = _both("IntegerLookup", vocabulary=[10, 20], invert=True)
    _same(ours, theirs, np.array([0, 1, 2]))
    ours, theirs = _both("IntegerLookup", vocabulary=[10, 20])
    _same(ours, theirs, np.array([10.0, 20.0, 30.0]))


def test_configs_round_trip_and_match_keras_keys():
    ours, theirs = _both("TextVectorization", adapt=np.array(DOCS), max_tokens=7, output_sequence_length=4)
    cfg = ours.get_config()
    assert set(theirs.get_config()) <= set(cfg) | {"dtype"}
    again = ff.layers.TextVectorization.from_config(cfg)
    x = np.array(["the cat", "apple dog"])
    np.testing.assert_array_equal(np.asarray(again(x)), np.asarray(ours(x)))
    ours, theirs = _both("StringLookup", vocabulary=["x", "y"], output_mode="tf_idf", idf_weights=[1.0, 3.0])
    assert set(theirs.get_config()) - {"oov_method", "salt"} <= set(ours.get_config()) | {"dtype"}
    again = ff.layers.StringLookup.from_config(ours.get_config())
    np.testing.assert_allclose(np.asarray(again(np.array([["x", "y", "q"]]))), np.asarray(ours(np.array([["x", "y", "q"]]))))


@pytest.mark.parametrize("cls_name, kwargs", [
    ("TextVectorization", dict(ngrams=2, max_tokens=12)),
    ("StringLookup", dict()),
])
def test_keras2_output_mode_spellings_binary_and_tf_idf(cls_name, kwargs):
    """Keras 3 still takes Keras 2's output_mode="binary" and "tf-idf" (Deep Learning with Python, 2nd ed.,
    ch. 11 writes both) and stores them as "multi_hot" / "tf_idf"."""
    words = [d.lower().replace(".", "").replace(",", "").replace("!", "").split() for d in DOCS]
    data = DOCS if cls_name == "TextVectorization" else [w for ws in words for w in ws]
    for old, new in (("binary", "multi_hot"), ("tf-idf", "tf_idf")):
        ours, theirs = _both(cls_name, adapt=data, output_mode=old, **kwargs)
        assert ours.get_config()["output_mode"] == theirs.get_config()["output_mode"] == new
        _same(ours, theirs, data[:4])
