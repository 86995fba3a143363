"""The keras.ops array ops (kernels/array_ops.py) with backend "cuda" against backend "cpu", tiny shapes."""

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
from tests.flexflow_keras.ops.cuda.test_ops_cuda import check_cuda, r

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
]


@pytest.mark.parametrize("case", range(len(CASES)), ids=[type(c[0]).__name__ for c in CASES])
def test_array_op_cuda_matches_cpu(case):
    op, inputs, grad = CASES[case]
    check_cuda(op, inputs, grad=grad)
