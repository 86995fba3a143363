"""Helpers for the keras.ops parity tests (test_*_tf.py here): a function written once as ``fn(K, x)`` runs
on Keras 3 (``K = keras.ops``, TensorFlow backend) and on flexflow_keras (``K = flexflow_keras.ops``):
eagerly, recorded in a functional model (a Lambda), and under both GradientTapes."""

from __future__ import annotations

import numpy as np


def to_numpy(v):
    """A Keras (TensorFlow) or flexflow_keras result as a NumPy array (lists and tuples element-wise)."""
    if isinstance(v, list | tuple):
        return [to_numpy(u) for u in v]
    return np.asarray(v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else v)


def assert_same(got, want, rtol=1e-5, atol=1e-6, what=""):
    """Same dtype, shape and values (NaNs equal; bools and ints exactly)."""
    got, want = to_numpy(got), to_numpy(want)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (what, type(got))
        for g, w in zip(got, want, strict=True):
            assert_same(g, w, rtol, atol, what)
        return
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, Keras {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, Keras {want.shape}"
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def keras_gradient(tf, keras, fn, x, weights):
    """d sum(fn(keras.ops, x) * weights) / dx with tf.GradientTape."""
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(tf.cast(fn(keras.ops, xt), xt.dtype) * weights)
    return tape.gradient(loss, xt).numpy()


def our_gradient(fn, x, weights, model=None):
    """The same with flexflow_keras' GradientTape: on the eager function, or on `model` (a recorded graph)."""
    from flexflow_keras import ops
    from flexflow_keras.ops.tape import GradientTape

    xe = ops.convert_to_tensor(x, str(x.dtype))
    with GradientTape() as tape:
        tape.watch(xe)
        y = fn(ops, xe) if model is None else model(xe)
        loss = ops.sum(ops.multiply(ops.cast(y, str(x.dtype)), weights))
    return np.asarray(tape.gradient(loss, xe))


def lambda_model(fn, per_sample_shape, dtype="float32"):
    """A functional model whose graph is ``fn(flexflow_keras.ops, x)`` recorded on a symbolic input."""
    from flexflow_keras import layers, models, ops

    inp = layers.Input(per_sample_shape, dtype=dtype)
    return models.Model(inp, layers.Lambda(lambda t: fn(ops, t))(inp))


def raised(fn):
    """The exception `fn()` raises, or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the tests compare the error classes
        return e
    return None


def assert_same_error(tf, keras_call, our_call, name: str):
    """Both calls raise; ours is Keras' class (a subclass of it), or our InvalidArgumentError where Keras on
    TensorFlow raises TensorFlow's. Returns (Keras' error, ours)."""
    want, got = raised(keras_call), raised(our_call)
    assert want is not None and got is not None, (name, want, got)
    if isinstance(want, tf.errors.InvalidArgumentError):
        from flexflow_keras.tf_compat import InvalidArgumentError

        assert isinstance(got, InvalidArgumentError), (name, got)
    else:
        assert type(want) in type(got).__mro__, (name, want, got)
    return want, got
