"""tf.concat in the TensorFlow shim keeps TensorFlow's dtype rule: tensors of two dtypes are an
InvalidArgumentError naming the input (no NumPy promotion to float64); lists and arrays take the tensors' dtype."""

import numpy as np
import pytest

from flexflow_keras import ops
from flexflow_keras.tf_compat import CONSTANTS, InvalidArgumentError, mapped_call

concat = mapped_call("tf.concat")
constant = mapped_call("tf.constant")


def test_float32_with_float64_tensors_raises_like_tensorflow():
    with pytest.raises(InvalidArgumentError, match=r"input #1\(zero-based\) was expected to be a float tensor "
                                                   r"but is a double tensor"):
        concat([constant([1.0, 2.0]), constant(np.ones(2, "float64"))], 0)
    assert CONSTANTS["tf.errors.InvalidArgumentError"] is InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="expected to be a int32 tensor but is a float tensor"):
        concat([constant([1, 2]), constant([1.0])], 0)


def test_one_dtype_concatenates_and_other_values_take_it():
    out = concat([constant([1.0, 2.0]), np.ones(2, "float64"), [3.0]], axis=0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1, 2, 1, 1, 3])
    assert concat([np.ones(2, "float64"), np.ones(1, "float32")], 0).dtype == np.float64  # the first one's
    assert concat([[1.0], [2.0]], 0).dtype == np.float32


def test_symbolic_tensors_of_two_dtypes_raise():
    from flexflow_keras import Input

    a, b = Input((3,)), ops.cast(Input((3,)), "float64")
    with pytest.raises(InvalidArgumentError, match="double"):
        concat([a, b], axis=-1)
    assert concat([a, a], axis=-1).shape == (None, 6)


def test_matches_tensorflow():
    tf = pytest.importorskip("tensorflow")
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a float tensor but is a double"):
        tf.concat([tf.constant([1.0]), tf.constant([1.0], tf.float64)], 0)
    assert tf.concat([tf.constant([1.0]), np.ones(1, "float64")], 0).dtype == tf.float32
