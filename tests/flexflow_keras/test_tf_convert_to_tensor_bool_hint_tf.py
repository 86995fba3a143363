"""tf.convert_to_tensor of Python bools takes an int or float dtype_hint, as TensorFlow does (True with a
float32 hint is 1.0 float32); cbf7f08 kept them bool."""

import numpy as np
import pytest

from flexflow_keras import tf_array_ops


@pytest.mark.parametrize("value", [True, [True, False]])
@pytest.mark.parametrize("hint", ["float32", "int32", "int64", "float64", "bool"])
def test_bool_values_take_the_hint_as_tensorflow(value, hint):
    tf = pytest.importorskip("tensorflow")
    got = np.asarray(tf_array_ops.convert_to_tensor(value, dtype_hint=hint))
    want = tf.convert_to_tensor(value, dtype_hint=getattr(tf, hint)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
