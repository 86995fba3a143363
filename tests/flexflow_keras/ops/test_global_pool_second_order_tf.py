"""Gradients of gradients through global pooling against TensorFlow: keras.io's WGAN-GP on molecular
graphs (wgan-graphs) pools its critic's graph features with GlobalAveragePooling1D, and its gradient
penalty differentiates the critic's input gradient with respect to the critic's weights. Before, that
raised "second-order gradients through global_pool2d are not supported"; GlobalPool2DOp now has a
backward-as-ops rule (ops/backward_ops.py): the mean spreads the gradient over H*W, the max puts it on
the forward's argmax. Our side runs with the `tf` module `python -m flexflow_keras` gives scripts."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _critic(K, pool, shape):
    inp = K.Input(shape)
    x = K.layers.Dense(5, activation="tanh")(inp)
    x = pool(K)(x)
    return K.Model(inp, K.layers.Dense(1)(K.layers.Dense(4, activation="tanh")(x)))


POOLS = {
    "avg1d": (lambda K: K.layers.GlobalAveragePooling1D(), (4, 3)),
    "avg2d": (lambda K: K.layers.GlobalAveragePooling2D(), (3, 2, 3)),
    "max2d": (lambda K: K.layers.GlobalMaxPooling2D(), (3, 2, 3)),
}


def _penalty_grads(T, model, x):
    x = T.convert_to_tensor(x)
    with T.GradientTape() as outer:
        with T.GradientTape() as inner:
            inner.watch(x)
            logits = model(x, training=True)
        g = inner.gradient(logits, [x])[0]
        axes = tuple(range(1, len(x.shape)))
        gp = T.reduce_mean((1 - T.sqrt(T.reduce_sum(T.square(g), axis=axes))) ** 2)
    grads = outer.gradient(gp, model.trainable_weights)
    return float(gp), [None if q is None else np.asarray(q) for q in grads]


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_gradient_penalty_through_global_pooling_matches_tensorflow(pool):
    make, shape = POOLS[pool]
    tk.utils.set_random_seed(0)
    tm, fm = _critic(tk, make, shape), _critic(ff, make, shape)
    fm.set_weights(tm.get_weights())
    x = np.random.default_rng(1).standard_normal((3,) + shape).astype("float32")
    tgp, tg = _penalty_grads(tf, tm, x)
    fgp, fg = _penalty_grads(FFTF, fm, x)
    np.testing.assert_allclose(fgp, tgp, rtol=1e-5)
    assert [g is None for g in fg] == [g is None for g in tg]
    for a, b in zip(fg, tg, strict=True):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("pool", ["max1d", "max2d"])
def test_gradient_penalty_through_tied_maxima_matches_tensorflow(pool):
    """Repeated input rows give tied maxima after the Dense: the first and the second-order gradients share
    them equally, as TensorFlow's reduce_max (Keras 3's global max poolings)."""
    make, shape = {"max1d": (lambda K: K.layers.GlobalMaxPooling1D(), (4, 3)),
                   "max2d": (lambda K: K.layers.GlobalMaxPooling2D(), (2, 2, 3))}[pool]
    tk.utils.set_random_seed(0)
    tm, fm = _critic(tk, make, shape), _critic(ff, make, shape)
    fm.set_weights(tm.get_weights())
    row = np.random.default_rng(1).standard_normal((3, 1, shape[-1])).astype("float32")
    x = np.broadcast_to(row.reshape((3,) + (1,) * (len(shape) - 1) + (shape[-1],)), (3,) + shape).copy()
    tgp, tg = _penalty_grads(tf, tm, x)
    fgp, fg = _penalty_grads(FFTF, fm, x)
    np.testing.assert_allclose(fgp, tgp, rtol=1e-5)
    assert [g is None for g in fg] == [g is None for g in tg]
    for a, b in zip(fg, tg, strict=True):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
