"""Iterating an endless tf.data dataset (``repeat()`` without a count) in Python, as tf.data allows, against
TensorFlow 2.21: keras.io's edsr does ``lowres, highres = next(iter(train_ds))`` on a dataset ending in
``.batch(16).repeat()`` to plot a batch, which stopped with 'Dataset.repeat() without a count makes an
endless dataset'. The items go on without end in TensorFlow's order (batches across repetitions, a skip, a
map, shuffles before the repeat giving one permutation per pass); a shuffle after the repeat streams as a
shuffle buffer over the repetitions (it was an error), and fit still needs steps_per_epoch. Derived steps
after the repeat (filter, enumerate, window/flat_map, interleave, scan, rebatch, shard, concatenate) stream
as tf.data's do: a filter after repeat() hung, reading its endless input to the end."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import DataError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.arange(10)


def _pipelines(t):
    d = t.data.Dataset.from_tensor_slices
    return {
        "batch after repeat": d(X).repeat().batch(4),
        "batch before repeat": d(X).batch(4).repeat(),
        "map, skip": d(X).map(lambda v: v * 2).repeat().skip(3).batch(3),
        "pairs": d((X, X + 1)).repeat().batch(3),
    }


@pytest.mark.parametrize("name", ["batch after repeat", "batch before repeat", "map, skip", "pairs"])
def test_items_equal_tensorflow(name):
    ours, theirs = iter(_pipelines(FFTF)[name]), iter(_pipelines(tf)[name])
    for _ in range(11):
        a, b = next(ours), next(theirs)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_shuffle_before_the_repeat_gives_a_permutation_each_pass():
    it = iter(FFTF.data.Dataset.from_tensor_slices(X).shuffle(10, seed=3).repeat().batch(5))
    blocks = np.concatenate([np.asarray(next(it)) for _ in range(14)]).reshape(7, 10)
    assert all(sorted(b) == list(range(10)) for b in blocks)
    assert len({tuple(b) for b in blocks}) > 1  # reshuffled each pass, as reshuffle_each_iteration=True


def test_a_shuffle_after_the_repeat_streams_and_fit_without_steps_stays_an_error():
    ds = FFTF.data.Dataset.from_tensor_slices(X).repeat().shuffle(4, seed=1)
    it = iter(ds)
    items = [int(np.asarray(next(it))) for _ in range(100)]
    # each of the first 100 comes from the first 103 inputs (a buffer of 4): every value 10 times, give or take
    counts = np.bincount(items, minlength=10)
    assert counts.min() >= 9 and counts.max() <= 11 and items != list(range(10)) * 10
    # the same stream as a take() of it reads, and batched
    assert [int(np.asarray(v)) for v in ds.take(100)] == items
    batches = iter(FFTF.data.Dataset.from_tensor_slices(X).repeat().shuffle(4, seed=1).batch(5))
    assert np.concatenate([np.asarray(next(batches)) for _ in range(20)]).tolist() == items
    import flexflow_keras as ff

    model = ff.Sequential([ff.Input((1,)), ff.layers.Dense(1)])
    model.compile("sgd", "mse")
    ds = FFTF.data.Dataset.from_tensor_slices((X[:, None].astype("float32"), X[:, None].astype("float32")))
    with pytest.raises(DataError, match="endless dataset"):
        model.fit(ds.batch(4).repeat(), epochs=1, verbose=0)
    assert len(model.fit(ds.batch(4).repeat(), epochs=2, steps_per_epoch=3, verbose=0).history["loss"]) == 2


def _derived_pipelines(t):
    d = t.data.Dataset.from_tensor_slices
    return {
        "filter": d(X).repeat().filter(lambda v: v % 3 == 0),
        "enumerate": d(X).repeat().enumerate(5).map(lambda i, v: i * 100 + v),
        "window": d(X).repeat().window(4, shift=3, drop_remainder=True).flat_map(lambda w: w.batch(4)),
        "interleave": d(X).repeat().interleave(lambda v: t.data.Dataset.from_tensors(v).repeat(3), cycle_length=2,
                                               block_length=2),
        "scan": d(X).repeat().scan(np.int64(0), lambda s, v: (s + v, s)),
        "rebatch": d(X).repeat().batch(4).rebatch(3),
        "shard": d(X).repeat().shard(3, 1),
        "concatenate": d(X[:3]).concatenate(d(X).repeat().map(lambda v: -v)),
        "unbatch, filter, batch": d(X).batch(3).repeat().unbatch().filter(lambda v: v > 2).batch(4),
    }


@pytest.mark.parametrize("name", ["filter", "enumerate", "window", "interleave", "scan", "rebatch", "shard",
                                  "concatenate", "unbatch, filter, batch"])
def test_derived_steps_after_the_repeat_stream_as_tensorflow(name):
    ours, theirs = iter(_derived_pipelines(FFTF)[name]), iter(_derived_pipelines(tf)[name])
    for _ in range(25):
        np.testing.assert_array_equal(np.asarray(next(ours)), np.asarray(next(theirs)))
    # a fit reads them with steps_per_epoch
    assert len(FFTF.data.Dataset.from_tensor_slices(X).repeat().filter(lambda v: v > 4).take(12)) == 12


def test_a_step_that_needs_the_whole_endless_input_says_so():
    ds = FFTF.data.Dataset.from_tensor_slices(X).repeat()
    with pytest.raises(DataError, match="ignore_errors"):
        ds.ignore_errors()
