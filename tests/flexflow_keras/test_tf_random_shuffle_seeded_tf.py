"""tf.random.shuffle after tf.random.set_seed, or with an op seed, gives TensorFlow 2.21's order: its
RandomShuffle kernel swaps row i with row i + word % (n - i) along the Philox stream of (seed, seed2), kept
per seeds and dtype across calls (the eager kernel cache) and started again by set_seed; an op given no seed
takes the next of random.Random(global seed)'s draws (context.internal_operation_seed), which
tf.random.normal / uniform without a seed also take. ZTM's TensorFlow course notebook 00 shuffles a (3, 2)
tensor after tf.random.set_seed(42): ours drew another order from its own generator."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _orders(t):
    out = []
    x = t.constant([[10, 7], [3, 4], [2, 5]])
    v = t.constant(np.arange(10, dtype=np.float32))
    t.random.set_seed(42)
    out.append(t.random.shuffle(x, seed=42))
    t.random.set_seed(42)
    out += [t.random.shuffle(x), t.random.shuffle(x)]  # op seeds from the global seed's draws
    out += [t.random.shuffle(v, seed=3), t.random.shuffle(v, seed=3), t.random.shuffle(x, seed=3)]  # kept streams
    t.random.set_seed(7)
    t.random.normal([2])  # takes an op seed draw too
    out += [t.random.shuffle(v), t.random.shuffle(t.constant(np.arange(37))), t.random.shuffle(t.constant([[1.0]]))]
    t.random.set_seed(2**40 + 5)
    out.append(t.random.shuffle(t.constant(np.arange(6).reshape(6, 1)), seed=0))
    return [np.asarray(o).tolist() for o in out]


def test_seeded_shuffles_as_tensorflow():
    want = _orders(tf)
    assert want[0] == [[10, 7], [3, 4], [2, 5]] and want[1] == [[3, 4], [2, 5], [10, 7]]  # the notebook's
    assert _orders(FFTF) == want
