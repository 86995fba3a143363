"""Iterating an endless tf.data dataset (``repeat()`` without a count) in Python, as tf.data allows, against
TensorFlow 2.21: keras.io's edsr does ``lowres, highres = next(iter(train_ds))`` on a dataset ending in
``.batch(16).repeat()`` to plot a batch, which stopped with 'Dataset.repeat() without a count makes an
endless dataset'. The items go on without end in TensorFlow's order (batches across repetitions, a skip, a
map, shuffles before the repeat giving one permutation per pass); a shuffle after the repeat stays the
error, and fit still needs steps_per_epoch."""

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


def test_a_shuffle_after_the_repeat_and_fit_without_steps_stay_errors():
    with pytest.raises(DataError, match="no shuffle follows the repeat"):
        next(iter(FFTF.data.Dataset.from_tensor_slices(X).repeat().shuffle(4)))
    import flexflow_keras as ff

    model = ff.Sequential([ff.Input((1,)), ff.layers.Dense(1)])
    model.compile("sgd", "mse")
    ds = FFTF.data.Dataset.from_tensor_slices((X[:, None].astype("float32"), X[:, None].astype("float32")))
    with pytest.raises(DataError, match="endless dataset"):
        model.fit(ds.batch(4).repeat(), epochs=1, verbose=0)
    assert len(model.fit(ds.batch(4).repeat(), epochs=2, steps_per_epoch=3, verbose=0).history["loss"]) == 2
