"""The vector GEMM micro-kernels of the Winograd convolution against NumPy float64, and the Winograd conv2d
with them on and off against the float64 reference."""

import numpy as np
import pytest
from numba import njit

from kernels import _conv_simd as S
from kernels import conv2d as K


@njit(cache=False)
def _call(simd, ta, m, n, k, a, b, acc, c):
    S.gemm(simd, ta, m, n, k, a, a.shape[1], b, b.shape[1], acc, c, c.shape[1])


# (m, n, k): every column-panel width (16, 32, 48, 64, 80 = 64 + 16) and row blocks with remainders; a
# reduction of several chunks of S.KC rows with a partial last one (a Dense layer's 9216 inputs, cut)
SHAPES = [(576, 64, 32), (37, 48, 5), (13, 16, 7), (32, 64, 300), (29, 32, 64), (1, 80, 3), (27, 16, 9),
          (19, 128, 2 * S.KC + 37), (7, 16, S.KC)]


@pytest.mark.parametrize("simd", [True, False, None])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_gemm_matches_numpy(m, n, k, trans_a, simd):
    rng = np.random.default_rng(m * 1000 + n + k)
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    prod = (a.T if trans_a else a).astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 * np.sqrt(k) * 4
    c = np.full((m, n), np.nan, np.float32)  # overwrite ignores what C held
    _call(simd, trans_a, m, n, k, a, b, False, c)
    np.testing.assert_allclose(c, prod, rtol=tol, atol=tol)
    c = c0.copy()
    _call(simd, trans_a, m, n, k, a, b, True, c)
    np.testing.assert_allclose(c, prod + c0, rtol=tol, atol=tol)


def test_gemm_leaves_columns_past_n_alone():
    """C with a row stride wider than n: only its first n columns of each row are written."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((10, 4)).astype(np.float32)
    b = rng.standard_normal((4, 32)).astype(np.float32)
    c = np.full((10, 40), 7.0, np.float32)
    S.simd_gemm(False, 10, 32, 4, a, 4, b, 32, False, c[:, :32], 40)
    np.testing.assert_allclose(c[:, :32], a @ b, rtol=1e-5, atol=1e-5)
    assert (c[:, 32:] == 7.0).all()


@pytest.mark.parametrize("algorithm", ["winograd", "winograd4"])
@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("geometry", [(2, 9, 8, 32, 48, "valid"), (3, 7, 6, 16, 16, "same")])
def test_winograd_with_and_without_simd_matches_reference(monkeypatch, geometry, simd, algorithm):
    monkeypatch.setattr(S, "ENABLED", simd)
    n, h, w, c, co, padding = geometry
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    k = (rng.standard_normal((3, 3, c, co)) / np.sqrt(9 * c)).astype(np.float32)
    b = rng.standard_normal(co).astype(np.float32) * 0.1
    g = K.conv_geometry(x.shape, k.shape, padding=padding)
    y = np.empty((n, g.oh, g.ow, co), np.float32)
    K.conv2d_forward_cpu(x, k, b, y, padding=padding, activation="relu", algorithm=algorithm)
    want = np.maximum(K.conv2d_reference(x, k, b, padding=padding), 0.0)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    gy = rng.standard_normal(y.shape).astype(np.float32)
    gx, gk, gb = np.empty_like(x), np.empty_like(k), np.empty_like(b)
    K.conv2d_backward_cpu(x, k, y, gy, gx, gk, gb, padding=padding, activation="relu", algorithm=algorithm)
    wx, wk, wb = K.conv2d_backward_reference(x, k, b, gy, padding=padding, activation="relu")
    np.testing.assert_allclose(gx, wx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gk, wk, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gb, wb, rtol=1e-4, atol=1e-3)


_PRUNED = """
import numpy as np
from numba import njit
from kernels import _conv_simd as S

@njit
def call(simd, a, b, c):
    S.gemm(simd, False, 4, 16, 8, a, 8, b, 16, False, c, 16)

a, b, c = np.ones((4, 8), np.float32), np.ones((8, 16), np.float32), np.zeros((4, 16), np.float32)
call(None, a, b, c)
assert (c == 8).all()
print(len(S.simd_gemm.signatures), len(S._panel.signatures))
"""


def test_no_simd_flag_leaves_the_micro_kernels_uncompiled(tmp_path):
    """`flag()` is None on a host without AVX-512: the micro-kernels' branch is pruned from every kernel
    that calls `gemm`, so they are never compiled there (they were: 12 s of the MNIST CNN's first run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", _PRUNED], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", "0"], out.stdout
    assert S.flag() is (True if S.ENABLED else None)
