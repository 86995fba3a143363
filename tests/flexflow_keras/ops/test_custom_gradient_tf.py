"""`tf.custom_gradient` / `keras.ops.custom_gradient` (Géron's handson-ml3 chapter 12: a softplus whose
automatic gradient overflows to NaN at 1e30, given a stable gradient) give tf's values and gradients under
`GradientTape`. Before: tf.custom_gradient was refused as raw TensorFlow, and keras.ops had no
custom_gradient."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

FFTF = keras_alias._TensorFlow("tensorflow")


def _softplus(T):
    @T.custom_gradient
    def my_softplus(z):
        def my_softplus_gradients(grads):
            return grads * (1 - 1 / (1 + T.exp(z)))

        result = T.math.log(1 + T.exp(-T.abs(z))) + T.maximum(0., z)
        return result, my_softplus_gradients

    return my_softplus


def _scaled_product(T):
    @T.custom_gradient
    def f(a, b):
        def grad(upstream):
            return upstream * b * 10.0, None  # a deliberately wrong gradient for a; none for b
        return a * b, grad

    return f


@pytest.mark.parametrize("xs", [[1000.0], [-3.0, 0.5, 4.0], [1e30]])
def test_stable_softplus_value_and_gradient_as_tf(xs):
    got = []
    for T in (tf, FFTF):
        x = T.Variable(xs)
        with T.GradientTape() as tape:
            z = T.reduce_sum(_softplus(T)(x) * 2.0)
        got.append((float(z), np.asarray(tape.gradient(z, [x])[0])))
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-6)
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-6)


def test_two_arguments_and_no_tape():
    got = []
    for T in (tf, FFTF):
        a, b = T.Variable([1.0, 2.0]), T.Variable([3.0, 4.0])
        with T.GradientTape() as tape:
            y = _scaled_product(T)(a, b)
        ga, gb = tape.gradient(y, [a, b])
        got.append((np.asarray(y), np.asarray(ga), gb, np.asarray(_scaled_product(T)(a, b))))
    np.testing.assert_allclose(got[1][0], got[0][0])
    np.testing.assert_allclose(got[1][1], got[0][1])  # the function's gradient, not the automatic one
    assert got[0][2] is None and not np.any(got[1][2])  # ours: zeros for a None (module docstring)
    np.testing.assert_allclose(got[1][3], got[0][3])


def test_keras_ops_custom_gradient_and_symbolic_refusal():
    @ff.ops.custom_gradient
    def double(x):
        return x * 2.0, lambda upstream: upstream * 3.0

    x = ff.Variable(np.ones(3, "float32"))
    with ff.ops.tape.GradientTape() as tape:
        y = ff.ops.sum(double(x))
    np.testing.assert_allclose(tape.gradient(y, x), 3.0)
    with pytest.raises(ff.errors.GraphError, match="symbolic"):
        double(ff.Input((3,)))
