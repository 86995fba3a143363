"""CPU activation kernels against the float64 references."""

import math

import numpy as np
import pytest

from kernels import reference as ref
from kernels.activations import (
    ACTIVATION_NAMES,
    RELU6,
    activation_backward_cpu,
    activation_forward_cpu,
    grad_from_output,
    resolve_activation,
)

PARAMS = {"threshold": {"threshold": 0.3, "default_value": -2.0}}
CASES = [(n, PARAMS.get(n, {})) for n in ACTIVATION_NAMES] + [
    ("relu", {"negative_slope": 0.1}), ("relu", {"max_value": 1.5}), ("relu", {"threshold": 0.4}),
    ("relu", {"negative_slope": 0.2, "max_value": 2.0, "threshold": -0.5}), ("relu", {"max_value": 6.0}),
    ("leaky_relu", {"negative_slope": 0.05}), ("elu", {"alpha": 0.5}), ("gelu", {"approximate": True}),
    ("celu", {"alpha": 2.0}), ("squareplus", {"b": 1.0}),
]


def _inputs(dtype):
    # Stay away from the kinks (0, +-1, +-3, 6, thresholds) so finite differences are exact.
    x = np.linspace(-7.3, 7.1, 97)
    kinks = np.array([0, 1, -1, 3, -3, 6, 0.3, 0.4, -0.5, 1.5, 2.0, 0.5, -0.5])
    x = x[np.min(np.abs(x[:, None] - kinks[None, :]), axis=1) > 1e-2]
    return x.reshape(-1, 1).repeat(2, 1).astype(dtype)


@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}-{p}" for n, p in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_backward(name, params, dtype):
    act = resolve_activation(name, **params)
    x = _inputs(dtype)
    y = np.empty_like(x)
    activation_forward_cpu(x, y, act)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, ref.activation(name, x, **params), rtol=tol, atol=tol)
    dy = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    dx = np.empty_like(x)
    activation_backward_cpu(x, y, dy, dx, act)
    want = ref.activation_grad(name, x.astype(np.float64), dy, **params)
    np.testing.assert_allclose(dx, want, rtol=1e-4, atol=1e-5)
    activation_backward_cpu(x, y, dy, dx, act, accumulate=True)
    np.testing.assert_allclose(dx, 2 * want, rtol=1e-4, atol=2e-5)


def test_forward_in_place():
    x = np.array([-1.0, 2.0, -3.0], np.float32)
    activation_forward_cpu(x, x, resolve_activation("relu"))
    np.testing.assert_array_equal(x, [0, 2, 0])


def test_resolve_errors_name_the_fix():
    with pytest.raises(ValueError, match="Valid names: .*relu"):
        resolve_activation("rleu")
    with pytest.raises(ValueError, match="received unknown \\['alpha'\\]"):
        resolve_activation("relu", alpha=1.0)
    with pytest.raises(ValueError, match="needs the parameter 'threshold'"):
        resolve_activation("threshold")


def test_grad_from_output_classification():
    assert grad_from_output(resolve_activation("relu"))
    assert grad_from_output(resolve_activation("sigmoid"))
    assert not grad_from_output(resolve_activation("gelu"))
    assert not grad_from_output(resolve_activation("relu", threshold=1.0))
    assert resolve_activation("relu", max_value=6).code == RELU6
    assert resolve_activation("relu").p1 == math.inf


def test_extreme_inputs_stay_finite():
    x = np.array([-1e4, -80.0, 80.0, 1e4], np.float32)
    for name in ("sigmoid", "softplus", "silu", "log_sigmoid", "mish", "tanh"):
        y = np.empty_like(x)
        activation_forward_cpu(x, y, resolve_activation(name))
        assert np.all(np.isfinite(y)), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_selu_and_elu_gradients_at_zero_are_tensorflows(dtype):
    """TensorFlow's SeluGrad/EluGrad take the linear branch for outputs >= 0: at x = 0 and -0.0, SELU's
    derivative is its scale 1.0507 (ours gave scale * alpha, 1.7581) and ELU's (alpha 0.5) is alpha,
    through Keras' where(x > 0, ...) (values read from tf.GradientTape on keras.activations)."""
    x = np.array([0.0, -0.0, -1.0, 1.0], dtype)
    for name, params, want in (("selu", {}, [1.050701, 1.050701, 0.64676857, 1.050701]),
                               ("elu", {"alpha": 0.5}, [0.5, 0.5, 0.18393973, 1.0])):
        act = resolve_activation(name, **params)
        y, dx = np.empty_like(x), np.empty_like(x)
        activation_forward_cpu(x, y, act)
        activation_backward_cpu(x, y, np.ones_like(x), dx, act)
        np.testing.assert_allclose(dx, want, rtol=1e-6, err_msg=name)
