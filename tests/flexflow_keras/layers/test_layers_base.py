"""The Layer base: add_weight, build once, tracking of sublayers, trainable, training plumbing, nodes."""

import numpy as np
import pytest

from flexflow_keras import layers, models, ops
from flexflow_keras.ops.graph import OpGraph


class Scale(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.builds = 0

    def build(self, input_shape):
        self.builds += 1
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
        self.c = self.add_weight("c", (1,), trainable=False)  # Keras 2 positional order

    def call(self, x):
        return ops.multiply(x, self.w)


class Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = [layers.Dense(3), layers.Dense(2)]
        self.seen_training = []

    def call(self, x, training=None):
        self.seen_training.append(training)
        return self.inner[1](self.inner[0](x))


class Identity(layers.Layer):
    def call(self, x):
        return x


def test_add_weight_build_once_and_paths():
    layer = Scale()
    x = layers.Input((4,))
    y = layer(x)
    layer(x)
    assert layer.builds == 1 and layer.built
    assert [w.path for w in layer.weights] == ["scale/w", "scale/c"]
    assert [w.trainable for w in layer.weights] == [True, False]
    assert len(layer.trainable_weights) == 1 and len(layer.non_trainable_weights) == 1
    assert y.shape == (None, 4)
    np.testing.assert_allclose(layer(np.full((2, 4), 3.0)), 3.0)
    assert layer.count_params() == 5


def test_count_params_needs_a_build():
    with pytest.raises(ValueError, match="isn't built"):
        layers.Dense(3).count_params()


def test_sublayers_are_tracked_in_weights_and_trainable():
    block = Block()
    block(layers.Input((5,)))
    assert [w.path for w in block.weights] == ["block/dense/kernel", "block/dense/bias", "block/dense_1/kernel",
                                               "block/dense_1/bias"]
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 4
    assert not block.inner[0].trainable and not block.inner[0].kernel.trainable
    block.trainable = True
    assert len(block.trainable_weights) == 4


def test_training_flag_reaches_inner_calls():
    block = Block()
    block(np.ones((1, 5), "float32"), training=True)
    block(np.ones((1, 5), "float32"))
    assert block.seen_training == [True, None]


def test_layer_call_records_a_node_and_tags_ops():
    x = layers.Input((3,), name="x")
    dense = layers.Dense(2)
    y = dense(x)
    assert y._keras_history.operation is dense and y._keras_history.node_index == 0
    assert dense.input is x and dense.output is y
    g = OpGraph([x], [y])
    assert all(n.layer is dense for n in g.nodes)
    z = dense(x)
    assert z._keras_history.node_index == 1 and len(dense._inbound_nodes) == 2


def test_identity_call_gets_a_node_of_its_own():
    x = layers.Input((3,))
    y = Identity()(x)
    assert y is not x and y.node is not None and y._keras_history.operation.name == "identity"
    assert x._keras_history.operation.name.startswith("input_layer")
    np.testing.assert_array_equal(models.Model(x, y)(np.ones((2, 3), "float32")), 1.0)


def test_compute_output_shape_and_set_weights_errors():
    dense = layers.Dense(4)
    assert dense.compute_output_shape((None, 7)) == (None, 4)
    with pytest.raises(ValueError, match=r"set_weights\(\) on layer 'dense' expects 2 arrays"):
        dense.set_weights([np.zeros((7, 4))])
    with pytest.raises(ValueError, match=r"weight 1 is 'dense/bias' with shape \(4,\), received an array of shape \(5,\)"):
        dense.set_weights([np.zeros((7, 4)), np.zeros(5)])


def test_layer_names_and_input_shape_kwargs():
    with pytest.raises(ValueError, match="string without '/'"):
        layers.Dense(1, name="a/b")
    assert layers.Dense(2, input_shape=(5,))._batch_input_shape == (None, 5)
    assert layers.Dense(2, input_dim=5)._batch_input_shape == (None, 5)


def test_input():
    x = layers.Input(shape=(28, 28, 1), name="img")
    assert x.shape == (None, 28, 28, 1) and x.name == "img" and x.dtype == "float32"
    ids = layers.Input((10,), dtype="int32")
    assert ids.dtype == "int32" and ids.name == "input_layer"
    assert layers.Input(batch_shape=(None, 3)).shape == (None, 3)
    with pytest.raises(ValueError, match="needs a shape"):
        layers.Input()
    with pytest.raises(ValueError, match="non-negative integer dims"):
        layers.Input((3.5,))


def test_build_without_arguments_and_keras2_super_build():
    class NoArg(layers.Layer):
        def build(self):
            self.b = self.add_weight(shape=(2,), initializer="ones", name="b")

        def call(self, x):
            return ops.add(x, self.b)

    class Keras2(layers.Layer):
        def build(self, input_shape):
            self.k = self.add_weight(name="k", shape=(input_shape[-1], 3), initializer="zeros")
            super().build(input_shape)

        def call(self, x):
            return ops.matmul(x, self.k)

    np.testing.assert_array_equal(NoArg()(np.zeros((1, 2), "float32")), 1.0)
    k2 = Keras2()
    assert k2(layers.Input((4,))).shape == (None, 3) and k2.built and k2.weights[0].shape == (4, 3)
