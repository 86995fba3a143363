"""keras.ops' NumPy-like functions: eager results against NumPy, symbolic shapes and errors, and each new
graph op forward and backward against a float64 reference and central differences (`check_op`)."""

from __future__ import annotations

import numpy as np
import pytest

from flexflow_keras import ops
from flexflow_keras import random as krandom
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import Input
from flexflow_keras.ops.array_ops import (
    ArgReduceOp,
    BroadcastToOp,
    CumsumOp,
    GatherOp,
    IndexOp,
    OneHotOp,
    ProdOp,
    RepeatOp,
    TakeAlongAxisOp,
    TileOp,
    TopKOp,
)
from flexflow_keras.ops.base import KernelContext
from flexflow_keras.ops.einsum_op import EinsumOp
from flexflow_keras.ops.random_ops import FillOp, RandomOp
from tests.flexflow_keras.ops.op_harness import check_op

rng = np.random.default_rng(7)


def f64(*shape):
    return rng.standard_normal(shape)


X = rng.standard_normal((3, 5)).astype(np.float32)

EAGER = [
    (lambda: ops.ones((2, 3)), lambda: np.ones((2, 3))),
    (lambda: ops.full((2,), 7.0), lambda: np.full((2,), 7.0)),
    (lambda: ops.zeros_like(X), lambda: np.zeros_like(X)),
    (lambda: ops.arange(1, 7, 2), lambda: np.arange(1, 7, 2)),
    (lambda: ops.one_hot(np.array([0, 2, 5]), 3), lambda: np.eye(3)[[0, 2]].tolist() + [[0, 0, 0]]),
    (lambda: ops.argmax(X, axis=-1), lambda: X.argmax(-1)),
    (lambda: ops.argmin(X, axis=0), lambda: X.argmin(0)),
    (lambda: ops.take(X, [4, 0, 4], axis=1), lambda: X[:, [4, 0, 4]]),
    (lambda: ops.take_along_axis(X, np.array([[1], [0], [3]]), 1), lambda: X[[0, 1, 2], [1, 0, 3]][:, None]),
    (lambda: ops.get_item(X, (slice(None), slice(1, None, 2))), lambda: X[:, 1::2]),
    (lambda: ops.tile(X, (2, 1)), lambda: np.tile(X, (2, 1))),
    (lambda: ops.repeat(X, 3, axis=1), lambda: np.repeat(X, 3, axis=1)),
    (lambda: ops.broadcast_to(X[:1], (4, 5)), lambda: np.broadcast_to(X[:1], (4, 5))),
    (lambda: ops.stack([X, X], axis=1), lambda: np.stack([X, X], 1)),
    (lambda: ops.split(X, [1, 4], axis=1)[1], lambda: X[:, 1:4]),
    (lambda: ops.prod(X, axis=1), lambda: X.prod(1)),
    (lambda: ops.var(X, axis=1), lambda: X.var(1)),
    (lambda: ops.std(X), lambda: X.std()),
    (lambda: ops.logsumexp(X, axis=1), lambda: np.log(np.exp(X.astype(np.float64)).sum(1))),
    (lambda: ops.norm(X, axis=1), lambda: np.linalg.norm(X, axis=1)),
    (lambda: ops.norm(X, ord=1, axis=1), lambda: np.abs(X).sum(1)),
    (lambda: ops.cumsum(X, axis=1), lambda: np.cumsum(X, 1)),
    (lambda: ops.einsum("ij,kj->ik", X, X), lambda: X @ X.T),
    (lambda: ops.dot(X, X.T), lambda: X @ X.T),
    (lambda: ops.top_k(X, 2)[0], lambda: -np.sort(-X, axis=1)[:, :2]),
    (lambda: ops.in_top_k(np.array([0, 1, 2]), X, 2), lambda: np.array(
        [(X[i] > X[i, t]).sum() < 2 for i, t in enumerate([0, 1, 2])])),
    (lambda: ops.clip(X, -0.5, 0.5), lambda: np.clip(X, -0.5, 0.5)),
    (lambda: ops.sum([X, X]), lambda: 2 * X.sum()),
    (lambda: ops.where(X > 0, X, 0.0), lambda: np.where(X > 0, X, 0.0)),
    (lambda: ops.convert_to_numpy(ops.convert_to_tensor([1.0, 2.0])), lambda: np.array([1.0, 2.0])),
    (lambda: ops.sort(X), lambda: np.sort(X)),
    (lambda: ops.argsort(X[0]), lambda: np.argsort(X[0])),
    (lambda: ops.any(X > 1, axis=1), lambda: (X > 1).any(1)),
    (lambda: ops.all(X > -3), lambda: (X > -3).all()),
    (lambda: ops.triu(X, 1), lambda: np.triu(X, 1)),
    (lambda: ops.tril(X), lambda: np.tril(X)),
    (lambda: ops.mod(X, 0.7), lambda: np.mod(X, 0.7)),
    (lambda: ops.floor_divide(X, 0.7), lambda: np.floor_divide(X, 0.7)),
    (lambda: ops.pad(X, [(1, 0), (0, 2)]), lambda: np.pad(X, [(1, 0), (0, 2)])),
    (lambda: ops.count_nonzero(X > 0, axis=1), lambda: (X > 0).sum(1)),
    (lambda: ops.isnan(np.array([np.nan, 1.0])), lambda: np.array([True, False])),
    (lambda: ops.average(X, axis=1, weights=np.arange(5.0)), lambda: np.average(X, axis=1, weights=np.arange(5.0))),
    (lambda: ops.moments(X, axes=[1])[1], lambda: X.var(1)),
]


@pytest.mark.parametrize("case", range(len(EAGER)))
def test_eager_matches_numpy(case):
    got, want = EAGER[case]
    np.testing.assert_allclose(np.asarray(got(), np.float64), np.asarray(want(), np.float64), rtol=1e-5, atol=1e-6)


def test_symbolic_shapes_and_batch_rules():
    x = Input((4, 6))
    assert x[:, 1:3].shape == (None, 2, 6) and x[..., 0].shape == (None, 4)
    assert ops.take(x, [0, 2], axis=2).shape == (None, 4, 2)
    assert ops.one_hot(ops.argmax(x, -1), 6).shape == (None, 4, 6)
    assert ops.tile(x, (1, 2, 1)).shape == (None, 8, 6) and ops.repeat(x, 2, axis=2).shape == (None, 4, 12)
    assert ops.einsum("bij,jk->bik", x, np.ones((6, 3))).shape == (None, 4, 3)
    assert [t.shape for t in ops.top_k(x, 2)] == [(None, 4, 2), (None, 4, 2)]
    b = ops.shape(x)[0]
    assert repr(b) == "None" and ops.zeros((b, 3)).shape == (None, 3)
    assert ops.reshape(x, (b, -1)).shape == (None, 24) and ops.cast(b, "float32").shape == ()
    assert krandom.normal((b, 2)).shape == (None, 2) and ops.ones_like(x).shape == (None, 4, 6)
    assert ops.sort(x).shape == (None, 4, 6) and ops.tril(x).shape == (None, 4, 6)
    assert ops.pad(x, [(0, 0), (1, 1), (0, 2)]).shape == (None, 6, 8) and (x % 2).shape == (None, 4, 6)
    assert (~((x > 0) & (x < 1) | (x > 2))).dtype == "bool"
    for bad in (lambda: x[0], lambda: ops.take(x, [0], axis=0), lambda: ops.tile(x, (2, 1, 1)),
                lambda: ops.cumsum(x, axis=0), lambda: krandom.shuffle(x, axis=0)):
        with pytest.raises(ShapeError, match="batch"):
            bad()


def test_only_the_first_unknown_dim_is_the_batch():
    shape = ops.shape(Input((None, 3)))
    assert repr(shape[0]) == "None" and repr(shape[1]) == "None" and shape[2] == 3
    with pytest.raises(TypeError, match="left open by its Input"):  # a length for ops (dynamic_dims.py), not ints
        int(shape[1])
    with pytest.raises(ShapeError, match="known per-sample dims"):
        Input((None, 3))[:, 1:]


def test_int_index_of_a_batch_size_needs_ops():
    with pytest.raises(TypeError, match="batch size"):
        range(ops.shape(Input((2,)))[0])


OPS = [
    (IndexOp(((None, None, None), (1, None, 2))), [f64(3, 5)], lambda x: x[:, 1::2]),
    (IndexOp(((None, None, None), 2, None)), [f64(3, 4, 2)], lambda x: x[:, 2, None]),
    (GatherOp(1), [f64(3, 4), np.array([3, 0, 3, -1])], lambda x, i: x[:, i]),
    (GatherOp(0), [f64(5, 2), np.array([[1, 1], [4, 0]])], lambda x, i: x[i]),
    (TakeAlongAxisOp(1), [f64(3, 4), np.array([[0, 3], [1, 1], [2, 0]])],
     lambda x, i: np.take_along_axis(x, i, 1)),
    (TileOp((1, 3)), [f64(2, 3)], lambda x: np.tile(x, (1, 3))),
    (RepeatOp(2, 1), [f64(2, 3)], lambda x: np.repeat(x, 2, 1)),
    (BroadcastToOp((None, 3, 4)), [f64(2, 1, 4)], lambda x: np.broadcast_to(x, (2, 3, 4))),
    (CumsumOp(1), [f64(2, 5)], lambda x: np.cumsum(x, 1)),
    (CumsumOp(1, True), [f64(2, 5)], lambda x: np.flip(np.cumsum(np.flip(x, 1), 1), 1)),
    (ProdOp((1,)), [f64(3, 4)], lambda x: x.prod(1)),
    (ProdOp((1,), True), [np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5]])], lambda x: x.prod(1, keepdims=True)),
    (TopKOp(2), [f64(3, 5)], lambda x: (-np.sort(-x, 1)[:, :2], np.argsort(-x, 1)[:, :2])),
    (EinsumOp("bi,ij->bj"), [f64(3, 4), f64(4, 2)], lambda a, b: a @ b),
    (EinsumOp("bij,bj->bi"), [f64(2, 3, 4), f64(2, 4)], lambda a, b: np.einsum("bij,bj->bi", a, b)),
    (EinsumOp("bi->b"), [f64(3, 4)], lambda a: a.sum(1)),
    (EinsumOp("bi,j->bij"), [f64(2, 3), f64(4)], lambda a, b: a[:, :, None] * b),
]


@pytest.mark.parametrize("case", range(len(OPS)), ids=[type(o).__name__ for o, _, _ in OPS])
def test_op_forward_backward(case):
    op, inputs, ref = OPS[case]
    check_op(op, inputs, ref=ref)


def test_ops_without_gradient():
    x = f64(3, 4)
    check_op(ArgReduceOp("argmax", 1), [x], ref=lambda v: v.argmax(1).astype(np.int32), grad=False)
    check_op(OneHotOp(4, -1, "float64"), [np.array([0, 3, 9])], ref=lambda i: np.array(
        [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]], np.float64), grad=False)
    check_op(FillOp((None, 2), 3.0, "float64"), [x], ref=lambda v: np.full((3, 2), 3.0), grad=False)


def _draw(op, batch, offset=0, step=0, seed=1):
    out = np.empty((batch,) + tuple(op.shape[1:]), op.dtype)
    op.forward(KernelContext(step=step, seed=seed, batch_offset=offset), [np.zeros((batch, 1))], [], [out], [], [])
    return out


def test_random_op_is_fresh_per_step_and_split_invariant():
    op = RandomOp("normal", (None, 500), (1.0, 2.0), "float64", seed=5)
    whole = _draw(op, 6)
    np.testing.assert_array_equal(np.concatenate([_draw(op, 2), _draw(op, 4, offset=2)]), whole)
    assert not np.allclose(_draw(op, 6, step=1), whole)
    assert abs(whole.mean() - 1.0) < 0.1 and abs(whole.std() - 2.0) < 0.1
    fixed = RandomOp("uniform", (None, 50), (2.0, 3.0), "float64", seed=5, fixed=True)
    np.testing.assert_array_equal(_draw(fixed, 2, step=0), _draw(fixed, 2, step=9))
    u = _draw(fixed, 100)
    assert u.min() >= 2.0 and u.max() < 3.0


def test_keras_random_eager():
    np.testing.assert_array_equal(krandom.normal((2, 3), seed=4), krandom.normal((2, 3), seed=4))
    g = krandom.SeedGenerator(3)
    a, b = krandom.uniform((100,), seed=g), krandom.uniform((100,), seed=g)
    assert not np.allclose(a, b) and 0 <= a.min() and a.max() < 1
    r = krandom.randint((1000,), 2, 5, seed=g)
    assert r.dtype == np.int32 and set(np.unique(r)) == {2, 3, 4}
    t = krandom.truncated_normal((2000,), seed=g)
    assert np.abs(t).max() <= 2.0 and 0.7 < t.std() < 1.0
    d = krandom.dropout(np.ones((50, 40), np.float32), 0.5, seed=1)
    assert set(np.unique(d)) == {0.0, 2.0} and 0.4 < (d == 0).mean() < 0.6
    assert sorted(krandom.shuffle(np.arange(10), seed=2).tolist()) == list(range(10))
