"""Keras 3's ``Conv.convolution_op(inputs, kernel)`` (layers/conv_op.py): overriding it changes what
Conv2D/Conv3D compute (``activation(convolution_op(x, kernel) + bias)``), calling it from call() on a
computed kernel works (keras.io's weight-standardized convolutions), Conv1D's call() ignores it as
Keras 3's does; and raw ``tf.nn.moments``, which that example computes the standardization with."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, ops
from flexflow_keras.tf_compat import mapped_call

rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _one_processor(request):
    config.set(data_parallel_degree=1)
    request.addfinalizer(config.reset)


def _standardized(k, axes):
    k = np.asarray(k, "float64")
    return (k - k.mean(axes, keepdims=True)) / np.sqrt(k.var(axes, keepdims=True) + 1e-10)


class StdOverride(keras.layers.Conv2D):
    def convolution_op(self, inputs, kernel):
        mean, var = ops.moments(kernel, axes=[0, 1, 2], keepdims=True)
        return ops.conv(inputs, (kernel - mean) / ops.sqrt(var + 1e-10), strides=list(self.strides))


class StdCall(keras.layers.Conv2D):
    def call(self, inputs):
        mean, var = ops.moments(self.kernel, axes=[0, 1, 2], keepdims=True)
        out = self.convolution_op(inputs, (self.kernel - mean) / ops.sqrt(var + 1e-10))
        return out + self.bias if self.use_bias else out


class Scaled3D(keras.layers.Conv3D):
    def convolution_op(self, inputs, kernel):
        return super().convolution_op(inputs, kernel * 3.0)


class Ignored1D(keras.layers.Conv1D):
    def convolution_op(self, inputs, kernel):
        return super().convolution_op(inputs, kernel * 0.0)


def _model(layer, shape):
    inp = keras.Input(shape)
    model = keras.Model(inp, layer(inp))
    weights = [rng.standard_normal(w.shape).astype("float32") * 0.5 for w in model.get_weights()]
    model.set_weights(weights)
    return model, weights


def test_overridden_convolution_op_computes_conv2d():
    model, (k, b) = _model(StdOverride(4, 3, activation="relu"), (6, 6, 2))
    x = rng.standard_normal((3, 6, 6, 2)).astype("float32")
    want = np.maximum(np.asarray(ops.conv(x, _standardized(k, (0, 1, 2)).astype("float32"))) + b, 0)
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)


def test_convolution_op_called_from_call_trains():
    model, (k, b) = _model(StdCall(4, 3, padding="same", activation="relu"), (5, 5, 2))
    x = rng.standard_normal((4, 5, 5, 2)).astype("float32")
    want = np.asarray(ops.conv(x, _standardized(k, (0, 1, 2)).astype("float32"), padding="same")) + b
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)  # no relu: as Keras 3
    model.compile(optimizer="sgd", loss="mse")
    before = model.get_weights()[0].copy()
    model.fit(x, np.zeros_like(want), batch_size=4, epochs=1, verbose=0)
    assert not np.allclose(model.get_weights()[0], before)


def test_conv3d_override_channels_first_and_conv1d_call_ignores_the_hook():
    model, (k, b) = _model(Scaled3D(2, 2, data_format="channels_first"), (3, 4, 4, 4))
    x = rng.standard_normal((2, 3, 4, 4, 4)).astype("float32")
    want = np.asarray(ops.conv(x, k * 3.0, data_format="channels_first")) + b.reshape(1, 2, 1, 1, 1)
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5)
    layer = Ignored1D(3, 2, padding="causal")
    model, (k, b) = _model(layer, (5, 2))
    s = rng.standard_normal((2, 5, 2)).astype("float32")
    plain = np.asarray(ops.conv(np.pad(s, ((0, 0), (1, 0), (0, 0))), k)) + b
    np.testing.assert_allclose(model.predict(s, verbose=0), plain, rtol=1e-4, atol=1e-5)
    causal = keras.layers.Conv1D.convolution_op(layer, s, k)  # the hook itself pads the causal start
    np.testing.assert_allclose(np.asarray(causal), plain - b, rtol=1e-4, atol=1e-5)


def test_tf_nn_moments_under_the_runner():
    x = rng.standard_normal((3, 4, 5)).astype("float32")
    mean, var = mapped_call("tf.nn.moments")(x, axes=[0, 1], keepdims=True)
    np.testing.assert_allclose(np.asarray(mean), x.mean((0, 1), keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(var), x.var((0, 1), keepdims=True), rtol=1e-5)
    mean, var = mapped_call("tf.nn.moments")(x, [2], shift=None)
    assert mean.shape == var.shape == (3, 4)
