"""Keras 3's top-level classes: keras.Layer, keras.Loss, keras.Metric, keras.Optimizer, keras.Initializer,
keras.Regularizer, keras.InputSpec, keras.KerasTensor and keras.DTypePolicy are the classes of their
submodules, as in tf.keras 3.15. Deep Learning with Python 3rd ed. ch. 3 subclasses ``keras.Layer``
(SimpleDense) and stopped with "module 'flexflow_keras' has no attribute 'Layer'"."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

ALIASES = [("Layer", "layers.Layer"), ("Loss", "losses.Loss"), ("Metric", "metrics.Metric"),
           ("Optimizer", "optimizers.Optimizer"), ("Initializer", "initializers.Initializer"),
           ("Regularizer", "regularizers.Regularizer"), ("InputSpec", "layers.InputSpec"),
           ("DTypePolicy", "dtype_policies.DTypePolicy")]


def _get(module, path):
    for part in path.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("name,path", ALIASES, ids=[a[0] for a in ALIASES])
def test_top_level_class_is_the_submodule_class(name, path):
    assert _get(keras_ref, name) is _get(keras_ref, path)  # Keras' own rule
    ours_path = path.replace("dtype_policies", "mixed_precision")  # Keras 2's home of DTypePolicy in ours
    assert getattr(ff, name) is _get(ff, ours_path)
    assert name in ff.__all__


def test_keras_tensor_is_the_symbolic_tensor():
    for mod in (ff, keras_ref):
        assert isinstance(mod.Input(shape=(3,)), mod.KerasTensor)


def _simple_dense(mod):
    class SimpleDense(mod.Layer):
        def __init__(self, units, activation=None):
            super().__init__()
            self.units = units
            self.activation = activation

        def build(self, input_shape):
            batch_dim, input_dim = input_shape
            self.W = self.add_weight(shape=(input_dim, self.units), initializer="ones")
            self.b = self.add_weight(shape=(self.units,), initializer="zeros")

        def call(self, inputs):
            y = mod.ops.matmul(inputs, self.W) + self.b
            if self.activation is not None:
                y = self.activation(y)
            return y

    return SimpleDense


def test_layer_subclass_of_the_notebook():
    x = np.linspace(-1, 1, 2 * 784, dtype=np.float32).reshape(2, 784)
    outs = []
    for mod in (ff, keras_ref):
        layer = _simple_dense(mod)(units=32, activation=mod.ops.relu)
        out = layer(x)
        assert tuple(out.shape) == (2, 32)
        outs.append(np.asarray(out))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-6)
