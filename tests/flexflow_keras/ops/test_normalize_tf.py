"""keras.ops.normalize and keras.utils.normalize as Keras 3.15 on TensorFlow: the norm's floor is
`backend.epsilon()` (1e-7; it was 1e-12 here, so a row of norm 1e-9 came back with norm 1 instead of
0.01), order 2 is ``x * min(rsqrt(sum x**2), 1/eps)`` (a zero row has a finite gradient), and
`utils.normalize` of a tensor stays a tensor: it was turned into NumPy here, so keras.io's NNCLR, whose
contrastive loss normalises the projections with keras.utils.normalize inside a GradientTape, got no
gradient for its encoder ("Gradients do not exist for variables ...") and never trained it."""

import numpy as np
import pytest

import flexflow_keras
from flexflow_keras import ops, utils

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, keras_gradient, lambda_model, our_gradient  # noqa: E402

X = np.array([[1e-9, 0.0, 0.0], [3.0, 4.0, 1.0], [0.0, 0.0, 0.0], [-2.0, 0.5, 1.5]], "float32")
W = np.arange(12, dtype="float32").reshape(4, 3) / 7.0


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("axis", [-1, 0])
def test_ops_normalize_values_and_gradients(order, axis):
    def fn(K, x):
        return K.normalize(x, axis=axis, order=order)

    assert_same(fn(ops, X), fn(keras.ops, X), what=f"order={order} axis={axis}")
    if order == 2 or axis == 0:  # Keras' order-1/3 gradient at the exact zero row is NaN
        want = keras_gradient(tf, keras, fn, X, W)
        np.testing.assert_allclose(our_gradient(fn, X, W), want, rtol=1e-4, atol=1e-3)
    if axis == -1:
        assert_same(lambda_model(fn, (3,)).predict(X, verbose=0), fn(keras.ops, X), what="in a model")


def test_ops_normalize_epsilon_and_order_errors():
    assert_same(ops.normalize(X, epsilon=1e-3), keras.ops.normalize(X, epsilon=1e-3))
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="order"):
            ops.normalize(X, order=bad)
        with pytest.raises(ValueError):
            keras.ops.normalize(X, order=bad)


def test_utils_normalize_numpy_stays_numpy():
    got = utils.normalize(X, axis=1, order=2)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, keras.utils.normalize(X, axis=1, order=2), rtol=1e-6)


def test_utils_normalize_of_a_tensor_is_differentiable_as_in_keras():
    def fn(K, x):
        u = (keras if K is keras.ops else flexflow_keras).utils.normalize(x * 2.0, axis=1, order=2)
        return u * 3.0

    want = keras_gradient(tf, keras, fn, X, W)
    got = our_gradient(fn, X, W)
    assert np.abs(got).max() > 0, "utils.normalize cut the tape"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
