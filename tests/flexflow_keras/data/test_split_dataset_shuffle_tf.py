"""keras.utils.split_dataset(shuffle=True) shuffles as tf.keras 3.15: Keras 3 seeds Python's global `random`
with the seed (drawing one, ``random.randint(0, 10**6)``, when it is None) and `random.shuffle`s the samples,
so the same seed puts the same samples in each part, and Python's random is left where Keras leaves it.
Ours permuted with a NumPy generator of the seed: other samples in each part for the same seed, and
Python's random untouched (a script's own `random.shuffle` afterwards gave another order)."""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _tk_split(data, **kwargs):
    parts = tk.utils.split_dataset(data, **kwargs)
    return [[np.stack([np.asarray(e[k] if isinstance(e, tuple) else e) for e in part])
             for k in range(len(data) if isinstance(data, tuple) else 1)] for part in parts]


def _ff_split(data, **kwargs):
    parts = ff.utils.split_dataset(data, **kwargs)
    return [list(p) if isinstance(data, tuple) else [p] for p in parts]


@pytest.mark.parametrize("kwargs", [
    {"left_size": 0.8, "seed": 5},
    {"left_size": 3, "right_size": 4, "seed": 123},
    {"right_size": 0.25, "seed": 0},
    {"left_size": 0.5},  # seed None: one draw of Python's random gives it
])
def test_shuffled_split_and_pythons_random_as_tf_keras(kwargs):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int64) * 3
    got_state = want_state = None
    for split, which in ((_tk_split, "tk"), (_ff_split, "ff")):
        random.seed(7)
        parts = split((x, y), shuffle=True, **kwargs)
        after = [random.random() for _ in range(3)]
        if which == "tk":
            want, want_state = parts, after
        else:
            got, got_state = parts, after
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            np.testing.assert_array_equal(a, b)
    assert got_state == want_state


def test_an_unshuffled_split_leaves_pythons_random_alone():
    random.seed(3)
    ff.utils.split_dataset(np.arange(10), left_size=0.5)
    assert random.random() == random.Random(3).random()
