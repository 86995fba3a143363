"""MaxPooling1D/2D of an input holding NaN or -inf give tf.keras 3.15's values and input gradients
(TensorFlow's CPU MaxPool: the value skips NaN and starts from the dtype's lowest finite value; its
gradient goes to the first maximum of a scan from the window's first position, a NaN there included).
Ours kept a NaN at a window's first position as its value, and gave -inf for a window of -inf."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
NAN, INF = np.nan, np.inf
WINDOWS = [[NAN, 1, 2, .5], [1, NAN, 2, .5], [1, 0, 2, NAN], [NAN] * 4, [NAN, -INF, -INF, -INF], [NAN, 2, 2, 1],
           [NAN, NAN, 3, 1], [-INF] * 4, [1, NAN, NAN, NAN], [3, 1, 2, 0]]


def _input():
    x = np.array(WINDOWS, np.float32).T.reshape(2, 2, len(WINDOWS))  # channel k: window k, 2x2
    return np.concatenate([x, x[::-1]], axis=1)[None]  # (1, 2, 4, C): and its rows swapped


def _call(T, layer, x, dtype):
    x = T.convert_to_tensor(x)
    with T.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = T.reduce_sum(y * T.constant(np.arange(1, y.shape[-1] + 1, dtype=dtype)))
    return np.asarray(y), np.asarray(tape.gradient(loss, x))


@pytest.mark.parametrize("name, kwargs, rank, dtype", [
    ("MaxPooling2D", {}, 4, "float32"),  # the 2x2 fast path
    ("MaxPooling2D", {"pool_size": 2, "strides": 1}, 4, "float32"),  # overlapping windows
    ("MaxPooling2D", {"pool_size": (2, 3), "strides": 1, "padding": "same"}, 4, "float32"),
    ("MaxPooling2D", {"dtype": "float64"}, 4, "float64"),
    ("MaxPooling1D", {}, 3, "float32"),
    ("MaxPooling1D", {"pool_size": 3, "strides": 1}, 3, "float32"),
])
def test_max_pooling_of_nan_and_inf_as_tf_keras(name, kwargs, rank, dtype):
    x = _input().astype(dtype)
    if rank == 3:
        x = x[:, 0]
    want_y, want_g = _call(tf, getattr(tk.layers, name)(**kwargs), x, dtype)
    got_y, got_g = _call(FFTF, getattr(ff.layers, name)(**kwargs), x, dtype)
    assert got_y.dtype == want_y.dtype
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_array_equal(got_g, want_g)
