"""The CUDA kernels of the misc layers (noise, alpha dropout, activity penalty, category encoding) compile
to PTX for a real GPU (sm_90) with NVVM, without a GPU: the simulator runs the Python, not the CUDA
typing, so this catches what only the real target refuses.

`_gaussian` calls the shared `_normal` device function; a kernel that calls a device function needs a
driver to compile here (as dropout's), so the device function is compiled on its own instead."""

import pytest

cuda = pytest.importorskip("numba.cuda")
from numba import types as T  # noqa: E402

from kernels.noise import _normal  # noqa: E402


def _compile(fn, sig, **kw):
    from numba.cuda.cudadrv.error import NvvmSupportError

    try:
        return cuda.compile_ptx(fn, sig, cc=(9, 0), **kw)[0]
    except NvvmSupportError as e:  # no NVVM library on this machine
        pytest.skip(f"NVVM is not available: {e}")


def _arr(dt, nd):
    return T.Array(dt, nd, "C")


def test_kernels_compile_to_ptx():
    from kernels.gpu import encoding as ge
    from kernels.gpu import noise as gn

    f32, u8, i64 = T.float32, T.uint8, T.int64
    sigs = {
        gn._add_or_scale: (_arr(f32, 1), _arr(f32, 1), _arr(f32, 1), T.boolean, T.boolean),
        gn._alpha_apply: (_arr(f32, 2), _arr(u8, 2), _arr(f32, 2), T.UniTuple(i64, 2), T.UniTuple(i64, 2),
                          T.float64, T.float64, T.float64),
        gn._penalty_grad: (_arr(f32, 1), _arr(f32, 1), _arr(f32, 1), T.float64, T.float64, T.boolean),
        ge._scatter: (_arr(i64, 1), _arr(f32, 2), i64, i64, _arr(i64, 1)),
    }
    for kernel, sig in sigs.items():
        assert ".entry" in _compile(kernel.py_func, sig), kernel.py_func.__name__
    for ftype in (T.float64, T.float32):  # the draw's float type: the kernel passes its array's dtype
        assert ".func" in _compile(_normal, (T.uint64, i64, i64, T.NumberClass(ftype)), device=True)
