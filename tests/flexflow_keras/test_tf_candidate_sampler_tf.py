"""`tf.random.log_uniform_candidate_sampler` under `python -m flexflow_keras` (TensorFlow's word2vec tutorial
draws its negative samples with it, seed=42; it was refused as raw TensorFlow): with an op seed TensorFlow's
own candidates and expected counts, call after call and after tf.random.set_seed; without one TensorFlow's
Zipfian distribution from this framework's draws."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
TRUE = np.array([[3], [0], [17]], "int64")


def _draw(t, unique, num_sampled=6, range_max=40, seed=42, true=TRUE):
    return t.random.log_uniform_candidate_sampler(true_classes=true, num_true=1, num_sampled=num_sampled,
                                                  unique=unique, range_max=range_max, seed=seed)


@pytest.mark.parametrize("unique", [False, True])
def test_shapes_dtypes_and_expected_counts_as_tensorflow(unique):
    got, want = _draw(FFTF, unique), _draw(tf, unique)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).shape == tuple(w.shape) and np.asarray(g).dtype == w.numpy().dtype
    sampled = np.asarray(got[0])
    assert ((0 <= sampled) & (sampled < 40)).all()

    def prob(c):
        return (np.log(np.asarray(c, np.float64) + 2.0) - np.log(np.asarray(c, np.float64) + 1.0)) / np.log(41.0)

    if unique:  # p * 6 when no draw repeated, else -expm1(tries * log1p(-p)) with one count of tries for all
        assert len(set(sampled.tolist())) == 6
        counts = np.concatenate([np.asarray(got[1]).ravel(), np.asarray(got[2])])
        p = np.concatenate([prob(TRUE).ravel(), prob(sampled)])
        if not np.allclose(counts, p * 6, rtol=1e-5):
            tries = np.log1p(-counts) / np.log1p(-p)
            np.testing.assert_allclose(tries, np.round(tries[0]), rtol=1e-3)
    else:  # p * num_sampled, deterministic: TensorFlow's values
        np.testing.assert_allclose(np.asarray(got[1]), want[1].numpy(), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got[2]), prob(sampled) * 6, rtol=1e-6)


def test_distribution_is_tensorflows_zipf():
    counts = {}
    for name, t in (("ff", FFTF), ("tf", tf)):
        draws = np.concatenate([np.asarray(_draw(t, False, 500, 10, None, TRUE % 10)[0]) for _ in range(20)])
        counts[name] = np.bincount(draws, minlength=10) / len(draws)
    p = (np.log(np.arange(10) + 2.0) - np.log(np.arange(10) + 1.0)) / np.log(11.0)
    np.testing.assert_allclose(counts["ff"], p, atol=0.02)
    np.testing.assert_allclose(counts["tf"], p, atol=0.02)


def _calls(t, global_seed=None):
    t.random.set_seed(global_seed)  # None too: no global seed, and the kernels (their streams) start again
    out = []
    for unique, num_sampled, range_max, seed in ((True, 4, 9, 42), (True, 4, 9, 42), (False, 6, 100, 42),
                                                 (True, 5, 4096, 42), (True, 8, 10, 42), (True, 4, 9, 7),
                                                 (True, 4, 9, 42)):
        got = t.random.log_uniform_candidate_sampler(np.array([[1], [3]], "int64"), 1, num_sampled, unique,
                                                     range_max, seed=seed)
        out.append([np.asarray(g) for g in got])
    return out


@pytest.mark.parametrize("global_seed", [None, 1234])
def test_seeded_draws_are_tensorflows(global_seed):
    # successive calls advance one stream per (seeds, attributes), as TensorFlow's cached eager kernels do;
    # 8 of 10 classes unique needs rejections (expected counts from the tries)
    got, want = _calls(FFTF, global_seed), _calls(tf, global_seed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[0], w[0])
        np.testing.assert_allclose(g[1], w[1], rtol=1e-6)
        np.testing.assert_allclose(g[2], w[2], rtol=1e-6)
    assert [g[0].tolist() for g in _calls(FFTF, global_seed)] == [g[0].tolist() for g in got]  # set_seed restarts
    FFTF.random.set_seed(None)
    tf.random.set_seed(None)


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match="range is too small"):
        _draw(FFTF, True, num_sampled=5, range_max=3)
    with pytest.raises(ValueError, match="out of range"):
        _draw(FFTF, True, range_max=10)
    with pytest.raises(ValueError, match="true_classes must be a matrix"):
        FFTF.random.log_uniform_candidate_sampler(np.array([1, 2]), 1, 2, True, 10)
