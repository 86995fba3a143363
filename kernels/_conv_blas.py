"""NumPy's own BLAS GEMM, callable from inside Numba code, so that a whole convolution (im2col, GEMMs and
epilogues over every chunk) runs as one `nogil` call.

Why: a kernel that returns to Python between chunks must take the GIL back each time; with the runtime's
other worker threads and its scheduler running Python, those hand-offs made the conv2d kernels 20-30%
slower in training than alone (measured: a thread running Python 20% of the time slowed MNIST's conv2
backward from 18.3 to 21.8 ms per 32-sample shard; a busy one, to 108 ms).

NumPy's wheels ship OpenBLAS built as ILP64 with a ``scipy_`` symbol prefix (`scipy_cblas_sgemm64_`);
the library is found through threadpoolctl (or next to NumPy) and made visible to Numba's JIT linker by
name, which keeps `cache=True` working (no function pointer is baked into cached code). Calling NumPy's
BLAS also means the thread limits the runtime sets with threadpoolctl apply. Where the symbols are not
found (another BLAS vendor), `AVAILABLE` is False and `gemm` falls back to a plain Numba loop nest:
correct everywhere, several times slower than BLAS.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os

import numpy as np
from numba import njit, types
from numba.extending import overload

log = logging.getLogger(__name__)

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # CBLAS enum values
_PREFIXES = ("scipy_cblas_", "cblas_")  # NumPy >= 2 wheels use the first; plain OpenBLAS ILP64 builds the second


def _candidates() -> list[str]:
    paths = []
    try:
        from threadpoolctl import threadpool_info

        paths = [i["filepath"] for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception as exc:  # threadpoolctl is optional; any failure falls back to the glob below
        log.debug("threadpoolctl could not list BLAS libraries: %s", exc)
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    return paths + sorted(glob.glob(os.path.join(libs, "*openblas*.so*")))


def _find() -> tuple[str, str] | None:
    """(library path, symbol prefix) of an ILP64 CBLAS with sgemm and dgemm, or None."""
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            if hasattr(lib, prefix + "sgemm64_") and hasattr(lib, prefix + "dgemm64_"):
                return path, prefix
    return None


_found = _find()
AVAILABLE = _found is not None
if AVAILABLE:
    import llvmlite.binding as _llvm

    _llvm.load_library_permanently(_found[0])
    _i32, _i64, _ptr = types.int32, types.int64, types.intp  # pointers travel as integers (same ABI)
    _sgemm = types.ExternalFunction(_found[1] + "sgemm64_", types.void(
        _i32, _i32, _i32, _i64, _i64, _i64, types.float32, _ptr, _i64, _ptr, _i64, types.float32, _ptr, _i64))
    _dgemm = types.ExternalFunction(_found[1] + "dgemm64_", types.void(
        _i32, _i32, _i32, _i64, _i64, _i64, types.float64, _ptr, _i64, _ptr, _i64, types.float64, _ptr, _i64))
    log.debug("conv kernels call %s from %s", _found[1] + "sgemm64_", _found[0])
else:
    _sgemm = _dgemm = None
    log.warning("no ILP64 CBLAS found next to NumPy; the conv2d kernels use a slow Numba GEMM instead")


def gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """C (m x n, row stride ldc) = alpha op(A) op(B) + beta C for row-major arrays (Numba code only)."""
    raise NotImplementedError("gemm is callable from Numba-compiled code only")


@njit(nogil=True, cache=True)
def gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """The fallback GEMM on flat views: C[i, j] = alpha sum_p op(A)[i, p] op(B)[p, j] + beta C[i, j]."""
    af = a.reshape(a.size)
    bf = b.reshape(b.size)
    cf = c.reshape(c.size)
    for i in range(m):
        for j in range(n):
            cf[i * ldc + j] = beta * cf[i * ldc + j] if beta != 0.0 else 0.0
        for p in range(k):
            av = alpha * (af[p * lda + i] if trans_a else af[i * lda + p])
            if trans_b:
                for j in range(n):
                    cf[i * ldc + j] += av * bf[j * ldb + p]
            else:
                for j in range(n):
                    cf[i * ldc + j] += av * bf[p * ldb + j]


@overload(gemm)
def _gemm_impl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    if not AVAILABLE:
        def fallback(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
            gemm_loops(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

        return fallback
    fn = _sgemm if a.dtype == types.float32 else _dgemm
    scalar = np.float32 if a.dtype == types.float32 else np.float64

    def impl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        fn(ROW_MAJOR, TRANS if trans_a else NO_TRANS, TRANS if trans_b else NO_TRANS, m, n, k, scalar(alpha),
           a.ctypes.data, lda, b.ctypes.data, ldb, scalar(beta), c.ctypes.data, ldc)

    return impl


@njit(nogil=True, cache=True)
def _self_test(a, b, c):
    gemm(False, True, a.shape[0], b.shape[0], a.shape[1], 1.0, a, a.shape[1], b, b.shape[1], 0.0, c, c.shape[1])


def check() -> None:
    """Raise if the BLAS binding computes a wrong product (run by the tests)."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    c = np.zeros((2, 4), np.float32)
    _self_test(a, b, c)
    if not np.array_equal(c, a @ b.T):
        raise RuntimeError(f"kernels._conv_blas: sgemm from {_found} returned {c.tolist()}, expected "
                           f"{(a @ b.T).tolist()}")
