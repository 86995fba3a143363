"""Unseeded random draws leave NumPy's global state alone and start again after a re-seed, as in tf.keras 3.15
and TensorFlow 2.21. Ours drew an unseeded SeedGenerator's seed (the global one behind ``keras.random.normal``
and ``tf.random.normal``) from ``np.random``: Deep Learning with Python (2nd ed.) ch. 3 draws
``tf.random.normal`` and then its data with ``np.random.multivariate_normal``, which came out different under
ours. The global generator also kept running across ``keras.utils.set_random_seed``, where Keras resets it."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tf_keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _numpy_state_kept(draw) -> bool:
    np.random.seed(0)
    draw()
    return np.random.random() == np.random.RandomState(0).random_sample()


@pytest.mark.parametrize("draw", [
    lambda k, t: k.random.normal((3,)),
    lambda k, t: k.random.uniform((2, 2)),
    lambda k, t: k.random.SeedGenerator(),
    lambda k, t: t.random.normal((3,)),
    lambda k, t: t.random.uniform((3,)),
], ids=["keras-normal", "keras-uniform", "seed-generator", "tf-normal", "tf-uniform"])
def test_unseeded_draws_leave_numpy_global_state_as_keras(draw):
    ff.utils.set_random_seed(5)  # a fresh global generator: its first draw makes it
    tf_keras.utils.set_random_seed(5)
    assert _numpy_state_kept(lambda: draw(tf_keras, tf))
    assert _numpy_state_kept(lambda: draw(ff, FFTF))


def test_set_random_seed_restarts_unseeded_keras_draws_as_keras():
    for k in (tf_keras, ff):
        k.utils.set_random_seed(1)
        a = [np.asarray(k.random.normal((3,))) for _ in range(2)]
        k.utils.set_random_seed(1)
        b = [np.asarray(k.random.normal((3,))) for _ in range(2)]
        assert not np.array_equal(a[0], a[1]), k
        np.testing.assert_array_equal(a, b, err_msg=str(k))


def test_tf_set_seed_restarts_unseeded_tf_draws_as_tensorflow():
    for t in (tf, FFTF):
        t.random.set_seed(7)
        a = [np.asarray(t.random.normal((3,))) for _ in range(2)]
        t.random.set_seed(7)
        b = [np.asarray(t.random.normal((3,))) for _ in range(2)]
        assert not np.array_equal(a[0], a[1]), t
        np.testing.assert_array_equal(a, b, err_msg=str(t))
