"""TensorFlow's random draws and initializer constructors that are not Keras' under their own names
(tf_compat.py's `mapped_call` looks in `CALLS`): `tf.random.gamma` (beta a rate, from this framework's
generator, which `tf.random.set_seed` seeds) and `tf.random_normal_initializer` / `random_uniform_initializer` /
`constant_initializer` / `zeros_initializer` / `ones_initializer` (keras.initializers objects).
`tf.random.normal` / `uniform` / `categorical` are keras.random's (tf_compat.py's `_SAME_RANDOM`).
"""

from __future__ import annotations

import numpy as np


def _random_normal_initializer(mean=0.0, stddev=0.05, seed=None):
    from flexflow_keras import initializers

    return initializers.RandomNormal(mean=mean, stddev=stddev, seed=seed)


def _random_uniform_initializer(minval=-0.05, maxval=0.05, seed=None):
    from flexflow_keras import initializers

    return initializers.RandomUniform(minval=minval, maxval=maxval, seed=seed)


def _constant_initializer(value=0):
    from flexflow_keras import initializers

    return initializers.Constant(value)


def _tf_gamma(shape, alpha, beta=None, dtype="float32", seed=None, name=None):
    """`tf.random.gamma`: samples of shape ``shape + broadcast(alpha, beta).shape``; beta is a rate (TensorFlow's
    inverse scale), drawn from this framework's generator (`tf.random.set_seed` seeds it)."""
    from flexflow_keras import random

    alpha = np.asarray(alpha, np.float64)
    rate = np.ones_like(alpha) if beta is None else np.asarray(beta, np.float64)
    alpha, rate = np.broadcast_arrays(alpha, rate)
    full = tuple(int(s) for s in np.asarray(shape).reshape(-1)) + alpha.shape
    draws = np.asarray(random.gamma(full, np.broadcast_to(alpha, full), dtype="float64", seed=seed))
    return _random_result(draws / np.broadcast_to(rate, full), dtype)


def _random_result(values, dtype):
    from flexflow_keras.ops.eager_tensor import eager

    return eager(np.asarray(values).astype(str(dtype)))


CALLS = {
    "tf.random_normal_initializer": _random_normal_initializer,
    "tf.random_uniform_initializer": _random_uniform_initializer,
    "tf.constant_initializer": _constant_initializer,
    "tf.zeros_initializer": lambda: _constant_initializer(0.0),
    "tf.ones_initializer": lambda: _constant_initializer(1.0),
    "tf.random.gamma": lambda *a, **k: _tf_gamma(*a, **k),
}
