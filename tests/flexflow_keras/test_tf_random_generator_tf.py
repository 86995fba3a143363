"""`tf.random.Generator.from_seed(seed, alg='philox')` under `python -m flexflow_keras`: `make_seeds`,
`uniform_full_int`, `normal`, `uniform` and `truncated_normal` give TensorFlow 2.21's values, call after call
(its state advances as TensorFlow's), as TensorFlow's data augmentation tutorial draws a seed per image with
``rng.make_seeds(1)[:, 0]`` in a Dataset.map, and ZTM's TensorFlow course notebook 00 draws
``tf.random.Generator.from_seed(42).normal(shape=(3, 2))`` (refused by name before). Float32 normals agree
to a few ulps (NumPy's sin, cos and log); the generator's other methods are refused by name."""

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


def _values(t, seed):
    g = t.random.Generator.from_seed(seed)
    return [np.asarray(v, np.float64) for v in (
        g.normal(shape=(3, 2)), g.normal([5], mean=1.0, stddev=2.0), g.normal([3], dtype=t.float64),
        g.uniform([7]), g.uniform([3], minval=-1.0, maxval=2.0, dtype=t.float64),
        g.uniform([6], minval=3, maxval=17, dtype=t.int32), g.uniform([3], minval=-5, maxval=100, dtype=t.int64),
        g.truncated_normal([6]), g.uniform_full_int([3], dtype=t.int32), g.uniform([2, 2], dtype=t.float16),
        g.state)]


@pytest.mark.parametrize("seed", [42, 11, 2**70 + 3])
def test_generator_draws_as_tf(seed):
    for got, want in zip(_values(FFTF, seed), _values(tf, seed), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


def test_notebook_normals_are_equal_for_one_seed_and_differ_for_another():
    r1 = FFTF.random.Generator.from_seed(42).normal(shape=(3, 2))
    r2 = FFTF.random.Generator.from_seed(42).normal(shape=(3, 2))
    r4 = FFTF.random.Generator.from_seed(11).normal(shape=(3, 2))
    assert np.asarray(r1 == r2).all() and not np.asarray(r1 == r4).any()
    np.testing.assert_allclose(np.asarray(r1), tf.random.Generator.from_seed(42).normal(shape=(3, 2)).numpy(),
                               atol=1e-6)


def test_integer_uniform_needs_both_bounds_as_tf():
    with pytest.raises(ValueError, match="minval"):
        tf.random.Generator.from_seed(1).uniform([2], maxval=5, minval=None, dtype=tf.int32)
    with pytest.raises(ValueError, match="minval"):
        FFTF.random.Generator.from_seed(1).uniform([2], maxval=5, minval=None, dtype="int32")


def test_other_methods_are_refused_by_name():
    g = FFTF.random.Generator.from_seed(1)
    with pytest.raises(RawTensorFlowError, match="Generator.binomial"):
        g.binomial([2], counts=3.0, probs=0.5)
