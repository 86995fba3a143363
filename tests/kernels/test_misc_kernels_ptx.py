"""The CUDA kernels of the misc layers (noise, alpha dropout, activity penalty, category encoding) compile
to PTX for a real GPU (sm_90) with NVVM, without a GPU: the simulator runs the Python, not the CUDA
typing, so this catches what only the real target refuses.

`_gaussian` calls the shared `_normal` device function, which is also compiled on its own; kernels that call
a device function are typed against a stand-in device of that architecture (no driver here). Before, this
test passed only after test_cuda_ptx had compiled those device functions in the same process."""

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


class _CompileOnlyDevice:
    # a kernel calling a device function (note_bad, _normal) asks the current device for its compute
    # capability while it is typed; without a GPU, answer for the architecture compiled (as test_cuda_ptx)
    compute_capability = (9, 0)


def test_kernels_compile_to_ptx(monkeypatch):
    from numba.cuda import dispatcher

    from kernels.gpu import encoding as ge
    from kernels.gpu import noise as gn

    monkeypatch.setattr(dispatcher, "get_current_device", _CompileOnlyDevice)

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
