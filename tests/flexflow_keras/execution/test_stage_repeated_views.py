"""A strided view passed to one task at several positions is staged once (execution/tasks.stage): a layer
taking one tensor twice (`Add()([h, h])`) under a strategy that splits it along a non-batch dim writes
its input's gradient through one position and adds into it through the other."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.execution.tasks import stage, unstage
from flexflow_keras.ops.strategy import ParallelConfig, Strategy
from runtime.privileges import READ_ONLY, READ_WRITE, WRITE_DISCARD


def test_one_view_at_two_written_positions_gets_one_stand_in():
    base = np.zeros((4, 6), np.float32)
    view = base[:, 2:4]  # strided
    again = base[:, 2:4]  # the same elements through another view object
    arrays, back = stage([view, again, base[:, :1]], (WRITE_DISCARD, READ_WRITE, READ_ONLY))
    assert arrays[0] is arrays[1] and arrays[0].flags.c_contiguous
    arrays[0][...] = 2.0  # the kernel overwrites through one position
    arrays[1] += 3.0  # and accumulates through the other
    unstage(back)
    np.testing.assert_array_equal(base[:, 2:4], 5.0)
    np.testing.assert_array_equal(base[:, :2], 0.0)


def _fit(op: str, split: bool):
    config.reset()
    config.set(cpus=2, data_parallel_degree=1)
    keras.utils.set_random_seed(1)
    i = keras.Input((12,))
    h = layers.Dense(12, name="d1")(i)
    h = (layers.Add(name="dup") if op == "add" else layers.Multiply(name="dup"))([h, h])
    model = keras.Model(i, layers.Dense(4, activation="softmax", name="d2")(h))
    strategy = Strategy({"dup": ParallelConfig((1, 2), (0, 1), 1)}, "test") if split else None
    model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", strategy=strategy)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 12)).astype("float32"), rng.integers(0, 4, 16)
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    return hist.history["loss"], model.get_weights()


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_a_tensor_taken_twice_by_a_split_op_trains_as_on_one_processor(op):
    loss1, w1 = _fit(op, split=False)
    loss2, w2 = _fit(op, split=True)
    np.testing.assert_allclose(loss2, loss1, rtol=1e-6)
    for a, b in zip(w2, w1, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
