"""`tf.random.normal` / `uniform` / `categorical` under `python -m flexflow_keras` take TensorFlow's signatures,
defaults and op seeds, checked against TensorFlow 2.21 (keras.io's ppo_cartpole samples actions with
tf.random.categorical). They ran as keras.random's functions: categorical gave int32 where TensorFlow gives
int64, `name=` was refused, uniform's maxval=None crashed and an integer dtype without maxval gave zeros
(TensorFlow: ValueError), and an op seed (`seed=3`) gave the same values at every call, where TensorFlow's
stateful op gives new ones, reproducibly after tf.random.set_seed."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
LOGITS = np.array([[0.1, 0.5, -1.0]] * 4, np.float32)


@pytest.mark.parametrize("call,low,high", [
    (lambda t: t.random.categorical(LOGITS, 5), 0, 2),
    (lambda t: t.random.categorical(LOGITS, 5, dtype=t.int32, name="c"), 0, 2),
    (lambda t: t.random.categorical(LOGITS, 5, seed=3), 0, 2),
    (lambda t: t.random.uniform((50,), name="u"), 0, 1),
    (lambda t: t.random.uniform((50,), maxval=None), 0, 1),
    (lambda t: t.random.uniform((50,), 3, 7, dtype=t.int64), 3, 6),
    (lambda t: t.random.uniform((50,), dtype=t.float64), 0, 1),
    (lambda t: t.random.normal((50,), 2.0, 0.5, name="n"), -np.inf, np.inf),
], ids=["cat", "cat-int32-name", "cat-seed", "uni-name", "uni-maxNone", "uni-int64", "uni-f64", "normal-name"])
def test_dtype_shape_and_range_as_tensorflow(call, low, high):
    ref, ours = np.asarray(call(tf)), np.asarray(call(FFTF))
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    assert ref.min() >= low and ref.max() <= high
    assert ours.min() >= low and ours.max() <= high


def test_integer_uniform_without_maxval_is_a_value_error_as_tensorflow():
    with pytest.raises(ValueError):
        tf.random.uniform((3,), dtype=tf.int32)
    with pytest.raises(ValueError, match="maxval"):
        FFTF.random.uniform((3,), dtype=FFTF.int32)


@pytest.mark.parametrize("draw", [
    lambda t: float(t.random.uniform((), seed=3)),
    lambda t: float(t.random.normal((), seed=3)),
    lambda t: int(np.asarray(t.random.categorical(np.zeros((1, 50), np.float32), 1, seed=3))[0, 0]),
], ids=["uniform", "normal", "categorical"])
def test_an_op_seed_draws_anew_each_call_and_repeats_after_set_seed(draw):
    for t in (tf, FFTF):
        t.random.set_seed(7)
        first = [draw(t) for _ in range(4)]
        t.random.set_seed(7)
        again = [draw(t) for _ in range(4)]
        assert len(set(first)) > 1 and first == again, (t, first, again)
