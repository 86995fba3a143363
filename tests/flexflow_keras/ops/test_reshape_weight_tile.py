"""A reshape of a weight-derived tensor (no batch dim): a keepdims reduction of a kernel, (5,) reshaped to
(1, 1, 1, 5), read one element of its input (the tile took the leading dim for the batch) and the task
failed; tf.nn.moments(kernel, axes=[0, 1, 2], keepdims=True) in a weight-standardized conv met it."""

import numpy as np

import flexflow_keras as keras
from flexflow_keras import config, ops
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.shape_ops import ReshapeOp


def test_tile_of_a_batchless_reshape_reads_the_whole_input():
    shapes = par.TileShapes(inputs=((5,),), weights=(), outputs=((1, 1, 1, 5),))
    tile = ReshapeOp((1, 1, 1, 5)).tile(shapes, par.whole((1, 1, 1, 5)))
    assert tile.inputs == (((0,), (5,)),)
    batched = par.TileShapes(inputs=((8, 6),), weights=(), outputs=((8, 2, 3),))
    assert ReshapeOp((-1, 2, 3)).tile(batched, ((4, 0, 0), (8, 2, 3))).inputs == (((4, 0), (8, 6)),)


class Standardizing(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(3, 3, 2, 5), initializer="glorot_uniform")

    def call(self, x):
        mean, var = ops.moments(self.w, axes=[0, 1, 2], keepdims=True)  # (1, 1, 1, 5), through a reshape
        return x + ops.reshape(mean + var, (5,))[None, :]


def test_keepdims_moments_of_a_weight_train(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((5,))
    layer = Standardizing()
    model = keras.Model(inp, layer(inp))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    x = np.arange(10, dtype="float32").reshape(2, 5)
    w = layer.get_weights()[0].astype("float64")
    out = x + w.mean((0, 1, 2)) + w.var((0, 1, 2))
    loss = model.fit(x, np.zeros_like(x), batch_size=2, epochs=1, verbose=0).history["loss"][0]
    np.testing.assert_allclose(loss, np.mean(out ** 2), rtol=1e-5)
