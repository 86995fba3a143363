"""keras.random's eager draws (categorical for sampling a token from predicted logits, gamma, beta,
binomial): their distributions, seeds that repeat, and a clear error on symbolic tensors."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import tf_compat


def test_categorical_follows_the_softmax_of_the_logits():
    probs = np.array([[0.1, 0.7, 0.2], [0.9, 0.05, 0.05]])
    draws = keras.random.categorical(np.log(probs), 40000, seed=3)
    assert draws.shape == (2, 40000) and draws.dtype == np.int32
    freq = np.stack([np.bincount(r, minlength=3) / 40000 for r in draws])
    np.testing.assert_allclose(freq, probs, atol=0.01)
    np.testing.assert_array_equal(keras.random.categorical(np.log(probs), 5, seed=3),
                                  keras.random.categorical(np.log(probs), 5, seed=3))
    assert tf_compat.mapped_call("tf.random.categorical")(np.log(probs), 5).dtype == np.int64  # TensorFlow's
    with pytest.raises(ValueError, match="draws eagerly"):
        keras.random.categorical(keras.Input((3,)), 1)


def test_gamma_beta_binomial_moments():
    g = keras.random.gamma((50000,), 3.0, seed=1)
    b = keras.random.beta((50000,), 2.0, 6.0, seed=1)
    n = keras.random.binomial((50000,), 10, 0.3, seed=1)
    assert abs(g.mean() - 3.0) < 0.05 and abs(b.mean() - 0.25) < 0.01 and abs(n.mean() - 3.0) < 0.05
    assert g.dtype == b.dtype == n.dtype == np.float32
