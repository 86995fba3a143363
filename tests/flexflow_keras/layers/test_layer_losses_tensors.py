"""`layer.losses` outside a tape holds 0-d tensors of the weight's dtype, as Keras 3's (keras.io's
subclassing guide reads them; a Python float has no .numpy() or .shape)."""

import numpy as np

import flexflow_keras as keras


def test_regularization_penalties_are_float32_scalars_with_numpy():
    layer = keras.layers.Dense(3, kernel_regularizer=keras.regularizers.L2(0.1), bias_regularizer="l1")
    layer.build((None, 4))
    layer.bias.assign(np.array([1.0, -2.0, 0.5], "float32"))
    kernel_penalty, bias_penalty = layer.losses
    for p in (kernel_penalty, bias_penalty):
        assert p.shape == () and p.dtype == "float32" and isinstance(p.numpy(), np.floating | np.ndarray)
    assert np.isclose(float(kernel_penalty), 0.1 * np.sum(layer.kernel.numpy() ** 2), rtol=1e-6)
    assert np.isclose(float(bias_penalty), 0.01 * 3.5, rtol=1e-6)
    assert np.isclose(float(sum(layer.losses)), float(kernel_penalty) + float(bias_penalty))
