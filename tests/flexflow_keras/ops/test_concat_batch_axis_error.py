"""Concatenating symbolic tensors along their batch axis joins samples into one longer batch: a model's
graph cannot hold that (its rows follow the batch's samples), so it is a clear ShapeError at the call,
not a kernel's "Output array is the wrong shape" at predict. On arrays (eager code, a custom train_step)
it concatenates as NumPy does."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import ShapeError


@pytest.mark.parametrize("join", [
    lambda a, b: keras.ops.concatenate([a, b], axis=0),
    lambda a, b: keras.ops.concatenate([a, keras.ops.ones((1, 4))], axis=0),
])
def test_symbolic_batch_concat_is_a_clear_error(join):
    a, b = keras.Input(shape=(4,)), keras.Input(shape=(4,))
    with pytest.raises(ShapeError, match=r"axis 0 is the batch.*ops\.stack\(xs, axis=1\)"):
        join(a, b)


def test_the_layer_refuses_the_batch_axis_itself():
    with pytest.raises(ValueError, match="cannot use the batch axis"):
        keras.layers.Concatenate(axis=0)([keras.Input(shape=(4,)), keras.Input(shape=(4,))])


def test_feature_axis_and_arrays_still_concatenate():
    a, b = keras.Input(shape=(4,)), keras.Input(shape=(3,))
    assert tuple(keras.ops.concatenate([a, b], axis=-1).shape) == (None, 7)
    x = keras.ops.concatenate([np.zeros((2, 4), "float32"), np.ones((3, 4), "float32")], axis=0)
    np.testing.assert_array_equal(np.asarray(x), np.concatenate([np.zeros((2, 4)), np.ones((3, 4))]))
