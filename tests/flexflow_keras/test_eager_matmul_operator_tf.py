"""`a @ b` on eager tensors: TensorFlow 2.21's values where the inner dims agree (matrices, batches, a
vector), and a ShapeError naming both shapes where they do not (TensorFlow refuses the same pairs with
InvalidArgumentError 'Matrix size-incompatible'). Ours raised NumPy's ValueError about a gufunc signature
'(n?,k),(k,m?)->(n?,m?)' for ZTM's TensorFlow course notebook 00's ``X @ Y`` of two (3, 2) tensors."""

import re

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
A = np.arange(6, dtype=np.float32).reshape(3, 2)
B = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
BATCH = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
W = np.ones((4, 2), np.float32)


@pytest.mark.parametrize("a, b", [(A, B), (B, A), (BATCH, W), (A.astype(np.int32), B.astype(np.int32))])
def test_matmul_operator_values_as_tensorflow(a, b):
    want = (tf.constant(a) @ tf.constant(b)).numpy()
    got = np.asarray(FFTF.constant(a) @ FFTF.constant(b))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(a @ FFTF.constant(b)), want)  # an array on the left


@pytest.mark.parametrize("a, b", [(A, A), (BATCH, B), (B, B)])
def test_mismatched_inner_dims_are_refused_naming_the_shapes(a, b):
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.constant(a) @ tf.constant(b)
    shapes = f"{re.escape(str(tuple(a.shape)))}.*{re.escape(str(tuple(b.shape)))}.*Transpose"
    with pytest.raises(ShapeError, match=shapes):
        FFTF.constant(a) @ FFTF.constant(b)
    with pytest.raises(ShapeError):
        a @ FFTF.constant(b)
