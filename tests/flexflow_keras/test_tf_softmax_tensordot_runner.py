"""The runner's tf.math.softmax / log_softmax (TensorFlow's aliases of tf.nn's), a list of tensors given to
them stacked on axis 0 as TensorFlow converts it, and tf.tensordot (keras.ops.tensordot), against TensorFlow;
symbolic tensors stacked before their batch dim take the softmax across them (keras.io's attention MIL:
tf.math.softmax([score_1, score_2, score_3], axis=0) in a layer's call), and such a stack as a model's output
is a ShapeError saying how to stack them instead."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import ShapeError
from flexflow_keras.keras_alias import _TensorFlow

tf_ref = pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf

tf = _TensorFlow("tensorflow")
rng = np.random.default_rng(0)
A, B, C = (rng.normal(size=s).astype("float32") for s in ((4, 3), (4, 3), (3, 5)))


def test_softmax_aliases_and_lists():
    np.testing.assert_allclose(tf.math.softmax(A), tf_ref.math.softmax(A).numpy(), rtol=1e-6)
    np.testing.assert_allclose(tf.math.log_softmax(A, axis=0), tf_ref.math.log_softmax(A, axis=0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(tf.math.softmax([A, B], axis=0), tf_ref.math.softmax([A, B], axis=0).numpy(),
                               rtol=1e-6)


def test_tensordot():
    for axes in (1, [[1], [0]]):
        np.testing.assert_allclose(tf.tensordot(A, C, axes=axes), tf_ref.tensordot(A, C, axes=axes).numpy(),
                                   rtol=1e-5)
    np.testing.assert_allclose(tf.linalg.tensordot(A, B, 2), tf_ref.linalg.tensordot(A, B, 2).numpy(), rtol=1e-5)
    x = keras.Input((4, 3))
    assert tf.tensordot(x, C, axes=1).shape == (None, 4, 5)


def test_symbolic_stack_before_the_batch_is_a_clear_error():
    a, b = keras.Input((1,)), keras.Input((1,))
    alpha = tf.math.softmax([a, b], axis=0)  # across the stacked tensors, as TensorFlow (ops/batch_second.py)
    assert alpha.shape == (2, None, 1)
    with pytest.raises(ShapeError, match=r"before the batch dim.*axis=1"):
        keras.Model([a, b], alpha)
    assert keras.ops.stack([a, b], axis=1).shape == (None, 2, 1)
