"""A layer whose call() is the user's gets integer arrays in an eager call as they are, as Keras 3 casts only
floats (keras.io's GNN hands its graph layer (nodes, int edges, weights) and segments by the edges); built-in
layers still take integer data as floats."""

import numpy as np

import flexflow_keras as keras
from flexflow_keras import ops


class Aggregate(keras.layers.Layer):
    def call(self, inputs):
        nodes, edges = inputs
        self.seen = edges.dtype
        return ops.segment_sum(ops.take(nodes, edges[1], axis=0), edges[0], num_segments=nodes.shape[0])


def test_user_call_keeps_integer_arrays():
    nodes = np.arange(6, dtype="float32").reshape(3, 2)
    edges = np.array([[0, 0, 2], [1, 2, 1]])
    layer = Aggregate()
    out = layer((nodes, edges))
    assert np.dtype(layer.seen).kind == "i"
    np.testing.assert_array_equal(out, [[6, 8], [0, 0], [2, 3]])


def test_builtin_layer_still_casts_integer_arrays():
    out = keras.layers.Dense(2, kernel_initializer="ones")(np.array([[1, 2]]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[3, 3]])
