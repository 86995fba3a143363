"""tf.math.xlogy, xdivy, lgamma, digamma, erfc and squared_difference under the runner (tf_math_ops.py)
against TensorFlow 2.21: values, dtypes, poles, integer refusals, gradients and a symbolic use in a model."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
GAMMA_X = np.array([-3.7, -2.5, -0.5, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, 10.0, 120.0, 0.0, -1.0, np.inf])
ERFC_X = np.array([-5.0, -1.0, 0.0, 0.3, 1.9, 2.0, 2.5, 5.0, 9.0, 26.0])
A, B = np.array([0.0, 0.0, 1.0, 2.0, -3.0]), np.array([0.0, 2.0, 3.0, 0.0, 0.5])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,x", [("lgamma", GAMMA_X), ("digamma", GAMMA_X), ("erfc", ERFC_X)])
def test_special_functions_match_tensorflow(fn, x, dtype):
    x = x.astype(dtype)
    want, got = getattr(tf.math, fn)(x).numpy(), getattr(FFTF.math, fn)(x).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-10, atol=1e-6 if dtype ==
                               "float32" else 1e-12)


@pytest.mark.parametrize("case", [
    ("math.xlogy", (A.astype("float32"), B.astype("float32")), {}), ("math.xdivy", (A, B), {}),
    ("math.squared_difference", ([1.0, 2.0], [3.0, 1.0]), {}),
    ("math.squared_difference", (np.int32([1, 5]), np.int32([4, 2])), {}),
], ids=lambda c: c[0] + str(c[1][0].dtype if hasattr(c[1][0], "dtype") else ""))
def test_binary_functions_match_tensorflow(case):
    check_eager_call(tf, FFTF, *case, rtol=1e-7)


def test_integers_are_tensorflows_error():
    for fn, args in [("lgamma", ([1, 2],)), ("xlogy", ([1, 2], [1, 2])), ("erfc", (np.int64([1]),))]:
        with pytest.raises(tf.errors.InvalidArgumentError):
            getattr(tf.math, fn)(*args)
        with pytest.raises(InvalidArgumentError, match="Value for attr 'T' of int"):
            getattr(FFTF.math, fn)(*args)


def test_gradients_match_tensorflow():
    x, y = np.array([0.0, 0.7, 1.5, 3.0], np.float32), np.array([0.5, 2.0, 0.3, 4.0], np.float32)
    vx, vy, tx, ty = keras.Variable(x), keras.Variable(y), tf.Variable(x), tf.Variable(y)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.math.xlogy(vx, vy) + FFTF.math.xdivy(vx, vy) + FFTF.math.lgamma(vy)
                               + FFTF.math.digamma(vy + 1.0) + FFTF.math.erfc(vx - 1.0)
                               + FFTF.math.squared_difference(vx, vy))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.math.xlogy(tx, ty) + tf.math.xdivy(tx, ty) + tf.math.lgamma(ty)
                              + tf.math.digamma(ty + 1.0) + tf.math.erfc(tx - 1.0) + tf.math.squared_difference(tx, ty))
    for got, want in zip(tape.gradient(loss, [vx, vy]), ttape.gradient(tloss, [tx, ty]), strict=True):
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-4, atol=1e-5)


def test_symbolic_calls_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((3,))
    outs = [FFTF.math.lgamma(inp), FFTF.math.digamma(inp), FFTF.math.erfc(inp), FFTF.math.xlogy(inp, inp + 1.0),
            FFTF.math.squared_difference(inp, 1.0)]
    x = np.array([[0.5, 1.5, 2.5], [3.0, 0.2, 7.0]], np.float32)
    wants = [tf.math.lgamma(x), tf.math.digamma(x), tf.math.erfc(x), tf.math.xlogy(x, x + 1.0),
             tf.math.squared_difference(x, 1.0)]
    for got, want in zip(keras.Model(inp, outs).predict(x, verbose=0), wants, strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=2e-6, atol=1e-6)
