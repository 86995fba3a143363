"""Batch and layer normalisation kernels, including the sharded (cross-shard statistics) path."""

import numpy as np
import pytest

from kernels import reference as ref
from kernels.batchnorm import (
    batchnorm_backward_inputs_cpu,
    batchnorm_backward_weights_cpu,
    batchnorm_forward_cpu,
    batchnorm_moments,
    batchnorm_stats_cpu,
    moving_average_update,
)
from kernels.layernorm import layernorm_backward_cpu, layernorm_forward_cpu

rng = np.random.default_rng(3)


def _bn_sharded(x, gamma, beta, dy, axis, shards, eps=1e-3):
    """Run the staged training kernels over `shards` batch pieces like the execution would."""
    c = x.shape[axis]
    pieces = np.array_split(np.arange(x.shape[0]), shards)
    sums = np.zeros((2, c))
    for idx in pieces:
        batchnorm_stats_cpu(x[idx], sums, axis)
    count = x.size / c
    mean, var = batchnorm_moments(sums, count)
    y = np.empty_like(x)
    dgamma, dbeta = np.zeros(c), np.zeros(c)
    for idx in pieces:
        out = np.empty_like(x[idx])
        batchnorm_forward_cpu(x[idx], mean, var, gamma, beta, eps, out, axis)
        y[idx] = out
        batchnorm_backward_weights_cpu(x[idx], dy[idx], mean, var, eps, dgamma, dbeta, axis, (True, True))
    dx = np.empty_like(x)
    for idx in pieces:
        out = np.empty_like(x[idx])
        batchnorm_backward_inputs_cpu(x[idx], dy[idx], mean, var, gamma, eps, dgamma, dbeta, count, True, out,
                                      axis)
        dx[idx] = out
    return y, mean, var, dx, dgamma, dbeta


@pytest.mark.parametrize("shape,axis", [((6, 5), -1), ((4, 3, 3, 2), -1), ((4, 3, 2, 2), 1)])
@pytest.mark.parametrize("shards", [1, 3])
def test_batchnorm_training_matches_reference(shape, axis, shards):
    x = rng.standard_normal(shape) * 2 + 1
    c = shape[axis]
    gamma, beta = rng.standard_normal(c), rng.standard_normal(c)
    dy = rng.standard_normal(shape)
    y, mean, var, dx, dgamma, dbeta = _bn_sharded(x, gamma, beta, dy, axis, shards)
    ry, rmean, rvar = ref.batchnorm_train(x, gamma, beta, axis=axis)
    np.testing.assert_allclose(y, ry, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(mean, rmean, rtol=1e-12)
    np.testing.assert_allclose(var, rvar, rtol=1e-10)
    rdx, rdg, rdb = ref.batchnorm_train_grads(x, gamma, dy, axis=axis)
    np.testing.assert_allclose(dx, rdx, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dgamma, rdg, rtol=1e-10)
    np.testing.assert_allclose(dbeta, rdb, rtol=1e-10)
    num = ref.numerical_grad(lambda v: ref.batchnorm_train(v, gamma, beta, axis=axis)[0], x, dy)
    np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-6)


def test_batchnorm_inference_and_moving_average():
    x = rng.standard_normal((4, 3)).astype(np.float32)
    mm, mv = np.array([0.5, -1, 0], np.float32), np.array([2, 0.5, 1], np.float32)
    y = np.empty_like(x)
    batchnorm_forward_cpu(x, mm, mv, None, None, 1e-3, y)
    np.testing.assert_allclose(y, (x - mm) / np.sqrt(mv + 1e-3), rtol=1e-6)
    dx = np.empty_like(x)
    dy = np.ones_like(x)
    batchnorm_backward_inputs_cpu(x, dy, mm, mv, None, 1e-3, None, None, 4, False, dx)
    np.testing.assert_allclose(dx, np.broadcast_to(1 / np.sqrt(mv + 1e-3), x.shape), rtol=1e-6)
    moving = mm.copy()
    moving_average_update(moving, np.array([1.0, 1.0, 1.0]), 0.99)
    np.testing.assert_allclose(moving, mm * 0.99 + 0.01, rtol=1e-6)


def test_batchnorm_float32_stats_are_float64():
    x = (rng.standard_normal((256, 4)) * 0.01 + 1000).astype(np.float32)
    sums = np.zeros((2, 4))
    batchnorm_stats_cpu(x, sums)
    _, var = batchnorm_moments(sums, 256)
    np.testing.assert_allclose(var, x.astype(np.float64).var(0), rtol=1e-3)


@pytest.mark.parametrize("shape,n_axes", [((4, 6), 1), ((2, 3, 4), 1), ((2, 3, 4), 2)])
def test_layernorm(shape, n_axes):
    x = rng.standard_normal(shape) * 3 + 0.5
    pshape = shape[len(shape) - n_axes:]
    gamma, beta = rng.standard_normal(pshape), rng.standard_normal(pshape)
    y = np.empty(shape)
    layernorm_forward_cpu(x, gamma, beta, y, n_axes)
    np.testing.assert_allclose(y, ref.layernorm(x, gamma, beta, n_axes), rtol=1e-10, atol=1e-12)
    dy = rng.standard_normal(shape)
    dx, dg, db = np.empty(shape), np.empty(pshape), np.empty(pshape)
    layernorm_backward_cpu(x, gamma, dy, dx, dg, db, n_axes)
    np.testing.assert_allclose(dx, ref.numerical_grad(lambda v: ref.layernorm(v, gamma, beta, n_axes), x, dy),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dg, ref.numerical_grad(lambda v: ref.layernorm(x, v, beta, n_axes), gamma, dy),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db, ref.numerical_grad(lambda v: ref.layernorm(x, gamma, v, n_axes), beta, dy),
                               rtol=1e-5, atol=1e-6)
    layernorm_backward_cpu(x, gamma, dy, dx, dg, db, n_axes, accumulate=(True, True, True))
    np.testing.assert_allclose(db, 2 * dy.reshape((-1,) + pshape).sum(0), rtol=1e-10)


@pytest.mark.parametrize("offset", [0.0, 300.0])
@pytest.mark.parametrize("shape,axis", [((8, 5, 5, 24), -1), ((8, 24, 5, 5), 1)])
def test_batchnorm_float32_matches_the_float64_reference(offset, shape, axis):
    """float32 batches, channels last (the per-channel coefficient loops) and first: within float32
    rounding of the float64 reference, also far from zero (x - mean cancels around the float32 mean)."""
    r = np.random.default_rng(11)
    x64 = r.standard_normal(shape) * 1.5 + offset
    x = x64.astype(np.float32)
    c = shape[axis]
    gamma, beta = r.standard_normal(c), r.standard_normal(c)
    dy = r.standard_normal(shape).astype(np.float32)
    y, mean, var, dx, dgamma, dbeta = _bn_sharded(x, gamma.astype(np.float32), beta.astype(np.float32), dy, axis, 2)
    xr = x.astype(np.float64)
    ry, _, _ = ref.batchnorm_train(xr, gamma, beta, axis=axis)
    rdx, rdg, rdb = ref.batchnorm_train_grads(xr, gamma, dy.astype(np.float64), axis=axis)
    np.testing.assert_allclose(y, ry, rtol=2e-5, atol=2e-5 * np.abs(ry).max())
    np.testing.assert_allclose(dx, rdx, rtol=2e-4, atol=2e-5 * np.abs(rdx).max())
    np.testing.assert_allclose(dgamma, rdg, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dbeta, rdb, rtol=1e-5, atol=1e-5)
    acc = np.ones_like(dx)
    batchnorm_backward_inputs_cpu(x, dy, mean, var, gamma.astype(np.float32), 1e-3, dgamma, dbeta,
                                  x.size / c, True, acc, axis, accumulate=True)
    np.testing.assert_allclose(acc, dx + 1.0, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("d", [37, 512])
def test_layernorm_float32_wide_rows_match_float64(d):
    """Rows long enough for the vectorised (reassociated) row sums, float32 against the same kernels in
    float64 (checked above against the reference), and dgamma/dbeta over many rows."""
    r = np.random.default_rng(5)
    x = (r.standard_normal((96, d)) * 2 + 4).astype(np.float32)
    gamma, beta = r.standard_normal(d).astype(np.float32), r.standard_normal(d).astype(np.float32)
    dy = r.standard_normal((96, d)).astype(np.float32)
    y32, y64 = np.empty_like(x), np.empty(x.shape)
    layernorm_forward_cpu(x, gamma, beta, y32)
    layernorm_forward_cpu(x.astype(np.float64), gamma.astype(np.float64), beta.astype(np.float64), y64)
    np.testing.assert_allclose(y64, ref.layernorm(x.astype(np.float64), gamma, beta, 1), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(y32, y64, rtol=1e-5, atol=1e-5)
    out32 = [np.empty_like(x), np.empty(d, np.float32), np.empty(d, np.float32)]
    out64 = [np.empty(x.shape), np.empty(d), np.empty(d)]
    layernorm_backward_cpu(x, gamma, dy, *out32)
    layernorm_backward_cpu(x.astype(np.float64), gamma.astype(np.float64), dy.astype(np.float64), *out64)
    np.testing.assert_allclose(out64[2], dy.astype(np.float64).sum(0), rtol=1e-10)
    for a, b in zip(out32, out64, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())
