"""A dtype given as TensorFlow's DataType number (tf_keywords.tf_dtype): ``tf.zeros(1, 1)`` is float32 zeros
of shape (1,) in TensorFlow (tf.as_dtype(1) is float32), and keras.io's layer-subclassing guide calls
``layer(tf.zeros(1, 1))``; under the runner it stopped with "TypeError: Cannot interpret '1' as a data type".
Against TensorFlow 2.21."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")

CASES = [
    ("zeros", (1, 1)), ("zeros", ((2, 3), 9)), ("ones", (2, 3)), ("ones", ((2,), 10)), ("zeros", ((2,), 2)),
    ("zeros", (1, True)), ("zeros", (3, 1.0)), ("ones_like", ([1.5, 2.5], 3)), ("zeros_like", ([1, 2], 1)),
    ("ones", ((2,), 19)), ("ones", ((2,), 4)), ("cast", ([1.7, -2.2], 3)), ("cast", ([1, 0, 2], 10)),
    ("zeros", ((2,), "float32")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}{c[1]}")
def test_dtype_numbers_as_tensorflow(case):
    path, args = case
    want = np.asarray(getattr(tf, path)(*args))
    got = np.asarray(getattr(FFTF, path)(*args))
    assert got.dtype == want.dtype, (path, args, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def test_a_number_that_is_no_dtype_is_refused_as_tensorflow():
    with pytest.raises(TypeError, match="to a TensorFlow DType"):
        tf.zeros(1, 99)
    with pytest.raises(TypeError, match=r"99 to a TensorFlow DType.*DataType enum"):
        FFTF.zeros(1, 99)
    with pytest.raises(TypeError, match="to a TensorFlow DType"):
        FFTF.cast([1.0], 99)
