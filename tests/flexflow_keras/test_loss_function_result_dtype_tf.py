"""The per-sample loss functions (keras.losses.mean_squared_error, ..., and the keras.metrics aliases mse / mae)
called eagerly on arrays return y_pred's float dtype, as Keras 3.15 on TensorFlow: float64 NumPy arrays give
float64 (computed in float64), float16 give float16 (msle: float32), Python lists float32. Ours returned
float32 always, so
the TensorFlow Developer certificate's C4 W1 labs, which score NumPy float64 naive and moving-average forecasts
with keras.metrics.mse / mae, printed float32-rounded values of another dtype. Keras computes float16 inputs in float16 (log_cosh lands 1%
from the exact value); ours computes in float64 and rounds to float16, so float16 values are compared with
Keras' float32 result rounded to float16."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

FUNCTIONS = ["mean_squared_error", "mean_absolute_error", "binary_crossentropy", "categorical_crossentropy",
             "sparse_categorical_crossentropy", "huber", "mean_absolute_percentage_error",
             "mean_squared_logarithmic_error", "kl_divergence", "log_cosh", "hinge", "squared_hinge",
             "categorical_hinge", "poisson", "cosine_similarity", "binary_focal_crossentropy",
             "categorical_focal_crossentropy"]
PRED = [[0.2, 0.5, 0.3], [0.7, 0.1, 0.2]]
TOL = {"float64": 1e-12, "float32": 2e-6, "float16": 4e-3}


def _true(name):
    return np.array([1, 0]) if name.startswith("sparse") else np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "list"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_result_dtype_and_values_as_keras(name, dtype):
    if (name, dtype) == ("sparse_categorical_crossentropy", "list"):
        pytest.skip("Keras 3.15 itself stops: 'list' object has no attribute 'shape'")
    y_pred = PRED if dtype == "list" else np.array(PRED, dtype)
    want = np.asarray(getattr(keras.losses, name)(_true(name), y_pred))
    got = np.asarray(getattr(ff.losses, name)(_true(name), y_pred))
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == "float16":
        want = np.asarray(getattr(keras.losses, name)(_true(name), np.array(PRED, "float16").astype("float32")))
        want = want.astype(got.dtype)  # the float32 value rounded to the result's dtype (inf past float16's range)
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), rtol=TOL.get(dtype, 2e-6), atol=1e-7)


def test_metrics_aliases_and_integer_predictions_as_keras():
    x = np.linspace(0.0, 50.0, 40)
    y = x[::-1].copy()
    for short in ("mse", "mae"):
        want, got = getattr(tf.keras.metrics, short)(x, y), getattr(ff.metrics, short)(x, y)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.float64
        assert float(np.asarray(got)) == pytest.approx(float(np.asarray(want)), rel=1e-12)
    for name in ("mean_squared_error", "mean_absolute_error", "huber"):
        want = np.asarray(getattr(keras.losses, name)(np.array([[0.0, 1.0]]), np.array([[0, 1]])))
        got = np.asarray(getattr(ff.losses, name)(np.array([[0.0, 1.0]]), np.array([[0, 1]])))
        assert got.dtype == want.dtype == np.float32 and got.tolist() == want.tolist()
