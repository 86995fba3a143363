"""A kernel computed in call() from a weight (ops/weights_as_inputs.py): conv1d, conv2d, depthwise conv and
dense given a KerasTensor kernel train as the op with that kernel as a weight would. With k = 2 * w, one
step of SGD at learning rate lr moves 2 * w as a plain layer's kernel moves at 4 * lr; unsplit and split
along the batch alike."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.normalization import BatchNormOp
from flexflow_keras.ops.weights_as_inputs import WeightsAsInputsOp

LR = 0.05


class Doubled(keras.layers.Layer):
    """`op(x, 2 * w)`: the kernel is a tensor of the graph, not a weight."""

    def __init__(self, kind, shape, **kwargs):
        super().__init__(**kwargs)
        self.kind, self.kernel_shape = kind, shape

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=self.kernel_shape, initializer="glorot_uniform")

    def call(self, x):
        k = self.w * 2.0
        if self.kind == "dense":
            return ops.dense(x, k)
        if self.kind == "depthwise":
            return ops.depthwise_conv(x, k, 1, "valid")
        return ops.conv(x, k, 1, "same")


CASES = {  # kind: (input shape, kernel shape, the plain layer with kernel k)
    "conv2d": ((6, 6, 2), (3, 3, 2, 3), lambda: keras.layers.Conv2D(3, 3, padding="same", use_bias=False)),
    "conv1d": ((7, 2), (3, 2, 3), lambda: keras.layers.Conv1D(3, 3, padding="same", use_bias=False)),
    "depthwise": ((5, 5, 2), (3, 3, 2, 1), lambda: keras.layers.DepthwiseConv2D(3, use_bias=False)),
    "dense": ((4,), (4, 3), lambda: keras.layers.Dense(3, use_bias=False)),
}


@pytest.fixture(autouse=True)
def _reset(request):
    request.addfinalizer(config.reset)


def _fit(layer, in_shape, w0, lr, degree):
    config.set(cpus=2, data_parallel_degree=degree)
    inp = keras.Input(in_shape)
    model = keras.Model(inp, keras.layers.Flatten()(layer(inp)))
    model.set_weights([w0])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8,) + in_shape).astype("float32")
    y = rng.standard_normal((8,) + model.output_shape[1:]).astype("float32")
    loss = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False).history["loss"]
    return loss, model.get_weights()[0]


@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_computed_kernel_trains_as_the_weight_would(kind, degree):
    in_shape, k_shape, plain = CASES[kind]
    w0 = np.random.default_rng(1).standard_normal(k_shape).astype("float32") * 0.3
    loss, w = _fit(Doubled(kind, k_shape), in_shape, w0, LR, degree)
    want_loss, k = _fit(plain(), in_shape, 2 * w0, 4 * LR, degree)
    np.testing.assert_allclose(loss, want_loss, rtol=2e-5)
    np.testing.assert_allclose(2 * w, k, rtol=1e-5, atol=1e-6)
    assert not np.allclose(w, w0)


def test_eager_call_equals_the_model_and_stateful_ops_are_refused():
    config.set(data_parallel_degree=1)
    layer = Doubled("conv2d", (3, 3, 2, 3))
    inp = keras.Input((6, 6, 2))
    model = keras.Model(inp, layer(inp))
    x = np.random.default_rng(2).standard_normal((2, 6, 6, 2)).astype("float32")
    eager = np.asarray(layer(x))
    np.testing.assert_allclose(model.predict(x, verbose=0), eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eager, np.asarray(ops.conv(x, 2 * layer.get_weights()[0], 1, "same")), rtol=1e-6)
    with pytest.raises(ShapeError, match="keeps state in its weights"):
        WeightsAsInputsOp(BatchNormOp(), 1)
