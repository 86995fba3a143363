"""Embedding, dropout, element-wise, reduction and data-movement kernels."""

import numpy as np
import pytest

from kernels import reference as ref
from kernels.dropout import dropout_backward_cpu, dropout_forward_cpu, dropout_key, dropout_mask_cpu
from kernels.elementwise import (
    BINARY,
    CLIP,
    UNARY,
    ZERO_GRAD_UNARY,
    binary_backward_cpu,
    binary_forward_cpu,
    sum_to_shape,
    unary_backward_cpu,
    unary_forward_cpu,
)
from kernels.embedding import embedding_backward_cpu, embedding_forward_cpu
from kernels.reduce import REDUCE, kept_shape, normalize_axes, reduce_backward_cpu, reduce_forward_cpu
from kernels.shape import (
    concat_backward_cpu,
    concat_forward_cpu,
    copy_backward_cpu,
    copy_forward_cpu,
    transpose_backward_cpu,
    transpose_forward_cpu,
)

rng = np.random.default_rng(4)


def test_embedding_gather_and_scatter_add():
    table = rng.standard_normal((7, 3)).astype(np.float32)
    ids = np.array([[1, 6, 1], [0, 2, 1]])
    y = np.empty((2, 3, 3), np.float32)
    assert embedding_forward_cpu(ids, table, y) == -1
    np.testing.assert_array_equal(y, ref.embedding(ids, table))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dt = np.full_like(table, np.nan)
    embedding_backward_cpu(ids, dy, dt)
    np.testing.assert_allclose(dt, ref.embedding_grad(ids, dy, 7), rtol=1e-6)
    embedding_backward_cpu(ids, dy, dt, accumulate=True)
    np.testing.assert_allclose(dt, 2 * ref.embedding_grad(ids, dy, 7), rtol=1e-6)
    assert embedding_forward_cpu(np.array([3.0, 9.0]), table, np.empty((2, 3), np.float32)) == 1


def test_dropout_mask_is_independent_of_the_split():
    key = dropout_key(seed=5, step=3, op_seed=11)
    whole = np.empty((10, 4, 3), np.uint8)
    dropout_mask_cpu(whole, 0.4, key, 0)
    pieces = [np.empty((n, 4, 3), np.uint8) for n in (3, 3, 4)]
    off = 0
    for p in pieces:
        dropout_mask_cpu(p, 0.4, key, off)
        off += p.shape[0]
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    for s, e in [(0, 0), (4, 7), (9, 11)]:
        assert bool(whole.reshape(10, -1)[s, e]) == ref.dropout_keep(key, s, e, 0.4)
    other = np.empty_like(whole)
    dropout_mask_cpu(other, 0.4, dropout_key(5, 4, 11), 0)
    assert (other != whole).any()


def test_dropout_rate_scale_and_backward():
    x = np.ones((64, 500), np.float32)
    y, mask = np.empty_like(x), np.empty(x.shape, np.uint8)
    dropout_forward_cpu(x, y, mask, 0.25, dropout_key(1, 0, 0), 0)
    assert abs(mask.mean() - 0.75) < 0.01
    np.testing.assert_allclose(np.unique(y), [0, 1 / 0.75], rtol=1e-6)
    dx = np.empty_like(x)
    dropout_backward_cpu(x, mask, dx, 0.25)
    np.testing.assert_array_equal(dx, y)


def test_dropout_noise_shape_broadcasts():
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    y, mask = np.empty_like(x), np.empty((4, 1, 5), np.uint8)
    dropout_forward_cpu(x, y, mask, 0.5, dropout_key(2, 0, 0), 0)
    np.testing.assert_allclose(y, x * mask * 2, rtol=1e-6)


SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((2, 3), ())]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary(name, sa, sb):
    a = rng.uniform(0.5, 2.0, sa)
    b = rng.uniform(0.5, 2.0, sb) + 0.01
    f = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
         "maximum": np.maximum, "minimum": np.minimum, "power": np.power}[name]
    y = np.empty(np.broadcast_shapes(sa, sb))
    binary_forward_cpu(BINARY[name], a, b, y)
    np.testing.assert_allclose(y, f(a, b))
    dy = rng.standard_normal(y.shape)
    da, db = np.empty(sa), np.empty(sb)
    binary_backward_cpu(BINARY[name], a, b, y, dy, da, db)
    np.testing.assert_allclose(da, ref.numerical_grad(lambda v: f(v, b), a, dy), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(db, ref.numerical_grad(lambda v: f(a, v), b, dy), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", [n for n in UNARY if UNARY[n] not in ZERO_GRAD_UNARY])
def test_unary(name):
    x = rng.uniform(0.2, 2.0, (3, 4)) * np.array([1, -1, 1, 1])
    if name in ("sqrt", "log", "rsqrt", "log1p"):
        x = np.abs(x)
    lo, hi = -0.5, 1.0
    y = np.empty_like(x)
    unary_forward_cpu(UNARY[name], x, y, lo, hi)
    f = {"clip": lambda v: np.clip(v, lo, hi), "rsqrt": lambda v: 1 / np.sqrt(v), "identity": lambda v: v,
         "round": np.rint}.get(name) or getattr(np, name)
    np.testing.assert_allclose(y, f(x))
    dy = rng.standard_normal(x.shape)
    dx = np.empty_like(x)
    unary_backward_cpu(UNARY[name], x, y, dy, dx, lo, hi)
    np.testing.assert_allclose(dx, ref.numerical_grad(f, x, dy), rtol=1e-6, atol=1e-7)
    assert UNARY[name] != CLIP or (dx[x > hi] == 0).all()


def test_zero_grad_unary_and_sum_to_shape():
    dx = np.ones(3)
    unary_backward_cpu(UNARY["floor"], dx, dx, dx, dx)
    np.testing.assert_array_equal(dx, 0)
    np.testing.assert_array_equal(sum_to_shape(np.ones((2, 3, 4)), (3, 1)), np.full((3, 1), 8.0))


@pytest.mark.parametrize("name", list(REDUCE))
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reduce(name, axis):
    x = rng.standard_normal((2, 3, 4))
    if name in ("max", "min"):
        x[0, 0, :2] = x[0, 0, 2:].max() + 1 if name == "max" else x[0, 0, 2:].min() - 1  # ties
    axes = normalize_axes(axis, 3)
    f = getattr(np, name)
    want = f(x, axis=axes, keepdims=True)
    y = np.empty(want.shape)
    reduce_forward_cpu(REDUCE[name], x, axes, y)
    np.testing.assert_allclose(y, want)
    dy = rng.standard_normal(kept_shape(x.shape, axes))
    dx = np.empty_like(x)
    reduce_backward_cpu(REDUCE[name], x, y, axes, dy, dx)
    if name in ("sum", "mean"):
        np.testing.assert_allclose(dx, ref.numerical_grad(lambda v: f(v, axis=axes, keepdims=True), x, dy))
    else:
        hit = x == want
        np.testing.assert_allclose(dx, hit * dy / hit.sum(axis=axes, keepdims=True))


def test_data_movement():
    x = rng.standard_normal((2, 3, 4))
    y = np.empty((2, 12))
    copy_forward_cpu(x, y)
    np.testing.assert_array_equal(y, x.reshape(2, 12))
    dx = np.empty_like(x)
    copy_backward_cpu(y, dx)
    np.testing.assert_array_equal(dx, x)
    t = np.empty((4, 2, 3))
    transpose_forward_cpu(x, (2, 0, 1), t)
    np.testing.assert_array_equal(t, x.transpose(2, 0, 1))
    transpose_backward_cpu(t, (2, 0, 1), dx)
    np.testing.assert_array_equal(dx, x)
    a, b = rng.standard_normal((2, 2)), rng.standard_normal((2, 3))
    c = np.empty((2, 5))
    concat_forward_cpu([a, b], -1, c)
    np.testing.assert_array_equal(c, np.concatenate([a, b], -1))
    db = np.zeros((2, 3))
    concat_backward_cpu(c, -1, [2, 3], [None, db], (False, True))
    np.testing.assert_array_equal(db, b)


def test_a_division_by_zero_gives_ieee_values_without_a_warning():
    import warnings

    from kernels.elementwise import DIVIDE, binary_forward_cpu

    a, b = np.array([1.0, 0.0, -1.0], np.float32), np.zeros(3, np.float32)
    y = np.empty(3, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as TensorFlow: inf and nan, no RuntimeWarning
        binary_forward_cpu(DIVIDE, a, b, y)
    np.testing.assert_array_equal(y, [np.inf, np.nan, -np.inf])
