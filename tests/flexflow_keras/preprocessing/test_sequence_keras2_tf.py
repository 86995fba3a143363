"""keras.preprocessing.sequence's Keras 2 helpers against tf.keras' (TensorFlow 2.21 still exports them):
skipgrams draws the same pairs for the same seed, make_sampling_table and TimeseriesGenerator give the same
numbers."""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras.preprocessing import sequence  # noqa: E402

pytestmark = pytest.mark.tf
theirs = tf.keras.preprocessing.sequence


def test_make_sampling_table():
    np.testing.assert_allclose(sequence.make_sampling_table(50, 1e-3), theirs.make_sampling_table(50, 1e-3))


@pytest.mark.parametrize("kwargs", [dict(), dict(negative_samples=0, shuffle=False), dict(categorical=True, seed=3),
                                    dict(window_size=2, negative_samples=2.0, seed=7), dict(sampling_table="table")])
def test_skipgrams_draws_what_tf_keras_draws(kwargs):
    seq = [1, 2, 0, 3, 4, 5, 6, 2, 7, 1]
    if kwargs.get("sampling_table") == "table":
        kwargs = dict(kwargs, sampling_table=sequence.make_sampling_table(10, 0.05))
    random.seed(11)
    ours = sequence.skipgrams(seq, 10, **kwargs)
    random.seed(11)
    want = theirs.skipgrams(seq, 10, **kwargs)
    assert list(ours) == list(want)


def test_timeseries_generator():
    data = np.arange(50, dtype="float32").reshape(25, 2)
    targets = np.arange(25)
    for kwargs in (dict(length=4, batch_size=3), dict(length=6, sampling_rate=2, stride=3, reverse=True),
                   dict(length=3, start_index=2, end_index=20, batch_size=5)):
        ours, want = sequence.TimeseriesGenerator(data, targets, **kwargs), theirs.TimeseriesGenerator(
            data, targets, **kwargs)
        assert len(ours) == len(want)
        for i in range(len(want)):
            for a, b in zip(ours[i], want[i], strict=True):
                np.testing.assert_array_equal(a, b)
