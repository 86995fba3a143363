"""Ops whose output has another rank than their input (an int in a slice, reductions, squeeze, expand_dims,
transpose, reshape, one_hot, argmax) split along the batch give the unsplit numbers: each piece must read its own rows of
the input (x[:, 0] under data parallelism read every row: keras-io's collaborative filtering crashed)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers, ops

CASES = {
    "int_index": lambda t: t[:, 0],
    "slice_and_int": lambda t: t[:, 1:3, 0],
    "mean": lambda t: ops.mean(t, axis=1),
    "max": lambda t: ops.max(t, axis=1),
    "sum_two_axes": lambda t: ops.sum(t, axis=(1, 2)),
    "squeeze": lambda t: ops.squeeze(t[:, :1], axis=1),
    "expand_dims": lambda t: ops.expand_dims(t, 1),
    "transpose": lambda t: ops.transpose(t, (0, 2, 1)),
    "reshape": lambda t: ops.reshape(t, (-1, 12)),
    "one_hot": lambda t: ops.one_hot(ops.cast(t[:, 0, 0] * 3, "int32"), 3),  # (N,) ids -> (N, 3)
    "argmax": lambda t: ops.cast(ops.argmax(t, axis=1), "float32"),  # (N, 4, 3) -> (N, 3)
    "argmin_keepdims": lambda t: ops.cast(ops.argmin(t, axis=-1, keepdims=True), "float32"),
    "one_hot_axis1": lambda t: ops.one_hot(ops.cast(t[:, :, 0] * 3, "int32"), 3, axis=1),  # (N, 4) -> (N, 3, 4)
}


def _loss(fn, degree: int) -> list[float]:
    config.set(cpus=2, data_parallel_degree=degree)
    keras.backend.clear_session()
    keras.utils.set_random_seed(1)
    inp = keras.Input((4, 3))
    y = layers.Lambda(fn)(inp)
    y = layers.Flatten()(y) if len(y.shape) > 2 else (layers.Reshape((1,))(y) if len(y.shape) == 1 else y)
    model = keras.Model(inp, layers.Dense(1)(y))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, target = rng.random((64, 4, 3)).astype("float32"), rng.random((64, 1)).astype("float32")
    return model.fit(x, target, batch_size=32, epochs=2, verbose=0, shuffle=False).history["loss"]


@pytest.fixture(autouse=True)
def _reset(request):
    request.addfinalizer(config.reset)


@pytest.mark.parametrize("case", sorted(CASES))
def test_batch_split_gives_the_unsplit_loss(case):
    np.testing.assert_allclose(_loss(CASES[case], 2), _loss(CASES[case], 1), rtol=1e-6)
