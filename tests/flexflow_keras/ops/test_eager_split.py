"""Eager convolutions split their batch in two halves on two threads (ops/eager_split.py): outputs equal
the whole batch's up to a row's summation order, input gradients too, weight gradients up to the two-way sum's rounding, for
every convolution kind it takes, odd batches included; a one-sample batch and small ops stay whole."""

import numpy as np
import pytest
from eager_split_forcing import forcing

import flexflow_keras as keras
from flexflow_keras.ops import eager_split
from flexflow_keras.ops.tape import GradientTape


@pytest.fixture
def forced(monkeypatch):
    """Split every eligible call, whatever its size and the machine's free cores; count the splits."""
    yield from forcing(monkeypatch, "MIN_MACS")


LAYERS = {
    "conv2d_same_relu": (lambda L: L.Conv2D(6, 3, padding="same", activation="relu"), (9, 9, 4)),
    "conv2d_s2_valid": (lambda L: L.Conv2D(5, 4, strides=2), (11, 10, 3)),
    "conv2d_sigmoid_few": (lambda L: L.Conv2D(3, 5, padding="same", activation="sigmoid"), (8, 8, 16)),
    "conv2d_transpose": (lambda L: L.Conv2DTranspose(4, 4, strides=2, padding="same"), (5, 6, 8)),
    "conv1d": (lambda L: L.Conv1D(7, 3, padding="causal", activation="tanh"), (12, 5)),
}


def _run(layer, x):
    with GradientTape() as tape:
        y = layer(x, training=True)
        loss = keras.ops.sum(y * y)
    grads = tape.gradient([loss], [x] + layer.trainable_variables)
    return np.asarray(y), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_halves_equal_the_whole_batch(kind, batch, forced, monkeypatch):
    make, shape = LAYERS[kind]
    layer = make(keras.layers)
    x = keras.Variable(np.random.default_rng(0).normal(size=(batch,) + shape).astype("float32"))
    layer(x)  # build
    forced.update(forward=0, backward=0)
    y_split, g_split = _run(layer, x)
    assert forced["forward"] == (1 if batch > 1 else 0)
    assert forced["backward"] == (1 if batch > 1 else 0)
    monkeypatch.setattr(eager_split, "MIN_MACS", float("inf"))  # whole from here
    y_whole, g_whole = _run(layer, x)
    # each sample's output and input gradient are its own: equal up to the order in which the GEMM library
    # sums a row's products, which may differ with the number of rows (OpenBLAS on AVX2 hosts)
    ulps = 4 * np.finfo(np.float32).eps
    np.testing.assert_allclose(y_split, y_whole, rtol=0, atol=ulps * np.abs(y_whole).max())
    np.testing.assert_allclose(g_split[0], g_whole[0], rtol=0, atol=ulps * np.abs(g_whole[0]).max())
    for a, b in zip(g_split[1:], g_whole[1:], strict=True):
        # the sum of two halves' partial sums: float32 rounding of the array's scale
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6 * np.abs(b).max())


def test_small_or_busy_calls_stay_whole(monkeypatch):
    calls = []
    monkeypatch.setattr(eager_split, "_split_forward", lambda *a: calls.append(a))
    layer = keras.layers.Conv2D(4, 3)
    layer(np.zeros((4, 8, 8, 2), "float32"))  # far below MIN_MACS
    monkeypatch.setattr(eager_split, "MIN_MACS", 0)
    monkeypatch.setattr(eager_split, "_pool", lambda: None)  # no free core
    layer(np.zeros((4, 8, 8, 2), "float32"))
    assert calls == []


def test_splits_after_a_fit_set_the_kernels_threads(forced):
    """A fit at degree 1 on two cores leaves BLAS at two threads (engine._set_blas_threads); the conv
    kernels' vector GEMM stays single-threaded, so eager convolutions still split."""
    from kernels import _conv_simd

    before = _conv_simd.kernel_threads()
    _conv_simd.set_kernel_threads(2)
    try:
        layer = keras.layers.Conv2D(4, 3)
        layer(np.zeros((4, 8, 8, 2), "float32"))
    finally:
        _conv_simd.set_kernel_threads(before)
    assert forced["forward"] == 1
