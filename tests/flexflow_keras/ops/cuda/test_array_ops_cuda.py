"""The keras.ops array ops (kernels/array_ops.py) with backend "cuda" (kernels/gpu/array_ops.py,
kernels/gpu/array_select.py) against backend "cpu": tiny shapes, and shapes that fill several blocks and end
in a partial one (the simulator runs 32 threads per block)."""

import numpy as np
import pytest

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
from flexflow_keras.ops.einsum_op import EinsumOp
from flexflow_keras.ops.random_ops import RandomOp
from kernels import array_ops as karr
from tests.flexflow_keras.ops.cuda.test_ops_cuda import check_cuda, r


def _ties(*shape):
    return np.round(r(*shape), 1)  # repeated values: tie rules of top_k and arg-reductions


def _with_zeros(*shape):
    x = r(*shape)
    x.reshape(-1)[::7] = 0.0  # exact zeros: prod's gradient without division
    return x

CASES = [
    (IndexOp(((None, None, None), (1, None, 2))), [r(3, 5)], True),
    (GatherOp(1), [r(3, 4), np.array([3, 0, 3])], True),
    (TakeAlongAxisOp(1), [r(3, 4), np.array([[0], [3], [1]])], True),
    (TileOp((1, 2)), [r(2, 3)], True),
    (RepeatOp(2, 1), [r(2, 3)], True),
    (BroadcastToOp((None, 3, 4)), [r(2, 1, 4)], True),
    (CumsumOp(1), [r(2, 5)], True),
    (ProdOp((1,)), [r(3, 4)], True),
    (TopKOp(2), [r(3, 5)], True),
    (EinsumOp("bi,ij->bj"), [r(3, 4), r(4, 2)], True),
    (ArgReduceOp("argmax", 1), [r(3, 4)], False),
    (OneHotOp(4), [np.array([0, 3, 7])], False),
    (RandomOp("normal", (None, 6), (0.0, 1.0), "float64", seed=3), [r(4, 1)], False),
    # several blocks, the last one partial
    (IndexOp(((None, None, None), 2, (None, None, -2))), [r(6, 4, 11)], True),
    (IndexOp(((None, None, None), None, (1, None, 2))), [r(5, 9)], True),
    (GatherOp(1), [r(5, 7, 3), np.array([[1, -1], [1, 6]])], True),
    (GatherOp(0), [r(9, 5), np.array([8, 0, 8, -3, 2, 2, 1])], True),
    (TakeAlongAxisOp(1), [r(5, 8, 3), np.array([[[7], [0], [7], [-2]]] * 5)], True),
    (TakeAlongAxisOp(-1), [r(5, 3, 9), np.random.default_rng(1).integers(-9, 9, (5, 3, 4)).astype(np.int32)], True),
    (TileOp((1, 3, 2)), [r(4, 3, 5)], True),
    (RepeatOp(3, 1), [r(4, 5, 2)], True),
    (BroadcastToOp((None, 3, 4, 5)), [r(4, 1, 4, 1)], True),
    (CumsumOp(1, reverse=True), [r(5, 7, 3)], True),
    (CumsumOp(2), [r(3, 4, 11)], True),
    (ProdOp((1, 2), keepdims=True), [_with_zeros(5, 3, 4)], True),
    (ProdOp((0,)), [_with_zeros(3, 37)], True),
    (TopKOp(3), [_ties(40, 9)], True),
    (ArgReduceOp("argmin", 1), [_ties(5, 9, 7)], False),
    (ArgReduceOp("argmax", 2, keepdims=True), [_ties(5, 9, 7)], False),
    (OneHotOp(5, axis=1), [np.random.default_rng(2).integers(-1, 7, (6, 7))], False),
    (RandomOp("uniform", (None, 9), (-2.0, 3.0), "float64", seed=4), [r(5, 1)], False),
    (RandomOp("randint", (None, 9), (2, 11), "int32", seed=5), [r(5, 1)], False),
    (RandomOp("truncated_normal", (None, 3, 3), (1.0, 2.0), "float64", seed=6), [r(5, 1)], False),
    (RandomOp("permutation", (None, 11), (0.0, 0.0), "int32", seed=7), [r(4, 1)], False),
]


@pytest.mark.parametrize("case", range(len(CASES)), ids=[type(c[0]).__name__ for c in CASES])
def test_array_op_cuda_matches_cpu(case):
    op, inputs, grad = CASES[case]
    check_cuda(op, inputs, grad=grad)


@pytest.mark.parametrize("dist", ["uniform", "randint", "normal", "truncated_normal"])
def test_float32_draws_match_cpu_and_a_batch_split(dist):
    """float32 draws (computed in float32 on the device) round to the CPU's float64 draws, and two halves of
    a batch drawn at their global offsets equal the whole batch."""
    from numba import cuda

    params = (2.0, 9.0) if dist == "randint" else (0.5, 1.5)
    want = np.zeros((10, 7), np.float32)
    karr.random_forward_cpu(dist, 0xDEADBEEFCAFEF00D, 3, params, want)
    whole = cuda.to_device(np.zeros((10, 7), np.float32))
    karr.random_forward_cuda(dist, 0xDEADBEEFCAFEF00D, 3, params, whole)
    np.testing.assert_allclose(whole.copy_to_host(), want, rtol=2e-6, atol=2e-6)
    halves = [cuda.to_device(np.zeros((5, 7), np.float32)) for _ in range(2)]
    for h, first in zip(halves, (3, 8), strict=True):
        karr.random_forward_cuda(dist, 0xDEADBEEFCAFEF00D, first, params, h)
    np.testing.assert_array_equal(np.concatenate([h.copy_to_host() for h in halves]), whole.copy_to_host())


def test_backward_overwrites_when_not_accumulating():
    """accumulate=False: the gradient buffer's old contents (here 7s) are replaced, as on the CPU."""
    from numba import cuda

    x, dy_index = r(5, 9), r(5, 3)
    idx = np.array([[0, 4], [4, -1]])
    take_idx = np.array([[8, 0, 8]] * 5)
    order = np.argsort(-x, axis=-1, kind="stable")[:, :3].astype(np.int32)
    cases = [
        ("index_backward", (dy_index, (slice(None), slice(1, 7, 2))), x.shape),
        ("gather_backward", (r(5, 2, 2), idx, 1), x.shape),
        ("take_along_backward", (r(5, 3), take_idx, 1), x.shape),
        ("top_k_backward", (r(5, 3), order), x.shape),
        ("tile_backward", (r(5, 18), (1, 2)), x.shape),
        ("repeat_backward", (r(5, 27), 3, 1), x.shape),
        ("cumsum_backward", (r(5, 9), 1, True), x.shape),
    ]
    for name, args, shape in cases:
        want = np.full(shape, 7.0)
        getattr(karr, f"{name}_cpu")(*args, want, accumulate=False)
        got = cuda.to_device(np.full(shape, 7.0))
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        getattr(karr, f"{name}_cuda")(*dev, got, accumulate=False)
        np.testing.assert_allclose(got.copy_to_host(), want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_empty_product_is_one():
    from numba import cuda

    y = cuda.to_device(np.zeros(4))
    karr.prod_forward_cuda(cuda.to_device(np.zeros((4, 0))), (1,), y)
    np.testing.assert_array_equal(y.copy_to_host(), np.ones(4))
