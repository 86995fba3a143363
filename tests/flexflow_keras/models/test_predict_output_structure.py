"""predict() gives the model's outputs in the structure they were declared in, as Keras 3 (checked with
TF 2.21's Keras): a dict of outputs as a dict, nested lists nested, Model(x, [y]) one array, and a subclassed
model's call() result as it returns it. keras.io's involution builds Model(inp, [layer.output, ...]) of layers
returning (output, kernel) pairs and unpacks predict's result in three pairs; it received six arrays."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.data.slices import SliceDataset


@pytest.fixture(autouse=True)
def _one_piece(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)


def _shapes(r):
    if isinstance(r, dict):
        return {k: _shapes(v) for k, v in r.items()}
    if isinstance(r, list | tuple):
        return [_shapes(v) for v in r]
    return tuple(r.shape)


X = np.ones((5, 3), "float32")


def test_functional_structures():
    inp = keras.Input((3,))
    a, b = layers.Dense(2)(inp), layers.Dense(4)(inp)
    cases = [(a, (5, 2)), ([a], (5, 2)), ([a, b], [(5, 2), (5, 4)]), ({"p": a, "q": b}, {"p": (5, 2), "q": (5, 4)}),
             ([a, [b, a]], [(5, 2), [(5, 4), (5, 2)]]), ({"p": [a, b]}, {"p": [(5, 2), (5, 4)]}), ([[a]], [(5, 2)])]
    for outputs, want in cases:
        model = keras.Model(inp, outputs)
        assert _shapes(model.predict(X, verbose=0)) == want, outputs
        assert _shapes(model.predict_on_batch(X)) == want, outputs
    pred = keras.Model(inp, {"p": a, "q": b}).predict(X, verbose=0)
    np.testing.assert_allclose(pred["q"], keras.Model(inp, b).predict(X, verbose=0))


def test_layer_output_pairs():
    class Two(layers.Layer):
        def call(self, x):
            return x * 2.0, x + 1.0

    inp = keras.Input((3,))
    first = Two(name="t1")(inp)
    second = Two(name="t2")(first[0])
    model = keras.Model(inp, second[0])
    vis = keras.Model(model.input, [model.get_layer("t1").output, model.get_layer("t2").output])
    (x1, k1), (x2, k2) = vis.predict(X, verbose=0)
    np.testing.assert_allclose(x1, 2.0)
    np.testing.assert_allclose(k1, 2.0)
    np.testing.assert_allclose(x2, 4.0)
    np.testing.assert_allclose(k2, 3.0)


def test_subclassed_call_structure_and_dataset():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = layers.Dense(2), layers.Dense(4)

        def call(self, x):
            return {"small": self.d1(x), "big": self.d2(x)}

    net = Net()
    assert _shapes(net.predict(X, verbose=0)) == {"small": (5, 2), "big": (5, 4)}
    batches = SliceDataset.from_tensor_slices(np.ones((7, 3), "float32")).batch(4)
    assert _shapes(net.predict(batches, verbose=0)) == {"small": (7, 2), "big": (7, 4)}
