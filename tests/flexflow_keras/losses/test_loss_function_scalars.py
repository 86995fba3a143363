"""Loss functions called on 1-D arrays return one value as a 0-d tensor with ``.numpy()``, as Keras' (the
Keras 2 spelling ``keras.metrics.mean_absolute_error(x_valid, forecast).numpy()`` of the forecasting courses)."""

import numpy as np

import flexflow_keras as keras


def test_one_sample_losses_are_tensors():
    truth, forecast = np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.0, 2.0])
    mae = keras.metrics.mean_absolute_error(truth, forecast)
    assert mae.shape == () and mae.numpy() == np.float32(0.5)
    mse = keras.losses.mean_squared_error(truth, forecast).numpy()  # float64 inputs: float64, as tf.keras 3.15
    assert mse.dtype == np.float64 and mse == 1.25 / 3
    assert keras.losses.mse(np.ones((2, 3)), np.zeros((2, 3))).numpy().tolist() == [1.0, 1.0]
