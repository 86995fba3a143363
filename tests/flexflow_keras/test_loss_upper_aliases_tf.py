"""keras.losses' upper-case function aliases (MAE, MSE, MAPE, MSLE, KLD) return tensors that answer
``.numpy()``, as their lower-case names and TensorFlow 2.21's tf.keras do: ZTM's TensorFlow course notebook 10
(time series) scores forecasts with ``tf.keras.losses.MAPE(y_true, y_pred).numpy()``; ours gave a NumPy
scalar ("'numpy.float32' object has no attribute 'numpy'")."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


@pytest.mark.parametrize("name", ["MAE", "MSE", "MAPE", "MSLE", "KLD"])
def test_upper_case_loss_alias_gives_a_tensor(name):
    y = np.array([1.0, 2.0, 4.0], "float32")
    p = np.array([1.5, 2.0, 3.0], "float32")
    want = getattr(tf.keras.losses, name)(tf.constant(y), tf.constant(p)).numpy()
    got = getattr(FFTF.keras.losses, name)(FFTF.constant(y), FFTF.constant(p))
    assert hasattr(got, "numpy")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert got.numpy().dtype == want.dtype
