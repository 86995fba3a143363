"""activations: functions by name on arrays (eager ops) and on symbolic tensors; get/serialize."""

import numpy as np
import pytest

from flexflow_keras import activations, layers

x = np.linspace(-3, 3, 13, dtype=np.float32).reshape(1, 13)

REFS = {
    "relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
    "softplus": lambda v: np.log1p(np.exp(v)), "softsign": lambda v: v / (1 + np.abs(v)),
    "elu": lambda v: np.where(v > 0, v, np.exp(v) - 1), "exponential": np.exp, "linear": lambda v: v,
    "silu": lambda v: v / (1 + np.exp(-v)), "relu6": lambda v: np.clip(v, 0, 6),
    "leaky_relu": lambda v: np.where(v > 0, v, 0.2 * v),
    "selu": lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * (np.exp(v) - 1)),
    "softmax": lambda v: np.exp(v) / np.exp(v).sum(-1, keepdims=True),
    "log_softmax": lambda v: v - np.log(np.exp(v).sum(-1, keepdims=True)),
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_eager_values(name):
    fn = activations.get(name)
    np.testing.assert_allclose(fn(x), REFS[name](x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert activations.serialize(fn) == name or name in ("swish",)


@pytest.mark.parametrize("name", ["relu", "softmax", "gelu", "hard_sigmoid", "mish"])
def test_symbolic(name):
    t = layers.Input((13,))
    y = activations.get(name)(t)
    assert y.shape == (None, 13)


def test_parameters_and_get():
    np.testing.assert_allclose(activations.relu(x, max_value=1.0, negative_slope=0.1),
                               np.where(x > 1, 1, np.where(x > 0, x, 0.1 * x)), rtol=1e-6, atol=1e-7)
    assert activations.get(None) is activations.linear
    assert activations.get(np.tanh) is np.tanh
    assert activations.swish is activations.silu
    assert activations.fusable_name(activations.relu) == "relu"
    assert activations.fusable_name(activations.softmax) is None
    with pytest.raises(ValueError, match=r"Unknown activation 'rel'. Valid names"):
        activations.get("rel")
