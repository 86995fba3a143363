"""The ops of the misc layers (noise, alpha dropout, activity penalty, category encoding, the
MultiHeadAttention projection) forward and backward on float64 shapes against NumPy references."""

import math

import numpy as np
import pytest
from op_harness import check_op, run_backward, run_forward

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops.einsum_dense import ProjectionOp
from flexflow_keras.ops.encoding import CategoryEncodingOp
from flexflow_keras.ops.noise import ActivityRegularizationOp, AlphaDropoutOp, GaussianNoiseOp
from kernels import noise as knoise

rng = np.random.default_rng(5)


def r(*shape):
    return rng.standard_normal(shape)


def test_gaussian_noise_additive_and_multiplicative():
    x = r(64, 50)
    check_op(GaussianNoiseOp(0.5, 3), [x[:6, :5]], training=True, shards=3)
    check_op(GaussianNoiseOp(0.4, 3, True), [x[:6, :5]], training=True, shards=2)
    y = run_forward(GaussianNoiseOp(0.5, 3), [x], [], training=True)[0][0]
    noise = y - x
    assert abs(noise.mean()) < 0.03 and abs(noise.std() - 0.5) < 0.03
    check_op(GaussianNoiseOp(0.5, 3), [x[:4]], training=False, ref=lambda x: x)
    y = run_forward(GaussianNoiseOp(0.4, 3, True), [x], [], training=True)[0][0]
    factor = y / x
    assert abs(factor.mean() - 1) < 0.03 and abs(factor.std() - 0.4) < 0.03
    # another op seed, another draw; the same seed at the same step, the same draw
    a = run_forward(GaussianNoiseOp(1.0, 3), [x], [], training=True)[0][0]
    b = run_forward(GaussianNoiseOp(1.0, 4), [x], [], training=True)[0][0]
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(a, run_forward(GaussianNoiseOp(1.0, 3), [x], [], training=True)[0][0])


def test_alpha_dropout_statistics_and_gradient():
    x = r(80, 60)
    check_op(AlphaDropoutOp(0.2, 1), [x[:6, :5]], training=True, shards=2)
    y = run_forward(AlphaDropoutOp(0.2, 1), [x], [], training=True)[0][0]
    # SELU's fixed point: zero mean, unit variance inputs keep zero mean and unit variance
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05
    a, b, alpha_p = knoise.alpha_dropout_coefficients(0.2)
    dropped = np.isclose(y, a * alpha_p + b)
    assert 0.15 < dropped.mean() < 0.25
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b)
    check_op(AlphaDropoutOp(0.2, 1, (None, 1)), [x[:6]], training=True)  # one bit per sample
    check_op(AlphaDropoutOp(0.2, 1), [x[:4]], training=False, ref=lambda x: x)


def test_activity_regularization_adds_the_penalty_gradient():
    x, dy = r(4, 5), r(4, 5)
    op = ActivityRegularizationOp(0.1, 0.3)
    outs, saved, stats, _ = run_forward(op, [x], [], training=True)
    np.testing.assert_array_equal(outs[0], x)
    (gx,), _ = run_backward(op, [x], [], outs, saved, stats, [dy], training=True)
    np.testing.assert_allclose(gx, dy + (0.1 * np.sign(x) + 2 * 0.3 * x) / 4)
    check_op(ActivityRegularizationOp(), [x], ref=lambda x: x)
    with pytest.raises(ValueError, match="l1, l2 >= 0"):
        ActivityRegularizationOp(-1.0)


def _encode_ref(ids, n, mode):
    if mode == "one_hot":
        ids = ids[..., 0] if ids.ndim > 1 and ids.shape[-1] == 1 else ids
        return np.eye(n)[ids].astype(np.float32)
    out = np.zeros(ids.shape[:-1] + (n,), np.float32)
    for idx in np.ndindex(ids.shape[:-1]):
        for v in ids[idx]:
            out[idx + (v,)] = 1 if mode == "multi_hot" else out[idx + (v,)] + 1
    return out


@pytest.mark.parametrize("mode,shape", [("one_hot", (5, 1)), ("one_hot", (3, 4)), ("multi_hot", (5, 3)),
                                        ("count", (5, 3)), ("count", (2, 3, 4))])
def test_category_encoding(mode, shape):
    ids = rng.integers(0, 6, shape)
    check_op(CategoryEncodingOp(6, mode), [ids], ref=lambda i: _encode_ref(i, 6, mode))


def test_category_encoding_errors():
    with pytest.raises(ValueError, match=r"id 7 at flat position 1 .* outside \[0, 6\)"):
        run_forward(CategoryEncodingOp(6, "count"), [np.array([[1, 7]])], [])
    with pytest.raises(ShapeError, match="rank >= 2"):
        run_forward(CategoryEncodingOp(6, "count"), [np.array([1, 2])], [])


@pytest.mark.parametrize("n_contract,xshape,kshape", [(1, (3, 4, 5), (5, 2, 3)), (2, (3, 4, 2, 3), (2, 3, 5)),
                                                      (1, (4, 5), (5, 6))])
def test_projection(n_contract, xshape, kshape):
    x, k = r(*xshape), r(*kshape)
    b = r(*kshape[n_contract:])
    check_op(ProjectionOp(n_contract), [x, ], [k, b], ref=lambda x, k, b: np.tensordot(x, k, n_contract) + b,
             shards=2)
    check_op(ProjectionOp(n_contract), [x], [k], ref=lambda x, k: np.tensordot(x, k, n_contract))
    assert math.prod(kshape) == k.size
    with pytest.raises(ShapeError, match="contracts the last"):
        run_forward(ProjectionOp(n_contract), [r(3, 7)], [k])


def test_projection_roofline_counts_the_contracted_dims():
    from types import SimpleNamespace

    from flexflow_keras.ops import parallel as par
    from flexflow_keras.search import roofline

    # (4, 5, 2, 3) x (2, 3, 7): 4 * 5 * 7 outputs, each a sum over 2 * 3 products
    tile = par.Tile((((0, 0, 0, 0), (4, 5, 2, 3)),), (((0, 0, 0), (2, 3, 7)),), (((0, 0, 0), (4, 5, 7)),))
    flops, bwd, _, _, fam = roofline.work(SimpleNamespace(op=ProjectionOp(2)), tile)
    assert (flops, bwd, fam) == (2.0 * 4 * 5 * 7 * 6, 4.0 * 4 * 5 * 7 * 6, "gemm")
