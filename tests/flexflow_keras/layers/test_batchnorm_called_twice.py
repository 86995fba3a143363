"""A BatchNormalization layer called on two tensors in one model (keras.io's siamese network: the shared
tower's BatchNormalization after Flatten) trains as under tf.keras. Both calls add their dgamma and dbeta to
one gradient buffer; the input gradient of the call whose backward ran second read the sum of both calls'
sums, and the layers before it trained on wrong gradients (Dense kernel off by its own size after one step)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config
from flexflow_keras.layers.eager import refresh_graph

tf = pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf

rng = np.random.default_rng(0)
X1 = rng.normal(size=(16, 5)).astype("float32")
X2 = (rng.normal(size=(16, 5)) * 3 + 1).astype("float32")
Y = rng.normal(size=(16, 1)).astype("float32")


def _siamese(lib):
    i1, i2 = lib.Input((5,)), lib.Input((5,))
    dense, bn = lib.layers.Dense(4), lib.layers.BatchNormalization()
    h = lib.layers.Concatenate()([bn(dense(i1)), bn(dense(i2))])
    return lib.Model([i1, i2], lib.layers.Dense(1)(h))


@pytest.mark.parametrize("degree", [1, 2])
def test_one_step_as_tf_keras(request, degree):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=degree, cpus=2)
    ff, ref = _siamese(keras), _siamese(tf.keras)
    ff.set_weights(ref.get_weights())
    for m, lib in ((ff, keras), (ref, tf.keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
        m.fit([X1, X2], Y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(ff.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_only_nodes_sharing_weights_keep_their_batch_whole():
    inp = keras.Input((5,))
    bn = keras.layers.BatchNormalization()
    out = keras.layers.BatchNormalization()(bn(bn(inp)))
    graph = refresh_graph(keras.Model(inp, out)._op_graph(), {})
    flags = [n.op.shared_weights for n in graph.nodes if n.op.type_name == "batch_norm"]
    assert flags == [True, True, False]
    for node, splittable in ((graph.nodes[0], [False, True]), (graph.nodes[-1], [True, True])):
        space = node.op.parallel_space(node.inputs, node.weights)
        assert [rule.splittable for rule in space.dims] == splittable
