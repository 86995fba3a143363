"""Merge layers and their functional forms, activation layers with parameters."""

import numpy as np
import pytest
from ff_layer_harness import run_layer_test

from flexflow_keras import layers
from flexflow_keras.errors import ShapeError

MERGES = [(layers.Add, "Add", np.add), (layers.Subtract, "Subtract", np.subtract),
          (layers.Multiply, "Multiply", np.multiply), (layers.Maximum, "Maximum", np.maximum),
          (layers.Minimum, "Minimum", np.minimum), (layers.Average, "Average", lambda a, b: (a + b) / 2)]


@pytest.mark.parametrize("cls,tf_name,ref", MERGES)
def test_merge(cls, tf_name, ref, parity):
    _, out, (a, b) = run_layer_test(cls, {}, input_shape=[(3, 4), (3, 4)], expected_output_shape=(None, 4),
                                    compare_tf=parity, tf_layer=tf_name)
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-6)


def test_merge_three_inputs_and_functions():
    a, b, c = (layers.Input((4,)) for _ in range(3))
    assert layers.add([a, b, c]).shape == (None, 4)
    assert layers.multiply([a, b]).shape == (None, 4)
    assert layers.maximum([a, b]).shape == layers.minimum([a, b]).shape == layers.subtract([a, b]).shape
    assert layers.concatenate([a, b, c]).shape == (None, 12)
    assert layers.average([a, b]).shape == (None, 4)


def test_merge_errors():
    a, b = layers.Input((4,)), layers.Input((5,))
    with pytest.raises(ShapeError, match=r"Add 'add' needs inputs of the same shape .*\(None, 4\), \(None, 5\)"):
        layers.Add()([a, b])
    with pytest.raises(ValueError, match=r"Subtract 'subtract' expects exactly 2 inputs, received 3"):
        layers.Subtract()([a, a, a])
    with pytest.raises(ValueError, match="expects a list of inputs"):
        layers.Add()(a)
    c = layers.Input((3, 2))
    with pytest.raises(ShapeError, match="same rank"):
        layers.Concatenate()([a, c])


@pytest.mark.parametrize("axis,out", [(-1, (None, 2, 7)), (1, (None, 5, 3))])
def test_concatenate(axis, out, parity):
    shapes = [(3, 2, 3), (3, 2, 4)] if axis == -1 else [(3, 2, 3), (3, 3, 3)]
    run_layer_test(layers.Concatenate, dict(axis=axis), input_shape=shapes, expected_output_shape=out,
                   compare_tf=parity, tf_layer="Concatenate")


@pytest.mark.parametrize("cls,kwargs,tf_name", [
    (layers.ReLU, dict(), "ReLU"),
    (layers.ReLU, dict(max_value=1.0, negative_slope=0.1, threshold=0.2), "ReLU"),
    (layers.LeakyReLU, dict(), "LeakyReLU"),
    (layers.LeakyReLU, dict(negative_slope=0.1), "LeakyReLU"),
    (layers.ELU, dict(alpha=0.5), "ELU"),
    (layers.Softmax, dict(), "Softmax"),
    (layers.Softmax, dict(axis=1), "Softmax"),
])
def test_activation_layers(cls, kwargs, tf_name, parity):
    run_layer_test(cls, kwargs, input_shape=(3, 4, 5), expected_output_shape=(None, 4, 5), compare_tf=parity, tf_layer=tf_name)


def test_leaky_relu_keras2_alpha():
    assert layers.LeakyReLU(alpha=0.2).negative_slope == pytest.approx(0.2)
