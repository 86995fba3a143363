"""One harness for every layer (like Keras' run_layer_test).

`run_layer_test` checks: the symbolic output shape and dtype, the number of (trainable) weights, the
config round trip (`from_config(get_config())` gives the same config and, with the same weights, the same
outputs), eager calls against the recorded graph run by `model(x)`, and, with `compare_tf` (the tests'
`parity` fixture, whose tf half is marked `tf`) and `tf_layer`, the output against tf.keras on the same
weights within 1e-5.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import layers, models


def tf_keras():
    """tf.keras, or None when TensorFlow is not installed."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    return tf.keras


def make_data(shape, dtype="float32", seed=0, high=None):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, high or 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def run_layer_test(cls, kwargs=None, input_shape=(4, 3), input_dtype="float32", expected_output_shape=None,
                   expected_output_dtype="float32", expected_num_weights=0, expected_num_trainable=None,
                   tf_layer=None, tf_kwargs=None, data=None, randomize_weights=False, atol=1e-5,
                   compare_tf=False):
    """Run the standard checks on `cls(**kwargs)` and return (layer, eager output, inputs).

    Args:
        cls: the layer class.
        kwargs: constructor arguments.
        input_shape: the batch shape of the test data (a list of shapes for multi-input layers).
        expected_output_shape: the symbolic output shape (batch dim None).
        expected_num_weights: len(layer.weights); `expected_num_trainable` len(trainable_weights).
        tf_layer: the tf.keras layer class name to compare against (None: no tf comparison).
        tf_kwargs: its constructor arguments (default: `kwargs`).
        data: the test inputs (default: standard normal of `input_shape`).
        randomize_weights: set every weight to random values first (BatchNorm statistics, ...).
        compare_tf: run the tf.keras comparison (tests pass the `parity` fixture, marked tf).
    """
    kwargs = dict(kwargs or {})
    multi = isinstance(input_shape, list)
    shapes = input_shape if multi else [input_shape]
    if data is None:
        data = [make_data(s, input_dtype, seed=i) for i, s in enumerate(shapes)]
    elif not multi:
        data = [data]

    layer = cls(**kwargs)
    sym_in = [layers.Input(shape=tuple(s[1:]), dtype=input_dtype) for s in shapes]
    sym_out = layer(sym_in if multi else sym_in[0])
    if expected_output_shape is not None:
        assert tuple(sym_out.shape) == tuple(expected_output_shape), (sym_out.shape, expected_output_shape)
    assert sym_out.dtype == expected_output_dtype, sym_out.dtype
    assert len(layer.weights) == expected_num_weights, [w.path for w in layer.weights]
    if expected_num_trainable is not None:
        assert len(layer.trainable_weights) == expected_num_trainable
    if randomize_weights:
        rng = np.random.default_rng(42)
        layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in layer.weights])

    # the recorded graph, run eagerly by the model, agrees with an eager call of the layer
    model = models.Model(sym_in if multi else sym_in[0], sym_out)
    eager = layer(data if multi else data[0])
    graph_out = model(data if multi else data[0])
    assert isinstance(eager, np.ndarray) and eager.dtype == np.dtype(expected_output_dtype)
    assert eager.shape == (shapes[0][0],) + tuple(sym_out.shape[1:])
    np.testing.assert_allclose(eager, graph_out, rtol=1e-6, atol=1e-6)

    # config round trip
    config = layer.get_config()
    clone = cls.from_config(config)
    assert clone.get_config() == config
    clone(data if multi else data[0])
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(data if multi else data[0]), eager, rtol=1e-6, atol=1e-6)

    # parity with tf.keras on the same weights
    k = tf_keras() if tf_layer and compare_tf else None
    if k is not None:
        theirs = getattr(k.layers, tf_layer)(**(kwargs if tf_kwargs is None else tf_kwargs))
        theirs(data if multi else data[0])
        theirs.set_weights(layer.get_weights())
        expected = np.asarray(theirs(data if multi else data[0]))
        np.testing.assert_allclose(eager, expected, rtol=atol, atol=atol)
    return layer, eager, data
