"""`keras.ops.convert_to_tensor` and `keras.ops.array` of Python numbers and lists give TensorFlow's dtypes
(Keras 3 on TensorFlow): ints int32 (int64 beyond int32's range), floats float32, bools bool; NumPy values
keep theirs (convert_to_tensor(0) was int64)."""

import numpy as np
import pytest

from flexflow_keras import ops

VALUES = ["0", "-7", "2**31 - 1", "-2**31", "2**40", "[2**40, 1]", "[-2**31 - 1]", "1.5", "True",
          "[1, 2]", "(1, 2)", "[[1], [2]]", "[1.0, 2]", "[1, 2.5]", "[True, False]", "[]", "[np.int64(1), 2]",
          "[np.float64(1.0), 2]", "[np.float16(1.0), 2]", "[np.bool_(True)]", "np.int64(3)", "np.uint8(3)",
          "np.array([1, 2])", "np.array(3, np.int16)"]


@pytest.mark.parametrize("fn", ["convert_to_tensor", "array"])
@pytest.mark.parametrize("value", VALUES)
def test_dtype_and_value_match_keras(fn, value):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    want = np.asarray(getattr(keras.ops, fn)(eval(value)))  # noqa: S307 - the test's own strings
    got = np.asarray(getattr(ops, fn)(eval(value)))  # noqa: S307
    assert got.dtype == want.dtype, (value, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def test_an_explicit_dtype_still_wins():
    assert ops.convert_to_tensor(0, "int64").dtype == np.int64
    assert ops.convert_to_tensor([1, 2], "float32").dtype == np.float32
    assert ops.array(1, "int8").dtype == np.int8
