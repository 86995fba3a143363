"""The BLAS binding used inside the Numba conv drivers, and its plain-loop fallback, against NumPy."""

import numpy as np
import pytest
from numba import njit

from kernels import _conv_blas as B


@njit(cache=False)
def _call(ta, tb, m, n, k, a, b, c, beta):
    B.gemm(ta, tb, m, n, k, 1.5, a, a.shape[1], b, b.shape[1], beta, c, c.shape[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_and_fallback_match_numpy(dtype, ta, tb):
    rng = np.random.default_rng(0)
    m, n, k = 7, 5, 9
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    c0 = rng.standard_normal((m, n)).astype(dtype)
    want = 1.5 * (a.T if ta else a) @ (b.T if tb else b) + 0.5 * c0
    c = c0.copy()
    _call(ta, tb, m, n, k, a, b, c, 0.5)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    c = c0.copy()
    B.gemm_loops(ta, tb, m, n, k, 1.5, a, a.shape[1], b, b.shape[1], 0.5, c, n)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    c = np.full((m, n), np.nan, dtype)
    B.gemm_loops(ta, tb, m, n, k, 1.5, a, a.shape[1], b, b.shape[1], 0.0, c, n)  # beta 0 ignores NaN in C
    np.testing.assert_allclose(c, want - 0.5 * c0, rtol=1e-5, atol=1e-5)


def test_numpy_wheel_blas_is_found():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    libs = [i for i in threadpoolctl.threadpool_info() if i.get("prefix") == "libscipy_openblas"]
    if not libs:
        pytest.skip("NumPy is not the PyPI wheel build with scipy-openblas")
    assert B.AVAILABLE, f"NumPy's ILP64 CBLAS in {libs[0]['filepath']} was not found; conv2d would be slow"
    B.check()
