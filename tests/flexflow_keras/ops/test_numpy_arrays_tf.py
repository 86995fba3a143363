"""keras.ops' array functions (ops/numpy_arrays.py, ops/numpy_stats.py) against Keras 3 on TensorFlow:
values and dtypes eagerly; recorded in a model (per-sample axes) they agree with the eager values; their
gradients, eager and through the recorded graph, match tf.GradientTape's of Keras' function; a model using
them trains; the eager-only ones refuse symbolic tensors with a message."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, keras_gradient, lambda_model, our_gradient  # noqa: E402

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import ops  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(1)
X = rng.standard_normal((3, 4, 5)).astype("float32")
M = rng.standard_normal((4, 5)).astype("float32")
IX = rng.integers(-4, 5, (4, 5)).astype("int32")
V = rng.standard_normal(6).astype("float32")

# name -> fn(K, x): each works on a (batch, 4, 5) tensor along per-sample axes, so it also runs in a graph
SAMPLE_FNS = {
    "moveaxis": lambda K, t: K.moveaxis(t, 1, 2),
    "moveaxis2": lambda K, t: K.moveaxis(t, (1, 2), (2, 1)),
    "roll": lambda K, t: K.roll(t, 2, axis=2),
    "roll2": lambda K, t: K.roll(t, (-1, 3), axis=(1, 2)),
    "unstack": lambda K, t: K.unstack(t, axis=2)[3],
    "hstack": lambda K, t: K.hstack([t, K.add(t, t)]),
    "dstack": lambda K, t: K.dstack([t, t]),
    "diagonal": lambda K, t: K.diagonal(t, 1, 1, 2),
    "diagonal_neg": lambda K, t: K.diagonal(t, -2, 2, 1),
    "trace": lambda K, t: K.trace(t, 0, 1, 2),
    "fliplr": lambda K, t: K.fliplr(t),
    "rot90": lambda K, t: K.rot90(t, 1, (1, 2)),
    "rot90_3": lambda K, t: K.rot90(t, 3, (2, 1)),
    "cumprod": lambda K, t: K.cumprod(t, axis=2),
    "cumprod_long": lambda K, t: K.cumprod(K.concatenate([t, t, t], axis=1), axis=1),
    "diff": lambda K, t: K.diff(t, 1, axis=2),
    "diff2": lambda K, t: K.diff(t, 2, axis=1),
    "tensordot": lambda K, t: K.tensordot(t, np.linspace(-1, 1, 10).reshape(5, 2).astype("float32"), 1),
    "tensordot2": lambda K, t: K.tensordot(t, np.linspace(-1, 1, 40).reshape(4, 5, 2).astype("float32"),
                                           ([1, 2], [0, 1])),
    "inner": lambda K, t: K.inner(t, np.linspace(-1, 1, 15).reshape(3, 5).astype("float32")),
    "median": lambda K, t: K.median(t, axis=2),
    "median_even": lambda K, t: K.median(t, axis=1),
    "quantile": lambda K, t: K.quantile(t, 0.3, axis=(1, 2), keepdims=True),
    "quantile_lower": lambda K, t: K.quantile(t, 0.55, axis=2, method="lower"),
    "quantile_mid": lambda K, t: K.quantile(t, 0.55, axis=2, method="midpoint"),
    "percentile": lambda K, t: K.percentile(t, 80, axis=1),
    "ptp": lambda K, t: K.ptp(t, axis=2),
    "append": lambda K, t: K.append(t, K.add(t, t), axis=1),
    "select": lambda K, t: K.select([K.greater(t, 0.5), K.less(t, -0.5)], [t, K.negative(t)], 0),
    "copy": lambda K, t: K.copy(t),
}
NO_GRADIENT = {"quantile_lower", "ptp"}  # ties in max/min, and a gather: checked for values only


@pytest.mark.parametrize("name", sorted(SAMPLE_FNS))
def test_values_dtypes_and_graph(name):
    fn = SAMPLE_FNS[name]
    assert_same(fn(ops, X), fn(keras.ops, X), what=name)
    if name not in ("tensordot", "tensordot2", "inner"):  # (their constant operand is float32)
        ints = rng.integers(-4, 5, X.shape).astype("int32")
        assert_same(fn(ops, ints), fn(keras.ops, ints), what=f"{name} of int32")
    model = lambda_model(fn, X.shape[1:])
    assert_same(model(X), fn(keras.ops, X), what=f"{name} in a graph")


@pytest.mark.parametrize("name", sorted(set(SAMPLE_FNS) - NO_GRADIENT))
def test_gradients_match_tensorflow(name):
    fn = SAMPLE_FNS[name]
    x = rng.standard_normal(X.shape)
    x += np.arange(x.size).reshape(x.shape) * 1e-3  # no ties (median, sorting)
    x64 = lambda K, t: fn(K, K.cast(t, "float32"))  # noqa: E731 - the constants are float32
    w = rng.standard_normal(np.shape(fn(ops, X.astype("float32"))))
    want = keras_gradient(tf, keras, x64, x, w)
    np.testing.assert_allclose(our_gradient(x64, x, w), want, rtol=1e-5, atol=1e-6, err_msg=name)
    model = lambda_model(fn, X.shape[1:])
    got = our_gradient(None, x.astype("float32"), w.astype("float32"), model)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} in a graph")


@pytest.mark.parametrize("call", [
    lambda K: K.moveaxis(X, 0, -1), lambda K: K.roll(X, 5), lambda K: K.roll(IX, -3, axis=0), lambda K: K.unstack(X),
    lambda K: K.hstack([V, V]), lambda K: K.hstack([IX, M]), lambda K: K.vstack([M, M]), lambda K: K.dstack([V, V]),
    lambda K: K.dstack([M, IX]), lambda K: K.ravel(X), lambda K: K.ravel(IX), lambda K: K.flipud(X),
    lambda K: K.fliplr(IX), lambda K: K.rot90(M), lambda K: K.rot90(X, 3), lambda K: K.diagonal(M),
    lambda K: K.diagonal(M, 2), lambda K: K.diagonal(M, -3), lambda K: K.trace(M), lambda K: K.trace(IX, 1),
    lambda K: K.trace(np.ones((3, 3), bool)), lambda K: K.tri(3), lambda K: K.tri(3, 4, 1),
    lambda K: K.tri(4, 2, -1, dtype="int32"), lambda K: K.cumprod(X), lambda K: K.cumprod(IX, axis=0),
    lambda K: K.cumprod(np.array([True, False, True])), lambda K: K.diff(np.array([True, False, False])),
    lambda K: K.diff(X, 0), lambda K: K.diff(IX, 3, 0), lambda K: K.append(X, X), lambda K: K.append(IX, M),
    lambda K: K.append(IX, IX, axis=0), lambda K: K.select([IX > 0, IX < 0], [IX, IX * 2], 7), lambda K: K.copy(IX),
    lambda K: K.array([1, 2]), lambda K: K.array([1.0, 2]), lambda K: K.array(IX, "float32"),
    lambda K: K.empty_like(IX), lambda K: K.empty((2, 3)), lambda K: K.tensordot(IX, IX.T, 1),
    lambda K: K.tensordot(IX, M.T, 1), lambda K: K.tensordot(X, X, ([0, 2], [0, 2])), lambda K: K.inner(V, V),
    lambda K: K.inner(2.0, M), lambda K: K.inner(IX, IX), lambda K: K.vdot(M, M), lambda K: K.vdot(IX, IX),
    lambda K: K.vdot(M.reshape(2, 10), M.reshape(20)), lambda K: K.kron(M[:2, :3], M[:3, :2]),
    lambda K: K.kron(V[:3], M), lambda K: K.kron(IX[:2], IX[:2, :2]), lambda K: K.median(X),
    lambda K: K.median(IX, axis=1, keepdims=True), lambda K: K.median(X, axis=(0, 2)),
    lambda K: K.quantile(X, [0.1, 0.5, 0.95]), lambda K: K.quantile(X, [0.2, 0.7], axis=1, method="nearest"),
    lambda K: K.quantile(X, 0.7, keepdims=True), lambda K: K.quantile(X, 0.0, axis=-1),
    lambda K: K.quantile(X, 1.0, axis=-1, method="higher"), lambda K: K.quantile(IX, 0.4, axis=0),
    lambda K: K.percentile(X, [10, 90], axis=-1), lambda K: K.ptp(X), lambda K: K.ptp(IX, axis=0, keepdims=True),
])
def test_eager_calls_match_keras(call):
    assert_same(call(ops), call(keras.ops))


def test_quantile_propagates_nan():
    x = X.copy()
    x[0, 1, 2] = np.nan
    assert_same(ops.quantile(x, 0.5, axis=2), keras.ops.quantile(x, 0.5, axis=2))
    assert_same(ops.median(x), keras.ops.median(x))


def test_data_dependent_functions_match_keras():
    seq = np.sort(V)
    for side in ("left", "right"):
        assert_same(ops.searchsorted(seq, V[:3], side=side), keras.ops.searchsorted(seq, V[:3], side=side))
    ids = np.array([1, 2, 2, 5])
    assert_same(ops.bincount(ids), keras.ops.bincount(ids))
    assert_same(ops.bincount(ids, minlength=8), keras.ops.bincount(ids, minlength=8))
    w = np.array([0.5, 1.0, 1.0, 2.0], "float32")
    assert_same(ops.bincount(ids, weights=w), keras.ops.bincount(ids, weights=w))
    rows = np.array([[1, 2, 2], [0, 0, 3]])
    assert_same(ops.bincount(rows), keras.ops.bincount(rows))
    u = np.array([3, 1, 1, 7, 3, 3], "int32")
    for kw in (dict(), dict(return_index=True, return_inverse=True, return_counts=True),
               dict(sorted=False, return_inverse=True, return_counts=True), dict(size=5, fill_value=-1),
               dict(size=2, return_counts=True)):
        assert_same(list(np.atleast_1d(ops.unique(u, **kw)) if not isinstance(ops.unique(u, **kw), tuple)
                         else ops.unique(u, **kw)),
                    list(np.atleast_1d(keras.ops.unique(u, **kw)) if not isinstance(keras.ops.unique(u, **kw), tuple)
                         else keras.ops.unique(u, **kw)), what=str(kw))
    assert_same(list(ops.unique(rows[[0, 0, 1]], axis=0, return_inverse=True)),
                list(keras.ops.unique(rows[[0, 0, 1]], axis=0, return_inverse=True)))


def test_numpy_semantics_where_keras_tensorflow_differs():
    # Keras' TensorFlow backend concatenates 1-D tensors in vstack ((12,)) and mis-rotates rot90(k=2) of a
    # non-square plane; its NumPy and JAX backends follow NumPy, as these do
    np.testing.assert_array_equal(ops.vstack([V, V]), np.vstack([V, V]))
    np.testing.assert_array_equal(ops.rot90(M, 2), np.rot90(M, 2))
    np.testing.assert_array_equal(ops.rot90(X, 2, (1, 2)), np.rot90(X, 2, (1, 2)))


def test_symbolic_refusals_name_the_problem():
    x = ff.layers.Input((4, 5))
    with pytest.raises(ShapeError, match="batch dim"):
        ops.roll(x, 1, axis=0)
    with pytest.raises(ShapeError, match="batch dim"):
        ops.unstack(x)
    with pytest.raises(ShapeError, match="batch dim"):
        ops.ravel(x)
    with pytest.raises(ShapeError, match="batch dim"):
        ops.trace(x)  # axes (0, 1) include the batch
    with pytest.raises(ShapeError, match="batch dim"):
        ops.median(x)
    with pytest.raises(ShapeError, match="per q"):
        ops.quantile(x, [0.2, 0.4], axis=1)
    for fn in (lambda: ops.unique(x), lambda: ops.bincount(x), lambda: ops.searchsorted(np.arange(3.0), x)):
        with pytest.raises(ShapeError, match="eager only"):
            fn()
    with pytest.raises(ValueError, match="method"):
        ops.quantile(X, 0.5, method="inverted_cdf")
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        ops.quantile(X, 1.5)
    with pytest.raises(ValueError, match="distinct"):
        ops.moveaxis(X, (0, 0), (1, 2))


def _model():
    inp = ff.layers.Input((4, 5))
    h = ff.layers.Dense(5)(inp)
    h = ff.layers.Lambda(lambda t: ops.concatenate([
        ops.reshape(ops.moveaxis(t, 1, 2), (-1, 20)), ops.reshape(ops.roll(t, 1, axis=1), (-1, 20)),
        ops.median(t, axis=2), ops.reshape(ops.diff(t, 1, axis=2), (-1, 16)), ops.trace(t, 0, 1, 2)[:, None],
        ops.reshape(ops.cumprod(ops.tanh(t), axis=2), (-1, 20)), ops.tensordot(t, np.ones((5, 2), "float32"), 1)[:, 0],
    ], axis=-1))(h)
    return ff.Model(inp, ff.layers.Dense(1)(h))


def test_a_model_using_them_trains():
    x = rng.standard_normal((96, 4, 5)).astype("float32")
    y = (x[:, 0, :2].sum(-1, keepdims=True) - np.median(x, axis=2)[:, 1:2]).astype("float32")
    model = _model()
    model.compile(optimizer=ff.optimizers.Adam(0.01), loss="mse")
    losses = model.fit(x, y, epochs=8, batch_size=32, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.6 * losses[0], losses


def test_data_parallel_shards_train_as_one():
    x = rng.standard_normal((32, 4, 5)).astype("float32")
    y = rng.standard_normal((32, 1)).astype("float32")
    weights = _model().get_weights()
    trained = []
    for degree in (2, 1):
        ff.config.set(only_data_parallel=True, cpus=degree, data_parallel_degree=degree)
        try:
            model = _model()
            model.set_weights(weights)
            model.compile(optimizer=ff.optimizers.SGD(0.05), loss="mse")
            model.fit(x, y, epochs=1, batch_size=16, verbose=0, shuffle=False)
            trained.append(model.get_weights())
        finally:
            ff.config.reset()
    for a, b in zip(*trained, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
