"""evaluate() refuses arguments it does not take, as tf.keras 3.15's ("Arguments not recognized"); before, a
misspelt or Keras 2 argument (evaluate(x, y, workers=4), sample_weights=...) was swallowed silently."""

import numpy as np
import pytest

import flexflow_keras as ff

X = np.linspace(-1, 1, 32).reshape(8, 4).astype("float32")
Y = np.linspace(0, 1, 8).reshape(8, 1).astype("float32")


def _outcome(lib, **kwargs):
    inp = lib.Input((4,))
    model = lib.Model(inp, lib.layers.Dense(1)(inp))
    model.compile("sgd", "mse")
    try:
        model.evaluate(X, Y, verbose=0, **kwargs)
    except ValueError:
        return "ValueError"
    return "accepted"


@pytest.mark.parametrize("kwargs", [{"workers": 4}, {"sample_weights": np.ones(8)}, {}])
def test_evaluate_unknown_arguments_as_tf_keras(kwargs):
    tf = pytest.importorskip("tensorflow")
    assert _outcome(ff, **kwargs) == _outcome(tf.keras, **kwargs) == ("accepted" if not kwargs else "ValueError")
