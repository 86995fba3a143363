"""`tf.random.Generator.from_seed(seed, alg='philox')` under `python -m flexflow_keras`: `make_seeds` and int64
`uniform_full_int` give TensorFlow 2.21's values, call after call (its state advances as TensorFlow's), as
TensorFlow's data augmentation tutorial draws a seed per image with ``rng.make_seeds(1)[:, 0]`` in a
Dataset.map; it was refused as raw TensorFlow. The generator's other draws are refused by name."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _draws(t, seed):
    g = t.random.Generator.from_seed(seed, alg="philox")
    out = [np.asarray(g.state).tolist()]
    for count in (1, 2, 3):
        out.append(np.asarray(g.make_seeds(count)).tolist())
        out.append(np.asarray(g.state).tolist())
    out.append(np.asarray(g.uniform_full_int([2, 2], dtype=t.int64)).tolist())
    out.append(np.asarray(g.state).tolist())
    return out


@pytest.mark.parametrize("seed", [0, 123, 2**40 + 7])
def test_generator_seeds_as_tf(seed):
    assert _draws(FFTF, seed) == _draws(tf, seed)


def test_seeds_feed_the_stateless_ops_as_tf():
    def run(t):
        rng = t.random.Generator.from_seed(123, alg="philox")
        ds = t.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(3, 4))
        return [np.asarray(t.random.stateless_uniform([2], seed=rng.make_seeds(1)[:, 0])).tolist() for _ in ds]

    assert run(FFTF) == run(tf)


def test_other_draws_are_refused_by_name():
    g = FFTF.random.Generator.from_seed(1)
    with pytest.raises(RawTensorFlowError, match="Generator.normal"):
        g.normal([2])
