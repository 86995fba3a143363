"""The row-masked helpers of masked BatchNormalization (kernels.masked_rows) on CUDA against their CPU
twins, under NUMBA_ENABLE_CUDASIM=1 (or on a GPU)."""

import numpy as np
import pytest
from cuda_harness import run_pair  # noqa: I001 - test-local helper module

from kernels import masked_rows as kmr


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mask_rows_and_blend_rows_cuda(dtype):
    rng = np.random.default_rng(0)
    x, a = rng.standard_normal((2, 3, 4)).astype(dtype), rng.standard_normal((2, 3, 4)).astype(dtype)
    m = np.array([[1, 0, 1], [0, 0, 1]], dtype)
    run_pair(kmr.mask_rows_cpu, kmr.mask_rows_cuda, lambda: [x.copy(), m.copy(), np.zeros_like(x)])
    for acc in (False, True):
        run_pair(kmr.blend_rows_cpu, kmr.blend_rows_cuda,
                 lambda acc=acc: [m.copy(), x.copy(), a.copy(), np.full_like(x, 0.5), acc])
