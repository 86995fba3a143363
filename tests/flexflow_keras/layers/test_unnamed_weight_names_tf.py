"""An add_weight() without a name is named as Keras 3 names it: 'variable', 'variable_1', ... from one
process-wide counter (clear_session restarts it), where each layer here counted its own 'variable_0',
'variable_1'. keras.io's deep_neural_decision_forests adds its leaf weights `pi` unnamed in a subclassed
Model: tf.keras calls it 'neural_decision_tree/variable', flexflow_keras called it
'neural_decision_tree/variable_0'. Against tf.keras 3.15."""

import numpy as np
import pytest

import flexflow_keras as ffk

keras = pytest.importorskip("keras")

pytestmark = pytest.mark.tf


def _names(lib):
    lib.backend.clear_session()

    class Leaves(lib.layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight(shape=(2,))
            self.b = self.add_weight(shape=(3,), trainable=False)
            self.c = self.add_weight(shape=(1,), name="kern")

        def call(self, x):
            return x

    class Tree(lib.Model):
        def __init__(self):
            super().__init__()
            self.pi = self.add_weight(shape=(4, 2), initializer="random_normal")
            self.decision = lib.layers.Dense(4, name="decision")

        def call(self, x):
            return lib.ops.matmul(self.decision(x), self.pi)

    first, second = Leaves(), Leaves()
    first.build((1,))
    second.build((1,))
    tree = Tree()
    tree(np.ones((2, 3), "float32"))
    weights = first.weights + second.weights + tree.weights
    return [w.path for w in weights], [w.name for w in weights]


def test_unnamed_weights_are_named_as_in_keras():
    assert _names(ffk) == _names(keras)
