"""SegmentReduceOp with backend "cuda" (kernels/gpu/segment.py: atomic folds, per-column products) against
backend "cpu": every mode, ties and zeros, dropped negative ids, empty segments, rows that fill more than
one block (the simulator runs 32 threads per block)."""

import numpy as np
import pytest

from flexflow_keras.ops.segment import SegmentReduceOp
from tests.flexflow_keras.ops.cuda.test_ops_cuda import check_cuda

rng = np.random.default_rng(7)
X = np.round(rng.standard_normal((13, 3)), 1)  # rounded: ties for max / min
X[::4, 0] = 0.0  # zeros for prod's gradient
IDS = rng.integers(-1, 5, 13)  # one segment of 6 stays empty


@pytest.mark.parametrize("fn", ["sum", "mean", "sqrt_n", "max", "min", "prod"])
def test_segment_cuda_matches_cpu(fn):
    check_cuda(SegmentReduceOp(fn, 6), [X, IDS])


def test_segment_cuda_float32_sorted_rule_and_bad_id():
    check_cuda(SegmentReduceOp("max", 6, empty_zero=True), [X.astype("float32"), IDS.astype("int32")], rtol=1e-6, atol=1e-6)
    check_cuda(SegmentReduceOp("mean", 3), [X.reshape(13, 3, 1).astype("float32"), (IDS % 3).astype("int32")], rtol=1e-6, atol=1e-6)
    from numba import cuda

    from kernels.segment import segment_forward_cuda

    y = cuda.to_device(np.zeros((2, 3)))
    assert segment_forward_cuda("sum", cuda.to_device(X[:3]), cuda.to_device(np.array([0, 1, 2])), y) == 2


def test_segment_cuda_mean_of_integer_data_is_float64():
    # integer data is averaged in float64, as TensorFlow's unsorted_segment_mean (a cast kernel first)
    check_cuda(SegmentReduceOp("mean", 6), [rng.integers(-5, 5, (13, 3)), IDS], grad=False)
