"""Python operators on eager tensors take a non-tensor operand in the tensor's dtype, as TensorFlow's do
(EagerTensor._operand): keras.io's deep_q_network_breakout computes
``rewards_sample + gamma * tf.reduce_max(future_rewards, axis=1)`` with a Python list of rewards, float32 in
TensorFlow and float64 here before, and its Huber loss with it. tf.Variable of Python lists and tf.constant of
NumPy scalars take TensorFlow's dtypes too. Against TensorFlow 2.21."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")

F = [1.0, 2.0, 3.0]
OPERANDS = {"list": [0.5, 2.0, 4.0], "int list": [1, 2, 4], "tuple": (0.5, 2.0, 4.0), "float64 array":
            np.array([0.5, 2.0, 4.0]), "float64 scalar": np.float64(0.25), "int64 array": np.array([1, 2, 4])}
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
       "**": lambda a, b: a ** b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "//": lambda a, b: a // b}


def _pair(t, operand, op, reverse):
    return OPS[op](operand, t) if reverse else OPS[op](t, operand)


@pytest.mark.parametrize("reverse", [False, True], ids=["tensor first", "tensor second"])
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kind", list(OPERANDS))
def test_float32_tensor_operators_keep_float32(kind, op, reverse):
    want = _pair(tf.constant(F), OPERANDS[kind], op, reverse)
    got = _pair(FFTF.constant(F), OPERANDS[kind], op, reverse)
    assert np.asarray(got).dtype == want.dtype.as_numpy_dtype, (kind, op, reverse, np.asarray(got).dtype)
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_int32_tensor_with_an_int_list_stays_int32():
    want = tf.constant([1, 2, 3]) * [2, 3, 4]
    got = FFTF.constant([1, 2, 3]) * [2, 3, 4]
    assert np.asarray(got).dtype == np.int32 == want.dtype.as_numpy_dtype
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_dqn_targets_and_loss_while_a_tape_records():
    """The DQN update: list + gamma * max, done masks, one-hot masks, a Huber loss and its gradient."""
    q_next = np.random.RandomState(0).rand(4, 3).astype(np.float32)
    rewards, done = [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]
    results = []
    for lib in (tf, FFTF):
        w = lib.Variable(np.ones((3, 3), np.float32))
        target = rewards + 0.99 * lib.reduce_max(q_next, axis=1)
        d = lib.convert_to_tensor(done)
        target = target * (1 - d) - d
        with lib.GradientTape() as g:
            q = lib.matmul(q_next, w)
            q_action = lib.reduce_sum(q * lib.one_hot([0, 2, 1, 0], 3), axis=1)
            loss = (q_action - target) ** 2 * [0.5, 0.5, 0.5, 0.5]
            loss = lib.reduce_mean(loss)
        results.append((np.asarray(target), np.asarray(loss), np.asarray(g.gradient(loss, w))))
    for want, got in zip(results[0], results[1], strict=True):
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("value", [[1.0, 2.0], [1, 2], (1.5, 2), [[1, 2]], [True], 2.0, 3, np.float64(2.0),
                                   np.array([1, 2]), np.float32(1.5)], ids=repr)
def test_variable_and_constant_dtypes(value):
    assert np.asarray(FFTF.Variable(value)).dtype == tf.Variable(value).dtype.as_numpy_dtype
    assert np.asarray(FFTF.constant(value)).dtype == tf.constant(value).dtype.as_numpy_dtype
