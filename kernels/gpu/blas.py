"""cuBLAS GEMMs through CuPy (the ``gpu`` extra), sharing Numba's device arrays without copies.

`gemm(a, b, c, trans_a, trans_b, accumulate)` runs ``c (+)= op(a) @ op(b)`` with cuBLAS and returns True,
or returns False when cuBLAS cannot take it, so the caller runs the Numba GEMM (kernels.gpu.gemm):
under the CUDA simulator, when CuPy is not installed or cannot reach a device, for dtypes other than
float32/float64, or for operands that are not C-contiguous. `backend()` says which path GEMMs take and
why. CuPy wraps a Numba array through ``__cuda_array_interface__`` (no copy) and runs on the CUDA stream
the calling task's kernels go to (kernels.gpu.launch.current_stream; the default stream otherwise).

Why CuPy rather than nvmath-python (chosen from the documentation, not measured: there was no GPU when
this was written; benchmarks/gpu_check.py measures it): CuPy's ``matmul`` and ``cublas.gemm`` take
row-major arrays, transposed views and alpha/beta directly and adopt any ``__cuda_array_interface__``
array, in a stable API that ships as one wheel per CUDA major (``cupy-cuda12x``). nvmath-python's
``linalg.advanced.matmul`` (cuBLASLt, with fused epilogues) plans each new problem and its raw
``bindings.cublas`` module is marked experimental; it is the better choice later for fused
bias+activation epilogues.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("kernels")

_state: dict[str, object] = {}


def _simulated() -> bool:
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", 0))


def backend() -> tuple[str, str]:
    """("cublas", "") when GEMMs go to cuBLAS, else ("numba", why not)."""
    if "backend" not in _state:
        _state["backend"] = _probe()
        log.info("GEMM backend: %s %s", *_state["backend"])
    return _state["backend"]


def _probe() -> tuple[str, str]:
    if _simulated():
        return "numba", "the CUDA simulator is on (cuBLAS needs a real GPU)"
    try:
        import cupy
    except ImportError:
        return "numba", "CuPy is not installed (pip install 'flexflow_keras[gpu]')"
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CuPy reports a missing driver or device in several ways
        return "numba", f"CuPy cannot reach a GPU ({type(e).__name__}: {e})"
    _state["cupy"] = cupy
    return "cublas", ""


def _contiguous(a) -> bool:
    return bool(a.is_c_contiguous()) if hasattr(a, "is_c_contiguous") else bool(a.flags["C_CONTIGUOUS"])


def _cupy_view(cupy, a):
    """A CuPy array over the memory of Numba device array `a`, made once per array (kernels.gpu.memo;
    `cupy.asarray` of one cost ~10 us of host time). It keeps no reference to `a`, which carries it: no
    cycle."""
    from kernels.gpu.memo import per_array

    return per_array(a, "cupy", lambda: _wrap(cupy, a))


def _wrap(cupy, a):
    ptr = a.__cuda_array_interface__["data"][0]
    if not ptr:  # an empty array
        return cupy.asarray(a)
    mem = cupy.cuda.UnownedMemory(ptr, a.size * a.dtype.itemsize, None)
    return cupy.ndarray(a.shape, a.dtype, cupy.cuda.MemoryPointer(mem, 0), strides=a.strides)


_streams: dict = {}  # int(numba stream) -> (numba stream, CuPy ExternalStream)


def _cupy_stream(cupy, stream):
    if stream is None:
        return cupy.cuda.Stream.null
    hit = _streams.get(int(stream))
    if hit is None or hit[0] is not stream:
        hit = _streams[int(stream)] = (stream, cupy.cuda.ExternalStream(int(stream)))
    return hit[1]


def gemm(a, b, c, trans_a: bool, trans_b: bool, accumulate: bool) -> bool:
    """``c (+)= op(a) @ op(b)`` on 2-D device arrays with cuBLAS; False when the Numba GEMM must run."""
    if backend()[0] != "cublas":
        return False
    if np.dtype(c.dtype) not in (np.float32, np.float64) or not all(map(_contiguous, (a, b, c))):
        return False
    if not (np.dtype(a.dtype) == np.dtype(b.dtype) == np.dtype(c.dtype)):
        return False
    cupy = _state["cupy"]
    from kernels.gpu.launch import current_stream

    stream = current_stream()
    if stream is not None and not hasattr(stream, "handle"):
        return False  # a simulator test's deferred stream: the Numba GEMM queues on it
    with _cupy_stream(cupy, stream):
        ca, cb, cc = _cupy_view(cupy, a), _cupy_view(cupy, b), _cupy_view(cupy, c)
        opa = ca.T if trans_a else ca
        opb = cb.T if trans_b else cb
        if accumulate:  # one temporary: cupy.matmul has no beta; cublas.gemm's layout rules unverified here
            cc += cupy.matmul(opa, opb)
        else:
            cupy.matmul(opa, opb, out=cc)
    return True
