"""`_conv_simd.simd_gemm` packs each chunk of B's column panels from PACK_MIN_ROWS rows of C whose B rows
lie a multiple of PACK_STRIDE apart: the packed
GEMM gives the unpacked one's values bit for bit (same products, same order), for every panel width, a
reduction over several chunks, A transposed or not, B rows wider than n, and accumulation."""

import numpy as np
import pytest

from kernels import _conv_simd as S

M = S.PACK_MIN_ROWS


@pytest.mark.skipif(not S.ENABLED, reason="the vector micro-kernels need AVX-512 and FMA")
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("n, k, ldb", [(80, 2 * S.KC + 37, S.PACK_STRIDE), (48, 40, 2 * S.PACK_STRIDE),
                                       (64, 300, 1024), (16, 5, 3 * S.PACK_STRIDE), (48, 40, 48)])
def test_packed_rows_equal_unpacked(trans_a, accumulate, n, k, ldb):
    rng = np.random.default_rng(n + k)
    m = M + 5
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    wide = rng.standard_normal((k, ldb)).astype(np.float32)  # B is its first n columns, rows ldb apart
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    lda = m if trans_a else k

    packed = c0.copy()
    S.simd_gemm(trans_a, m, n, k, a, lda, wide, ldb, accumulate, packed, n)
    unpacked = c0.copy()  # its first M - 1 rows, through the same A rows: below PACK_MIN_ROWS, B in place
    first = a[:, :M - 1] if trans_a else a[:M - 1]
    S.simd_gemm(trans_a, M - 1, n, k, np.ascontiguousarray(first), M - 1 if trans_a else k, wide, ldb,
                accumulate, unpacked[:M - 1], n)
    assert np.array_equal(packed[:M - 1], unpacked[:M - 1])
    want = (a.T if trans_a else a).astype(np.float64) @ wide[:, :n].astype(np.float64)
    if accumulate:
        want += c0
    tol = 1e-5 * np.sqrt(k) * 4
    np.testing.assert_allclose(packed, want, rtol=tol, atol=tol)
