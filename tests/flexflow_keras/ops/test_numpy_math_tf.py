"""keras.ops' element-wise math (ops/numpy_math.py) against Keras 3 on TensorFlow: values and dtypes
eagerly (arrays, Python numbers, ints); the functions recorded in a model agree with their eager values;
gradients under our GradientTape (eager and through the recorded graph) match tf.GradientTape's of Keras'
own function; and a model using them trains with fit."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, keras_gradient, lambda_model, our_gradient  # noqa: E402

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import ops  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(0)

# name -> (low, high) of a domain where the function and its gradient are smooth
UNARY = {"tan": (-1.2, 1.2), "sinh": (-4, 4), "cosh": (-4, 4), "arctan": (-5, 5), "arcsin": (-0.95, 0.95),
         "arccos": (-0.95, 0.95), "arcsinh": (-6, 6), "arccosh": (1.05, 8), "arctanh": (-0.95, 0.95),
         "erf": (-2.5, 2.5), "erfinv": (-0.95, 0.95), "cbrt": (-3, 3), "exp2": (-3, 3), "deg2rad": (-200, 200),
         "rad2deg": (-3, 3), "fabs": (-3, 3), "sinc": (-2.5, 2.5), "trunc": (-3, 3)}
NO_GRADIENT = {"trunc"}
TOL = {"erfinv": dict(rtol=3e-5, atol=1e-5)}  # TensorFlow's float32 erfinv is off by up to ~1e-5 near 1


def _draw(lo, hi, shape=(3, 4, 5), dtype="float32"):
    return rng.uniform(lo, hi, shape).astype(dtype)


def _unary(name):
    return lambda K, x: getattr(K, name)(x)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_dtypes(name):
    lo, hi = UNARY[name]
    fn = _unary(name)
    for x in (_draw(lo, hi), _draw(lo, hi, dtype="float64")):
        assert_same(fn(ops, x), fn(keras.ops, x), what=name, **TOL.get(name, {}))
    if name not in ("erf", "erfinv"):  # Keras' TensorFlow erf refuses integers; ours computes in float32
        ints = np.clip(rng.integers(-3, 4, (2, 3)), int(np.ceil(lo)), int(np.floor(hi))).astype("int32")
        assert_same(fn(ops, ints), fn(keras.ops, ints), what=f"{name} of int32")
        assert_same(fn(ops, int(np.ceil(lo))), fn(keras.ops, int(np.ceil(lo))), what=f"{name} of a Python int")
    v = float(lo + (hi - lo) / 3)
    assert_same(fn(ops, v), fn(keras.ops, v), what=f"{name} of a Python float", **TOL.get(name, {}))


@pytest.mark.parametrize("name", sorted(set(UNARY) - NO_GRADIENT))
def test_unary_gradients_match_tensorflow(name):
    lo, hi = UNARY[name]
    x = _draw(lo, hi, dtype="float64")
    x[np.abs(x) < 0.05] = 0.3  # cbrt's and fabs' kinks
    w = rng.standard_normal(x.shape)
    want = keras_gradient(tf, keras, _unary(name), x, w)
    np.testing.assert_allclose(our_gradient(_unary(name), x, w), want, rtol=1e-6, atol=1e-8, err_msg=name)
    model = lambda_model(_unary(name), x.shape[1:], "float64")
    np.testing.assert_allclose(np.asarray(model(x)), np.asarray(_unary(name)(ops, x)), rtol=1e-12)
    np.testing.assert_allclose(our_gradient(None, x, w, model), want, rtol=1e-6, atol=1e-8, err_msg=name)


def test_edge_values():
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30], np.float32)
    for name in ("tan", "sinh", "cosh", "arctan", "arcsinh", "erf", "cbrt", "exp2", "fabs", "sinc", "trunc",
                 "signbit", "isinf", "isneginf", "isposinf", "nan_to_num"):
        assert_same(getattr(ops, name)(special), getattr(keras.ops, name)(special), what=name, rtol=2e-6)
    for name in ("arcsin", "arccos", "arctanh", "erfinv", "arccosh"):
        edges = np.array([1.0, -1.0, 1.5, -2.0, 0.0, np.nan], np.float32)
        assert_same(getattr(ops, name)(edges), getattr(keras.ops, name)(edges), what=name)
    assert_same(ops.nan_to_num(special, nan=3.0, posinf=7, neginf=-9),
                keras.ops.nan_to_num(special, nan=3.0, posinf=7, neginf=-9))
    d = np.array([np.nan, np.inf, -np.inf, 2.0])
    assert_same(ops.nan_to_num(d), keras.ops.nan_to_num(d))  # float64's max, not float32's
    assert_same(ops.sinh(np.float32(1e-4)), keras.ops.sinh(np.float32(1e-4)), rtol=1e-7)  # no cancellation


BINARY = {
    "arctan2": lambda K, a, b: K.arctan2(a, b), "hypot": lambda K, a, b: K.hypot(a, b),
    "logaddexp": lambda K, a, b: K.logaddexp(a, b), "heaviside": lambda K, a, b: K.heaviside(a, b),
    "fmod": lambda K, a, b: K.fmod(a, b), "divide_no_nan": lambda K, a, b: K.divide_no_nan(a, b),
    "isclose": lambda K, a, b: K.isclose(a, b, rtol=1e-3), "allclose": lambda K, a, b: K.allclose(a, b, atol=3.0),
    "logical_xor": lambda K, a, b: K.logical_xor(a, b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_and_dtypes(name):
    fn = BINARY[name]
    a, b = _draw(-3, 3), _draw(-3, 3, (4, 5))
    b[0, :2] = 0.0
    ia, ib = rng.integers(-4, 5, (3, 4)).astype("int32"), rng.integers(1, 4, (3, 4)).astype("int32")
    pairs = [(a, b), (a.astype("float64"), b), (ia, a[0, :3, :4]), (a, 2), (ia, 2.5), (3.0, -2.0)]
    if name != "fmod":  # Keras' TensorFlow fmod refuses int32 / int32
        pairs.append((ia, ib))
    else:
        pairs.append((7, 3))
    for x1, x2 in pairs:
        assert_same(fn(ops, x1, x2), fn(keras.ops, x1, x2), what=f"{name}{(np.shape(x1), np.shape(x2))}")


def test_binary_edges():
    y = np.array([0.0, 0.0, 1.0, -1.0, 0.0, -0.0, 2.0, 1e-30, np.inf, 3e30], np.float32)
    x = np.array([-1.0, 1.0, 0.0, 0.0, 0.0, -1.0, -1e-30, -2.0, np.inf, -4e30], np.float32)
    assert_same(ops.arctan2(y, x), keras.ops.arctan2(y, x), rtol=2e-7)
    assert_same(ops.hypot(y, x), keras.ops.hypot(y, x), rtol=2e-7)  # no overflow at 3e30
    inf = np.array([np.inf, -np.inf, np.inf, 1.0], np.float32)
    assert_same(ops.logaddexp(inf, inf[::-1]), keras.ops.logaddexp(inf, inf[::-1]))
    assert_same(ops.divide_no_nan(np.float32([1, 0, -2]), np.float32([0, 0, 4])),
                keras.ops.divide_no_nan(np.float32([1, 0, -2]), np.float32([0, 0, 4])))
    n = np.array([np.nan, 1.0], np.float32)
    assert_same(ops.isclose(n, n, equal_nan=True), keras.ops.isclose(n, n, equal_nan=True))


@pytest.mark.parametrize("name", ["arctan2", "hypot", "logaddexp", "fmod", "divide_no_nan"])
def test_binary_gradients_match_tensorflow(name):
    x = _draw(0.5, 3, (4, 6), "float64") * np.where(rng.random((4, 6)) < 0.5, -1, 1)
    x[0, :3] = (0.0, 1.0, -1.0)  # arctan2 on the axes: (0, 1), (1, 0), (-1, 0) with the flipped column

    def fn(K, t):
        return BINARY[name](K, t, K.multiply(K.flip(t, 1), 0.7))

    if name == "fmod":  # d fmod / d x1 is 1 away from the jumps (a per-feature divisor)
        x = np.abs(x) + 0.1

        def fn(K, t):
            return K.fmod(t, np.linspace(4.0, 5.0, 6))
    w = rng.standard_normal(x.shape)
    want = keras_gradient(tf, keras, fn, x, w)
    np.testing.assert_allclose(our_gradient(fn, x, w), want, rtol=1e-6, atol=1e-9, err_msg=name)
    model = lambda_model(fn, x.shape[1:], "float64")
    np.testing.assert_allclose(our_gradient(None, x, w, model), want, rtol=1e-6, atol=1e-9, err_msg=name)


def test_arctan2_gradient_is_finite_on_the_axes():
    # where() sends each branch safe values: no NaN from the branches not taken (x1 = 0 or x2 = 0)
    y = np.array([0.0, 0.0, 1.0, -1.0, 0.5], np.float64)
    x = np.array([-1.0, 1.0, 0.0, 0.0, -2.0], np.float64)
    w = np.ones(5)
    g = our_gradient(lambda K, t: K.arctan2(t, x), y, w)
    np.testing.assert_allclose(g, keras_gradient(tf, keras, lambda K, t: K.arctan2(t, x), y, w), rtol=1e-12)
    g0 = our_gradient(lambda K, t: K.sinc(t), np.array([0.0, 0.5]), np.ones(2))
    assert np.isfinite(g0).all() and g0[0] == 0.0


def test_symbolic_use_in_a_trained_model():
    """The functions inside a model's graph (Lambda and a custom layer's call) train with fit."""

    class Warp(ff.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")

        def call(self, x):
            t = ops.multiply(ops.tanh(x), self.w)
            return ops.add(ops.add(ops.sinh(t), ops.arctan(t)), ops.add(ops.erf(t), ops.hypot(t, 1.0)))

    x = rng.standard_normal((96, 6)).astype("float32")
    y = (np.sin(x[:, :1]) + x[:, 1:2] ** 2).astype("float32")
    inp = ff.layers.Input((6,))
    h = Warp()(ff.layers.Dense(8)(inp))
    h = ff.layers.Lambda(lambda t: ops.concatenate([ops.logaddexp(t, -t), ops.cbrt(ops.add(t, 3.0)),
                                                    ops.arcsinh(t), ops.tan(ops.multiply(t, 0.1))], -1))(h)
    model = ff.Model(inp, ff.layers.Dense(1)(h))
    model.compile(optimizer=ff.optimizers.Adam(0.01), loss="mse")
    losses = model.fit(x, y, epochs=8, batch_size=32, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.7 * losses[0], losses


def test_predicates_in_a_graph_have_no_gradient_but_record():
    fn = lambda K, t: K.where(K.isinf(K.divide(t, K.trunc(t))), 0.0, K.signbit(t) * 1.0)  # noqa: E731
    x = np.array([[0.5, -1.5, -0.2, 2.0]], np.float32)
    model = lambda_model(fn, (4,))
    assert_same(model(x), fn(keras.ops, x))
