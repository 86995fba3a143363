"""ops.arange(ops.shape(x)[0]) of a symbolic tensor is the ShapeError dynamic_dims.arange means to raise
(the batch size cannot be a range here); it was an AttributeError ('BatchDim' object has no attribute 'axis')."""

import pytest

import flexflow_keras
from flexflow_keras.errors import ShapeError


def test_arange_of_the_batch_size_says_why():
    x = flexflow_keras.Input((3,))
    with pytest.raises(ShapeError, match="cannot be a range"):
        flexflow_keras.ops.arange(flexflow_keras.ops.shape(x)[0])
