"""`keras.regularizers.get` takes the names Keras 3 takes (each class's name and its snake_case: "l1l2",
"orthogonal_regularizer"; not "l1_l2"), and `OrthogonalRegularizer`'s penalty, gradient and training
effect equal tf.keras 3.15's. Before: "l1l2" and "orthogonal_regularizer" were unknown names, "l1_l2"
was taken, and there was no OrthogonalRegularizer."""

import numpy as np
import pytest

import flexflow_keras as ff

NAMES = ["l1", "l2", "l1l2", "L1L2", "orthogonal_regularizer", "OrthogonalRegularizer", "l1_l2", "l1_reg"]


def _get(lib, name):
    try:
        r = lib.regularizers.get(name)
    except ValueError:
        return "ValueError"
    return type(r).__name__, {k: round(float(v), 6) if k != "mode" else v for k, v in r.get_config().items()}


def test_names_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    assert [_get(ff, n) for n in NAMES] == [_get(tf.keras, n) for n in NAMES]


@pytest.mark.parametrize("mode", ["rows", "columns"])
def test_orthogonal_penalty_and_gradient(mode):
    tf = pytest.importorskip("tensorflow")
    w = np.random.default_rng(1).normal(size=(5, 3)).astype("float32")
    w[2] = 0.0  # a zero row: Keras clips its inverse norm at 1/epsilon
    ours = ff.regularizers.OrthogonalRegularizer(0.3, mode)
    theirs = tf.keras.regularizers.OrthogonalRegularizer(0.3, mode)
    v = tf.Variable(w)
    with tf.GradientTape() as tape:
        want = theirs(v)
    np.testing.assert_allclose(ours(w), float(want), rtol=1e-5)
    np.testing.assert_allclose(ours.gradient(w), tape.gradient(want, v).numpy(), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="rank-2"):
        ours(np.ones((2, 2, 2), "float32"))


def _fit(lib):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 3)).astype("float32")
    inp = lib.Input((4,))
    model = lib.Model(inp, lib.layers.Dense(3, kernel_regularizer="orthogonal_regularizer")(inp))
    model.set_weights([np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32") for w in model.get_weights()])
    model.compile(lib.optimizers.SGD(0.5), "mse")
    hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    return hist, model.get_weights()


def test_orthogonal_fit_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    got, want = _fit(ff), _fit(tf.keras)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
