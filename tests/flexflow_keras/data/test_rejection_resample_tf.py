"""`Dataset.rejection_resample` (data/resample.py) and ``tf.data.experimental.rejection_resample`` for
``apply``: keras.io's payment-card fraud detection resamples its transactions to 20% fraud this way
(``non_batched_train_ds.shuffle(10000).rejection_resample(class_func, target_dist, initial_dist)``) and
stopped on "Dataset.rejection_resample() is a tf.data method flexflow_keras' tf.data stand-in does not have".
The deterministic cases (pass-through, only the rejection stream) give TensorFlow's elements exactly; the
random ones its proportions and counts."""

import numpy as np
import pytest

from flexflow_keras import tf_compat
from flexflow_keras.data.slices import SliceDataset as D
from flexflow_keras.errors import DataError

_LABELS = (np.random.default_rng(0).random(600) < 0.1).astype("int64")  # 54 of class 1


def _data(ds_cls):
    return ds_cls.from_tensor_slices({"x": np.arange(600), "y": _LABELS})


def _pairs(resampled):
    return [(int(np.asarray(c)), int(np.asarray(e["x"]))) for c, e in resampled]


def _class(e):
    return np.asarray(e["y"]).astype("int32")


def test_pass_through_and_rejection_only_streams():
    same = _pairs(_data(D).rejection_resample(_class, [0.9, 0.1], initial_dist=[0.9, 0.1]))
    assert same == [(int(c), i) for i, c in enumerate(_LABELS)]  # m == 1: the input as it is
    only = _pairs(_data(D).rejection_resample(_class, [0.0, 1.0], initial_dist=[0.9, 0.1], seed=3))
    assert only == [(1, i) for i in np.flatnonzero(_LABELS)]  # m == 0: class 1 accepted, class 0 never


def test_mixed_streams_reach_the_target_proportion():
    counts, fractions = [], []
    for seed in range(40):
        out = _pairs(_data(D).rejection_resample(_class, [0.8, 0.2], initial_dist=[0.9, 0.1], seed=seed))
        counts.append(len(out))
        fractions.append(np.mean([c for c, _ in out]))
        assert all(c == _LABELS[i] for c, i in out)
    assert abs(np.mean(fractions) - 0.2) < 0.02
    assert 450 < np.mean(counts) < 550  # TensorFlow 2.21: 497.7 over seeds 0-19
    again = _pairs(_data(D).rejection_resample(_class, [0.8, 0.2], initial_dist=[0.9, 0.1], seed=7))
    assert again == _pairs(_data(D).rejection_resample(_class, [0.8, 0.2], initial_dist=[0.9, 0.1], seed=7))


def test_estimated_initial_distribution_draws_as_many_as_its_groups():
    out = _pairs(_data(D).rejection_resample(_class, [0.8, 0.2], seed=1))
    assert len(out) == 608  # TensorFlow too: the live estimate's 19 groups of 32 weight 608 draws
    assert 0.05 < np.mean([c for c, _ in out]) < 0.15


def test_chain_under_the_runner_batches_into_fit_pairs():
    resample = tf_compat.mapped_call("tf.data.experimental.rejection_resample")
    ds = (_data(D).shuffle(1000, seed=0)
          .apply(resample(_class, target_dist=[0.8, 0.2], initial_dist=[0.9, 0.1], seed=0))
          .map(lambda _, x: x).batch(32).map(lambda e: ({"x": e["x"]}, e["y"])))
    batches = list(ds)
    assert batches and all(np.asarray(y).shape[0] <= 32 for _, y in batches)
    assert sorted(set(np.concatenate([np.asarray(y) for _, y in batches]).tolist())) == [0, 1]


def test_refusals_name_the_fix():
    with pytest.raises(DataError, match="resample before batch"):
        _data(D).batch(4).rejection_resample(_class, [0.5, 0.5])
    with pytest.raises(DataError, match="one probability per class"):
        _data(D).rejection_resample(_class, [0.5, 0.5], initial_dist=[0.2, 0.3, 0.5])
    with pytest.raises(DataError, match=r"outside \[0, 2\)"):
        list(D.from_tensor_slices({"y": np.array([0, 3])}).rejection_resample(_class, [0.5, 0.5], seed=0))
    with pytest.raises(DataError, match="endless"):
        _data(D).repeat().rejection_resample(_class, [0.5, 0.5])


def test_deterministic_cases_equal_tensorflow():
    tf = pytest.importorskip("tensorflow")

    def tf_class(e):
        return tf.cast(e["y"], tf.int32)

    for target, ours in (([0.9, 0.1], _class), ([0.0, 1.0], _class)):
        theirs = _pairs(_data(tf.data.Dataset).rejection_resample(tf_class, target, initial_dist=[0.9, 0.1], seed=3))
        mine = _pairs(_data(D).rejection_resample(ours, target, initial_dist=[0.9, 0.1], seed=3))
        assert mine == theirs
    theirs = _pairs(_data(tf.data.Dataset).rejection_resample(tf_class, [0.8, 0.2], seed=1))
    assert len(theirs) == len(_pairs(_data(D).rejection_resample(_class, [0.8, 0.2], seed=1)))
