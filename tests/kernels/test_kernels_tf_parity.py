"""The kernels against tf.keras itself (float32, Keras 3 defaults): activations, losses and their
gradients, batch and layer normalisation. Marked `tf` (needs tensorflow)."""

import numpy as np
import pytest

from kernels import losses as kl
from kernels.activations import (
    ACTIVATION_NAMES,
    activation_backward_cpu,
    activation_forward_cpu,
    resolve_activation,
)
from kernels.batchnorm import (
    batchnorm_backward_inputs_cpu,
    batchnorm_backward_weights_cpu,
    batchnorm_forward_cpu,
    batchnorm_moments,
    batchnorm_stats_cpu,
)
from kernels.layernorm import layernorm_backward_cpu, layernorm_forward_cpu

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
rng = np.random.default_rng(13)


def _grad(fn, *args):
    vs = [tf.Variable(a) for a in args]
    with tf.GradientTape() as tape:
        out = fn(*vs)
    dy = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    grads = tape.gradient(out, vs, output_gradients=tf.constant(dy))
    return out.numpy(), [None if g is None else g.numpy() for g in grads], dy


@pytest.mark.parametrize("name", [n for n in ACTIVATION_NAMES if n != "threshold"])
def test_activations_match_keras(name):
    x = np.linspace(-5.1, 5.3, 41).astype(np.float32)
    fn = keras.activations.get(name)
    want, (dwant,), dy = _grad(lambda v: fn(v), x)
    act = resolve_activation(name)
    y, dx = np.empty_like(x), np.empty_like(x)
    activation_forward_cpu(x, y, act)
    activation_backward_cpu(x, y, dy, dx, act)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(dx, dwant, rtol=2e-5, atol=2e-5)


CASES = [("categorical_crossentropy", False, 0.0), ("categorical_crossentropy", True, 0.0),
         ("categorical_crossentropy", False, 0.1), ("categorical_crossentropy", True, 0.2),
         ("binary_crossentropy", False, 0.0), ("binary_crossentropy", True, 0.0),
         ("binary_crossentropy", False, 0.1), ("mean_squared_error", False, 0.0),
         ("mean_absolute_error", False, 0.0)]


@pytest.mark.parametrize("name,logits,ls", CASES)
def test_dense_losses_match_keras(name, logits, ls):
    n, c = 8, 5
    if name == "categorical_crossentropy":
        t = np.eye(c, dtype=np.float32)[rng.integers(0, c, n)]
        p = rng.standard_normal((n, c)).astype(np.float32) if logits else rng.dirichlet(np.ones(c), n).astype(np.float32)
        if not logits:
            p[0] = [1.0, 0, 0, 0, 0]  # clipped entries
    elif name == "binary_crossentropy":
        t = rng.integers(0, 2, (n, c)).astype(np.float32)
        p = rng.standard_normal((n, c)).astype(np.float32) if logits else rng.uniform(0, 1, (n, c)).astype(np.float32)
        if not logits:
            p[0, :2] = [0.0, 1.0]
    else:
        t, p = rng.standard_normal((2, n, c)).astype(np.float32)
    kw = {"from_logits": logits} if "crossentropy" in name else {}
    if ls:
        kw["label_smoothing"] = ls
    fn = getattr(keras.losses, name)
    want, (_, dwant), g = _grad(lambda a, b: fn(a, b, **kw), t, p)
    kind = kl.DENSE_LOSSES[name][1 if logits else 0]
    loss, dp = np.empty(n, np.float32), np.empty_like(p)
    kl.loss_forward_cpu(kind, t, p, loss, ls)
    kl.loss_backward_cpu(kind, t, p, g, dp, ls)
    np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dp, dwant, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("logits", [False, True])
def test_sparse_crossentropy_matches_keras(logits):
    labels = rng.integers(0, 4, 6)
    p = rng.standard_normal((6, 4)).astype(np.float32) if logits else rng.dirichlet(np.ones(4), 6).astype(np.float32)
    if not logits:
        p[1] = [0.0, 0.0, 1.0, 0.0]
    want, (_, dwant), g = _grad(lambda a, b: keras.losses.sparse_categorical_crossentropy(a, b, from_logits=logits),
                                labels.astype(np.float32), p)
    loss, dp = np.empty(6, np.float32), np.empty_like(p)
    kl.sparse_loss_forward_cpu(labels, p, loss, logits)
    kl.sparse_loss_backward_cpu(labels, p, g, dp, logits)
    np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dp, dwant, rtol=1e-4, atol=1e-5)


def test_batchnorm_training_matches_keras():
    x = (rng.standard_normal((6, 3, 3, 4)) * 2 + 1).astype(np.float32)
    layer = keras.layers.BatchNormalization()
    layer.build(x.shape)
    gamma, beta = rng.uniform(0.5, 1.5, 4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    layer.set_weights([gamma, beta, np.zeros(4, np.float32), np.ones(4, np.float32)])
    xv = tf.Variable(x)
    with tf.GradientTape() as tape:
        out = layer(xv, training=True)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx_t, dg_t, db_t = tape.gradient(out, [xv, layer.gamma, layer.beta], output_gradients=tf.constant(dy))
    sums = np.zeros((2, 4))
    batchnorm_stats_cpu(x, sums)
    mean, var = batchnorm_moments(sums, x.size / 4)
    y = np.empty_like(x)
    batchnorm_forward_cpu(x, mean, var, gamma, beta, 1e-3, y)
    dg, db, dx = np.empty(4, np.float32), np.empty(4, np.float32), np.empty_like(x)
    batchnorm_backward_weights_cpu(x, dy, mean, var, 1e-3, dg, db)
    batchnorm_backward_inputs_cpu(x, dy, mean, var, gamma, 1e-3, dg, db, x.size / 4, True, dx)
    np.testing.assert_allclose(y, out.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, dx_t.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dg, dg_t.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, db_t.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.01 * mean, rtol=1e-5, atol=1e-7)


def test_layernorm_matches_keras():
    x = (rng.standard_normal((5, 7)) * 3).astype(np.float32)
    layer = keras.layers.LayerNormalization()
    layer.build(x.shape)
    g, b = rng.uniform(0.5, 1.5, 7).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    layer.set_weights([g, b])
    xv = tf.Variable(x)
    with tf.GradientTape() as tape:
        out = layer(xv)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx_t, dg_t, db_t = tape.gradient(out, [xv, layer.gamma, layer.beta], output_gradients=tf.constant(dy))
    y, dx, dg, db = np.empty_like(x), np.empty_like(x), np.empty_like(g), np.empty_like(b)
    layernorm_forward_cpu(x, g, b, y)
    layernorm_backward_cpu(x, g, dy, dx, dg, db)
    np.testing.assert_allclose(y, out.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, dx_t.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dg, dg_t.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, db_t.numpy(), rtol=1e-5, atol=1e-5)
