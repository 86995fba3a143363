"""A model whose output has shape (batch,): Keras' losses reduce its last axis (the batch) to the batch
mean; training gives tf.keras' losses and metrics."""

from __future__ import annotations

import numpy as np
import pytest

import flexflow_keras as keras


def history(k):
    x = np.random.default_rng(0).random((32, 4)).astype(np.float32)
    y = np.random.default_rng(1).random((32,)).astype(np.float32)
    i = k.Input((4,))
    m = k.Model(i, k.ops.squeeze(k.layers.Dense(1, kernel_initializer="ones")(i), axis=-1))
    m.compile(k.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return m.fit(x, y, batch_size=8, verbose=0, epochs=2, shuffle=False).history


def test_a_batch_shaped_output_trains_like_tf_keras():
    ours = history(keras)
    assert ours["loss"][1] < ours["loss"][0]
    tf = pytest.importorskip("tensorflow")
    theirs = history(tf.keras)
    for key in ("loss", "mae"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5)
