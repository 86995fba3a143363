"""A weight assigned in call(): keras.io's PixelCNN masks its kernel with ``self.conv.kernel.assign(
self.conv.kernel * self.mask)`` before ``self.conv(inputs)`` (it stopped: 'KerasTensor ... is symbolic').
Keras runs the assign every step, so the convolution reads the masked kernel and the masked entries never
count; here the call records ``w * mask`` as the kernel, masks the host value, and trains the rest as
TensorFlow does. Other symbolic assigns are refused with a message."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers, ops
from flexflow_keras.errors import GraphError


class MaskedConv(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__()
        self.conv = layers.Conv2D(**kwargs)

    def build(self, input_shape):
        self.conv.build(input_shape)
        shape = ops.shape(self.conv.kernel)
        self.mask = np.zeros(shape)
        self.mask[: shape[0] // 2] = 1.0
        self.mask[shape[0] // 2, : shape[1] // 2] = 1.0

    def call(self, inputs):
        self.conv.kernel.assign(self.conv.kernel * self.mask)
        return self.conv(inputs)


def _models():
    inp = keras.Input((6, 6, 2))
    masked = MaskedConv(filters=3, kernel_size=3, padding="same", activation="tanh")
    model = keras.Model(inp, layers.Conv2D(1, 1)(masked(inp)))
    plain_inp = keras.Input((6, 6, 2))
    plain = keras.Model(plain_inp, layers.Conv2D(1, 1)(
        layers.Conv2D(3, 3, padding="same", activation="tanh")(plain_inp)))
    return model, masked, plain


def test_masked_kernel_forward_and_sgd_step(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 6, 6, 2)).astype("float32")
    y = rng.standard_normal((8, 6, 6, 1)).astype("float32")
    model, masked, plain = _models()
    mask = masked.mask
    assert np.all(masked.conv.kernel.numpy()[mask == 0] == 0)  # masked when the call was recorded
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(model.predict(x, verbose=0), plain.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for m in (model, plain):
        m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    lm, lp = model.train_on_batch(x, y), plain.train_on_batch(x, y)
    np.testing.assert_allclose(lm, lp, rtol=1e-6)
    # TensorFlow's step: the gradient of the masked kernel's read, whose masked entries the next assign zeroes
    k_plain = plain.get_weights()[0]
    k = model.get_weights()[0]
    np.testing.assert_allclose(k, k_plain * mask, rtol=1e-5, atol=1e-7)
    plain.set_weights([k_plain * mask] + plain.get_weights()[1:])
    np.testing.assert_allclose(model.predict(x, verbose=0), plain.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_eager_call_masks_the_kernel():
    layer = MaskedConv(filters=2, kernel_size=3, padding="same")
    out = layer(np.ones((1, 4, 4, 1), "float32"))
    assert out.shape == (1, 4, 4, 2)
    assert np.all(layer.conv.kernel.numpy()[layer.mask == 0] == 0)


class Running(layers.Layer):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def build(self, input_shape):
        self.total = self.add_weight(shape=(), initializer="zeros", trainable=False)
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        if self.how == "add":
            self.total.assign_add(ops.sum(x))
        else:
            self.w.assign(self.w * ops.mean(x))
        return x * self.w


@pytest.mark.parametrize("how,match", [("add", r"Layer .running. \(Running\), self\.total .*\.assign_add\(.*kept across training steps"), ("scale", "masked weight")])
def test_other_symbolic_assigns_are_refused(how, match):
    with pytest.raises(GraphError, match=match):
        Running(how)(keras.Input((3,)))
