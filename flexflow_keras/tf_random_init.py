"""TensorFlow's random draws and initializer constructors that are not Keras' under their own names
(tf_compat.py's `mapped_call` looks in `CALLS`): `tf.random.gamma` (beta a rate, from this framework's
generator, which `tf.random.set_seed` seeds) and `tf.random_normal_initializer` / `random_uniform_initializer` /
`constant_initializer` / `zeros_initializer` / `ones_initializer` (keras.initializers objects), and
`tf.random.normal` / `uniform` / `categorical` with TensorFlow's signatures and defaults, drawn by keras.random.

TensorFlow's op seed is not Keras' int seed: `tf.random.uniform(shape, seed=3)` is a stateful op whose
successive calls (eager, or steps of a traced function) give new values, reproducibly after
`tf.random.set_seed`; Keras' `seed=3` gives the same values at every call. So an int op seed here draws from
a `SeedGenerator(seed)` kept per op seed, and `tf.random.set_seed` (which re-creates the framework's
generator) starts those streams again.
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


_op_streams: dict = {"generator": None, "by_seed": {}}


def _tf_seed(seed):
    """keras.random's seed for TensorFlow's op seed: None stays None (the global generator), an int takes its
    own SeedGenerator, which advances at each call as TensorFlow's stateful op does."""
    from flexflow_keras import random
    from flexflow_keras.utils import rng

    if seed is None or isinstance(seed, random.SeedGenerator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"TensorFlow's random ops take seed as None or an integer, received {seed!r} "
                        f"(of type {type(seed).__name__}).")
    if _op_streams["generator"] is not rng.generator():  # tf.random.set_seed since: the streams start again
        _op_streams["generator"], _op_streams["by_seed"] = rng.generator(), {}
    return _op_streams["by_seed"].setdefault(int(seed), random.SeedGenerator(int(seed)))


def _tf_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """`tf.random.normal`: float32 unless `dtype` says otherwise (not Keras' floatx)."""
    from flexflow_keras import random

    return random.normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=_tf_seed(seed))


def _tf_uniform(shape, minval=0, maxval=None, dtype="float32", seed=None, name=None):
    """`tf.random.uniform`: values in [minval, maxval); maxval None is 1 for floats and must be given for
    integer dtypes (TensorFlow's ValueError)."""
    from flexflow_keras import random

    if maxval is None:
        if np.issubdtype(np.dtype(dtype), np.integer):
            raise ValueError(f"tf.random.uniform: must specify maxval for integer dtype {np.dtype(dtype).name} "
                             f"(integers are drawn from [minval, maxval)); pass maxval=, e.g. "
                             f"tf.random.uniform(shape, 0, 10, dtype=tf.int32).")
        maxval = 1
    return random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=_tf_seed(seed))


def _tf_categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`tf.random.categorical`: int64 class ids unless `dtype` says otherwise (keras.random's default is
    int32)."""
    from flexflow_keras import random

    return random.categorical(logits, num_samples, dtype="int64" if dtype is None else dtype,
                              seed=_tf_seed(seed))


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
    "tf.random.normal": _tf_normal,
    "tf.random.uniform": _tf_uniform,
    "tf.random.categorical": _tf_categorical,
}
