"""`cache()` replays the elements of its first full pass, as tf.data's does: a shuffle before it keeps its
first order in later passes (ours reshuffled each pass), a repeat after it repeats that order, a shuffle
after it still reshuffles, and a pass cut short by a later take() leaves the cache unfinished, so the next
pass reads (and reshuffles) its input again. The orders themselves are each framework's own shuffle."""

import numpy as np
import pytest

from flexflow_keras.data.slices import SliceDataset as D

tf = pytest.importorskip("tensorflow")


def _pipelines(Dataset):
    base = lambda: Dataset.from_tensor_slices(np.arange(8)).shuffle(8, seed=1)  # noqa: E731
    return {
        "cache": base().cache(),
        "cache, repeat": base().cache().repeat(2),
        "cache, shuffle": base().cache().shuffle(8, seed=2),
        "cache, take": base().cache().take(5),
        "cache, batch": base().cache().batch(3),
        "no cache": base(),
    }


def _passes(ds, n=3):
    return [np.concatenate([np.ravel(np.asarray(e)) for e in ds]).tolist() for _ in range(n)]


@pytest.mark.parametrize("name", list(_pipelines(D)))
def test_which_passes_repeat_the_first_order_as_tf_data(name):
    ours, theirs = _passes(_pipelines(D)[name]), _passes(_pipelines(tf.data.Dataset)[name])
    assert [p == ours[0] for p in ours] == [p == theirs[0] for p in theirs], (ours, theirs)
    if name == "cache, take":  # which five come first is each framework's own shuffle
        assert [len(p) for p in ours] == [len(p) for p in theirs]
    else:
        assert [sorted(p) for p in ours] == [sorted(p) for p in theirs]
    if name == "cache, repeat":  # the two repetitions of one pass are the cached order twice
        assert ours[0][:8] == ours[0][8:]
