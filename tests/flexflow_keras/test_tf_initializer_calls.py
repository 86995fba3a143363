"""TensorFlow's initializer classes in the ``tf`` namespace that keras.io scripts pass to layers:
``tf.random_uniform_initializer(minval=-0.003, maxval=0.003)`` (keras.io's DDPG pendulum, the actor's last
layer) raised "raw TensorFlow is not supported" under ``python -m flexflow_keras``; it, and
``tf.constant_initializer`` / ``tf.zeros_initializer`` / ``tf.ones_initializer``, are now Keras'
RandomUniform and Constant (tf_compat.py), with TensorFlow's defaults."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import keras_alias

TF = keras_alias._TensorFlow("tensorflow")  # the `tf` a script gets under python -m flexflow_keras


def _kernel(init):
    layer = keras.layers.Dense(64, kernel_initializer=init)
    layer.build((None, 32))
    return np.asarray(layer.kernel.numpy() if hasattr(layer.kernel, "numpy") else layer.kernel)


def test_random_uniform_initializer_draws_within_its_bounds():
    w = _kernel(TF.random_uniform_initializer(minval=-0.003, maxval=0.003))
    assert w.shape == (32, 64) and np.abs(w).max() <= 0.003 and w.std() > 0.001
    default = _kernel(TF.random_uniform_initializer())
    assert np.abs(default).max() <= 0.05 and default.std() > 0.02


@pytest.mark.parametrize("init, value", [(lambda: TF.constant_initializer(0.5), 0.5),
                                         (lambda: TF.zeros_initializer(), 0.0),
                                         (lambda: TF.ones_initializer(), 1.0)])
def test_constant_initializers_fill_their_value(init, value):
    np.testing.assert_array_equal(_kernel(init()), np.full((32, 64), value, np.float32))
