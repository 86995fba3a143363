"""keras.ops' shrink and sparse activations, glu, sparsemax, rms_normalization and layer_normalization
(ops/nn_more.py), and the same names in keras.activations, against Keras 3 on TensorFlow: values and
dtypes, gradients (eager and through a recorded graph) against tf.GradientTape, and use in layers."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")  # Keras 3 on the TensorFlow backend

from keras_parity import assert_same, keras_gradient, lambda_model, our_gradient  # noqa: E402

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import activations, ops  # noqa: E402
from flexflow_keras.errors import ShapeError  # noqa: E402

pytestmark = pytest.mark.tf
rng = np.random.default_rng(2)
X = (rng.standard_normal((3, 4, 6)) * 2).astype("float32")

FNS = {
    "hard_shrink": lambda K, t: K.hard_shrink(t),
    "hard_shrink_1": lambda K, t: K.hard_shrink(t, threshold=1.0),
    "soft_shrink": lambda K, t: K.soft_shrink(t, 0.7),
    "tanh_shrink": lambda K, t: K.tanh_shrink(t),
    "sparse_plus": lambda K, t: K.sparse_plus(t),
    "squareplus": lambda K, t: K.squareplus(t, b=2),
    "threshold": lambda K, t: K.threshold(t, 0.3, -1.5),
    "sparse_sigmoid": lambda K, t: K.sparse_sigmoid(t),
    "glu": lambda K, t: K.glu(t),
    "glu_axis1": lambda K, t: K.glu(t, axis=1),
    "rms_normalization": lambda K, t: K.rms_normalization(t),
    "rms_normalization_axes": lambda K, t: K.rms_normalization(
        t, scale=np.linspace(0.5, 1.5, 24).reshape(4, 6).astype("float32"), axis=(1, 2), epsilon=1e-3),
    "rms_normalization_mid": lambda K, t: K.rms_normalization(t, axis=1),
    "rms_normalization_mid_scale": lambda K, t: K.rms_normalization(  # the scale goes with the last axis
        t, scale=np.linspace(0.5, 1.5, 6).astype("float32"), axis=1),
    "layer_normalization": lambda K, t: K.layer_normalization(t),
    "layer_normalization_affine": lambda K, t: K.layer_normalization(
        t, gamma=np.linspace(0.5, 1.5, 6).astype("float32"), beta=np.linspace(-1, 1, 6).astype("float32")),
    "layer_normalization_mid": lambda K, t: K.layer_normalization(
        t, gamma=np.linspace(0.5, 1.5, 4).astype("float32"), beta=np.ones(4, "float32"), axis=1, epsilon=1e-3),
    "layer_normalization_two": lambda K, t: K.layer_normalization(t, axis=(1, 2)),
}
KINKS = {"hard_shrink": 0.5, "hard_shrink_1": 1.0, "soft_shrink": 0.7, "threshold": 0.3, "sparse_plus": 1.0,
         "sparse_sigmoid": 1.0}


@pytest.mark.parametrize("name", sorted(FNS))
def test_values_dtypes_and_graph(name):
    fn = FNS[name]
    for x in (X, X.astype("float64")):
        assert_same(fn(ops, x), fn(keras.ops, x), what=name)
    assert_same(lambda_model(fn, X.shape[1:])(X), fn(keras.ops, X), what=f"{name} in a graph")


@pytest.mark.parametrize("name", sorted(FNS))
def test_gradients_match_tensorflow(name):
    fn = FNS[name]
    x = X.astype("float64")
    k = KINKS.get(name)
    if k is not None:  # keep away from the kinks, where the one-sided derivatives differ
        x = np.where(np.abs(np.abs(x) - k) < 0.05, x + 0.2, x)
    f32 = lambda K, t: fn(K, K.cast(t, "float32"))  # noqa: E731 - the constants are float32
    w = rng.standard_normal(np.shape(fn(ops, X)))
    want = keras_gradient(tf, keras, f32, x, w)
    np.testing.assert_allclose(our_gradient(f32, x, w), want, rtol=1e-4, atol=1e-5, err_msg=name)
    model = lambda_model(fn, X.shape[1:])
    got = our_gradient(None, x.astype("float32"), w.astype("float32"), model)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} in a graph")


def test_layer_normalization_fused_and_composed_agree():
    gamma, beta = ff.Variable(np.linspace(0.5, 2, 6)), ff.Variable(np.zeros(6))  # float32 Variables
    fused = ops.layer_normalization(X, gamma, beta, epsilon=1e-3)
    composed = ops.layer_normalization(X, gamma, np.zeros((1, 1, 6), "float32"), epsilon=1e-3)  # beta of rank 3
    np.testing.assert_allclose(fused, composed, rtol=1e-5, atol=1e-5)
    assert_same(fused, keras.ops.layer_normalization(X, np.asarray(gamma.value), np.zeros(6, "float32"), epsilon=1e-3))
    assert_same(ops.layer_normalization(np.arange(5, dtype="float32")),
                keras.ops.layer_normalization(np.arange(5, dtype="float32")))


@pytest.mark.parametrize("name", ["hard_shrink", "soft_shrink", "tanh_shrink", "sparse_plus", "squareplus",
                                  "sparse_sigmoid", "glu", "threshold"])
def test_keras_activations(name):
    kw = dict(threshold=0.2, default_value=-1.0) if name == "threshold" else {}
    assert_same(getattr(activations, name)(X, **kw), getattr(keras.activations, name)(X, **kw), what=name)
    assert activations.get(name) is getattr(activations, name)
    assert activations.serialize(getattr(activations, name)) == name


@pytest.mark.parametrize("name", ["hard_shrink", "soft_shrink", "tanh_shrink", "sparse_plus", "squareplus",
                                  "sparse_sigmoid"])
def test_dense_with_the_new_activations_matches_keras(name):
    ours = ff.layers.Dense(5, activation=name)
    theirs = keras.layers.Dense(5, activation=name)
    x = X[:, 0]
    ours(x), theirs(x)
    theirs.set_weights(ours.get_weights())
    assert_same(ours(x), theirs(x), what=name)


def test_sparsemax_is_the_simplex_projection():
    # Keras 3.15's sparsemax takes tau from the sum of the support's cumulative sums (its outputs do not sum
    # to 1: [0.5, 1.2, -0.3, 2.0] gives all zeros); this is Martins & Astudillo's definition
    z = np.array([[0.5, 1.2, -0.3, 2.0], [0.1, 0.2, 0.3, 0.4]], "float32")
    np.testing.assert_allclose(ops.sparsemax(z), [[0, 0.1, 0, 0.9], [0.1, 0.2, 0.3, 0.4]], atol=1e-6)
    p = np.asarray(ops.sparsemax(X, axis=1))
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-5)
    assert (p >= 0).all() and (p == 0).any()
    model = lambda_model(lambda K, t: K.sparsemax(t, axis=1), X.shape[1:])
    np.testing.assert_allclose(model(X), p, rtol=1e-6, atol=1e-7)
    # its Jacobian on the support is IX - 1 1^T / k (zero off the support)
    x = np.array([[0.5, 1.2, -0.3, 2.0, 1.9]])
    w = np.array([[1.0, 2.0, 3.0, 4.0, -1.0]])
    g = our_gradient(lambda K, t: K.sparsemax(t), x, w)
    np.testing.assert_allclose(g, [[0, 0, 0, 2.5, -2.5]], atol=1e-12)


def test_errors():
    with pytest.raises(ShapeError, match="even size"):
        ops.glu(np.ones((2, 3), "float32"))
    with pytest.raises(ShapeError, match="batch dim"):
        ops.rms_normalization(ff.layers.Input((3,)), axis=0)
    with pytest.raises(ShapeError, match=r"scale of shape \(4,\) does not broadcast"):
        ops.rms_normalization(X, scale=np.ones(4, "float32"), axis=1)
    with pytest.raises(TypeError, match="unexpected arguments"):
        ops.layer_normalization(X, scale=True)
