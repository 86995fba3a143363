"""Softmax, log-softmax and the loss kernels against the float64 references."""

import numpy as np
import pytest

from kernels import reference as ref
from kernels.losses import (
    BCE,
    BCE_LOGITS,
    CCE,
    CCE_LOGITS,
    MAE,
    MSE,
    loss_backward_cpu,
    loss_forward_cpu,
    sparse_loss_backward_cpu,
    sparse_loss_forward_cpu,
)
from kernels.softmax import (
    log_softmax_backward_cpu,
    log_softmax_forward_cpu,
    softmax_backward_cpu,
    softmax_forward_cpu,
)

rng = np.random.default_rng(2)


@pytest.mark.parametrize("shape,axis", [((4, 6), -1), ((2, 3, 5), 1), ((2, 3, 5), 0), ((3, 4), 0)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(shape, axis, log):
    x = rng.standard_normal(shape) * 3
    y, dx = np.empty(shape), np.empty(shape)
    dy = rng.standard_normal(shape)
    fwd, bwd = (log_softmax_forward_cpu, log_softmax_backward_cpu) if log else (softmax_forward_cpu,
                                                                             softmax_backward_cpu)
    fwd(x, y, axis)
    np.testing.assert_allclose(y, (ref.log_softmax if log else ref.softmax)(x, axis), rtol=1e-12, atol=1e-14)
    bwd(y, dy, dx, axis)
    want = (ref.log_softmax_grad if log else ref.softmax_grad)(x, dy, axis)
    np.testing.assert_allclose(dx, want, rtol=1e-10, atol=1e-12)
    bwd(y, dy, dx, axis, accumulate=True)
    np.testing.assert_allclose(dx, 2 * want, rtol=1e-10, atol=1e-12)


def test_softmax_large_logits_float32():
    x = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    y = np.empty_like(x)
    softmax_forward_cpu(x, y)
    np.testing.assert_allclose(y, [[1, 0, 0]])


def _probs(shape):
    return ref.softmax(rng.standard_normal(shape))


def _dense_case(kind):
    shape = (5, 4)
    if kind in (CCE, CCE_LOGITS):
        t = np.eye(4)[rng.integers(0, 4, 5)]
    elif kind in (BCE, BCE_LOGITS):
        t = rng.integers(0, 2, shape).astype(float)
    else:
        t = rng.standard_normal(shape)
    if kind == CCE:
        p = _probs(shape) * 1.7  # unnormalised: Keras divides by the sum
    elif kind == BCE:
        p = rng.uniform(0.05, 0.95, shape)
    else:
        p = rng.standard_normal(shape)
    return t, p


REFS = {CCE: lambda t, p, ls: ref.categorical_crossentropy(t, p, False, ls),
        CCE_LOGITS: lambda t, p, ls: ref.categorical_crossentropy(t, p, True, ls),
        BCE: lambda t, p, ls: ref.binary_crossentropy(t, p, False, ls),
        BCE_LOGITS: lambda t, p, ls: ref.binary_crossentropy(t, p, True, ls),
        MSE: lambda t, p, ls: ref.mean_squared_error(t, p),
        MAE: lambda t, p, ls: ref.mean_absolute_error(t, p)}


@pytest.mark.parametrize("kind,ls", [(k, 0.0) for k in REFS] + [(k, 0.1) for k in (CCE, CCE_LOGITS, BCE, BCE_LOGITS)])
def test_dense_losses(kind, ls):
    t, p = _dense_case(kind)
    loss = np.empty(p.shape[0])
    loss_forward_cpu(kind, t, p, loss, ls)
    np.testing.assert_allclose(loss, REFS[kind](t, p, ls), rtol=1e-10, atol=1e-12)
    g = rng.uniform(0.5, 1.5, p.shape[0])
    dp = np.empty_like(p)
    loss_backward_cpu(kind, t, p, g, dp, ls)
    want = ref.numerical_grad(lambda v: REFS[kind](t, v, ls), p, g)
    np.testing.assert_allclose(dp, want, rtol=1e-6, atol=1e-7)
    loss_backward_cpu(kind, t, p, g, dp, ls, accumulate=True)
    np.testing.assert_allclose(dp, 2 * want, rtol=1e-6, atol=2e-7)


def test_categorical_clipping_matches_keras():
    t = np.array([[0.0, 1.0], [1.0, 0.0]])
    p = np.array([[1.0, 0.0], [0.5, 0.5]], np.float32)
    loss = np.empty(2, np.float32)
    loss_forward_cpu(CCE, t, p, loss)
    np.testing.assert_allclose(loss, [-np.log(np.float32(1e-7)), np.log(2)], rtol=1e-5)


@pytest.mark.parametrize("from_logits", [False, True])
def test_sparse_crossentropy(from_logits):
    labels = rng.integers(0, 4, (2, 3))
    p = rng.standard_normal((2, 3, 4)) if from_logits else _probs((2, 3, 4))
    p[0, 0, :] = [1e-9, 0.5, 0.3, 0.2] if not from_logits else p[0, 0, :]  # one clipped probability
    loss = np.empty((2, 3))
    assert sparse_loss_forward_cpu(labels, p, loss, from_logits) == -1
    want = ref.sparse_categorical_crossentropy(labels, p, from_logits)
    np.testing.assert_allclose(loss, want, rtol=1e-10)
    g = rng.uniform(0.5, 1.5, (2, 3))
    dp = np.empty_like(p)
    sparse_loss_backward_cpu(labels, p, g, dp, from_logits)
    num = ref.numerical_grad(lambda v: ref.sparse_categorical_crossentropy(labels, v, from_logits), p, g, h=1e-10)
    np.testing.assert_allclose(dp, num, rtol=1e-4, atol=1e-4)


def test_sparse_reports_bad_label():
    loss = np.empty(3)
    assert sparse_loss_forward_cpu(np.array([0, 5, 1]), _probs((3, 4)), loss, False) == 1


def test_logits_crossentropy_gradient_is_tensorflows_for_multi_hot_targets():
    # softmax(p) - t (TensorFlow's softmax_cross_entropy_with_logits), not the exact softmax(p) * sum(t) - t:
    # tf.keras trains targets that do not sum to 1 with it
    t = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.3, 0.3]])
    p = rng.standard_normal(t.shape)
    g = rng.uniform(0.5, 1.5, 3)
    for ls in (0.0, 0.1):
        dp = np.empty_like(p)
        loss_backward_cpu(CCE_LOGITS, t, p, g, dp, ls)
        smoothed = t * (1 - ls) + ls / t.shape[1]
        np.testing.assert_allclose(dp, g[:, None] * (ref.softmax(p) - smoothed), rtol=1e-12, atol=1e-14)
