"""Large eager element-wise activations split their batch in two halves on two threads, as the large
convolutions do (ops/eager_split.py): outputs and input gradients equal the whole batch's exactly; small
ones stay whole."""

import numpy as np
import pytest
from eager_split_forcing import forcing

import flexflow_keras as keras
from flexflow_keras.ops import eager_split
from flexflow_keras.ops.tape import GradientTape


@pytest.fixture
def forced(monkeypatch):
    """Split every eligible call whatever its size and the machine's free cores; count the splits."""
    yield from forcing(monkeypatch, "MIN_ELEMENTS")


def _run(layer, x):
    with GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = keras.ops.sum(y * y)
    return np.asarray(y), np.asarray(tape.gradient(loss, x))


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("make", [lambda: keras.layers.LeakyReLU(negative_slope=0.2),
                                  lambda: keras.layers.Activation("sigmoid"), lambda: keras.layers.Activation("tanh"),
                                  lambda: keras.layers.ReLU(), lambda: keras.layers.Activation("gelu")])
def test_halves_equal_the_whole_batch(make, batch, forced, monkeypatch):
    layer = make()
    x = keras.ops.convert_to_tensor(np.random.default_rng(batch).normal(size=(batch, 6, 5, 3)).astype("float32"))
    y_split, g_split = _run(layer, x)
    assert forced["forward"] == (1 if batch > 1 else 0)
    assert forced["backward"] == (1 if batch > 1 else 0)
    monkeypatch.setattr(eager_split, "MIN_ELEMENTS", float("inf"))  # whole from here
    y_whole, g_whole = _run(layer, x)
    np.testing.assert_array_equal(y_split, y_whole)
    np.testing.assert_array_equal(g_split, g_whole)


def test_small_activations_stay_whole(monkeypatch):
    calls = []
    monkeypatch.setattr(eager_split, "_split_forward", lambda *a: calls.append(a))
    keras.layers.LeakyReLU()(np.zeros((4, 8, 8, 2), "float32"))  # far below MIN_ELEMENTS
    monkeypatch.setattr(eager_split, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(eager_split, "_pool", lambda: None)  # no free core
    keras.layers.LeakyReLU()(np.zeros((4, 8, 8, 2), "float32"))
    assert calls == []
