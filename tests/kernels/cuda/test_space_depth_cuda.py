"""kernels/gpu/space_depth.py against the CPU kernels (run under the CUDA simulator by test_kernels_cuda_sim)."""

import numpy as np
import pytest
from cuda_harness import run_pair

from kernels import space_depth as K

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize(("deep", "b"), [((2, 2, 3, 8), 2), ((1, 1, 2, 9), 3)])
def test_rearrangements_match_cpu(deep, b, accumulate):
    n, h, w, d = deep
    wide = (n, h * b, w * b, d // (b * b))
    x_deep = RNG.standard_normal(deep).astype(np.float32)
    x_wide = RNG.standard_normal(wide).astype(np.float32)
    run_pair(K.depth_to_space_cpu, K.depth_to_space_cuda,
             lambda: [x_deep.copy(), np.ones(wide, np.float32), b, accumulate])
    run_pair(K.space_to_depth_cpu, K.space_to_depth_cuda,
             lambda: [x_wide.copy(), np.ones(deep, np.float32), b, accumulate])
