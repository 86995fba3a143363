"""GPU support through Numba CUDA: device discovery, device arrays, host<->device copies, folds.

`numba.cuda` is imported only when a machine asks for GPUs (it costs about a second); the cheap probe
used for the "GPUs present but -ll:gpu 0" warning asks the CUDA driver through ctypes instead. Under
`NUMBA_ENABLE_CUDASIM=1` the simulator's device stands in for a GPU, so every path here is testable on a
machine without one. Each GPU processor has its own stream (`processor_stream`; see runtime.streams). A copy of a box that is not contiguous goes block by block.
A GPU task's copies into its device go on its stream after its waits (`task_copies`); a host-to-device one
copies its source first and keeps that copy until a mark recorded after it has passed (`_h2d_async`).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import logging
import mmap
import os
import sys
import threading
import weakref

import numpy as np

log = logging.getLogger("runtime")

_probe_cache: int | None = None


def simulator_requested() -> bool:
    """True when Numba's CUDA simulator is (or will be) active in this process."""
    nb = sys.modules.get("numba")
    if nb is not None and hasattr(nb, "config"):
        return bool(getattr(nb.config, "ENABLE_CUDASIM", False))
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def probe_device_count() -> int:
    """How many CUDA devices exist, without importing numba.cuda (the simulator counts as one)."""
    global _probe_cache
    if simulator_requested():
        return 1
    if _probe_cache is None:
        _probe_cache = 0
        for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            count = ctypes.c_int(0)
            try:
                if lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0:
                    _probe_cache = int(count.value)
            except (AttributeError, OSError):
                _probe_cache = 0
            break
    return _probe_cache


def cuda():
    """The numba.cuda module (imported on first use)."""
    from numba import cuda as _cuda

    return _cuda


def device_count() -> tuple[int, str]:
    """(number of devices Numba sees, why none when it is 0)."""
    try:
        cu = cuda()
    except ImportError as e:  # numba-cuda missing
        return 0, f"numba.cuda cannot be imported ({e})"
    try:
        if not cu.is_available():
            return 0, "numba.cuda.is_available() is False (no CUDA driver or device on this host)"
        return len(cu.gpus), ""
    except Exception as e:  # noqa: BLE001 - the driver reports many kinds of failure
        return 0, f"numba.cuda failed to list devices ({type(e).__name__}: {e})"


def quiet_small_grids() -> None:
    """Turn off numba-cuda's warning for launches of fewer than 128 blocks, unless the user asked for it
    (NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS): a small model's bias, loss and optimizer kernels are small by
    nature, and on a real GPU the warning printed on every new launch shape of a training run."""
    if "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS" in os.environ:
        return
    for name in ("numba.cuda.core.config", "numba.core.config"):
        try:
            config = __import__(name, fromlist=["config"])
        except ImportError:
            continue
        if hasattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS"):
            config.CUDA_LOW_OCCUPANCY_WARNINGS = 0


_compiler_problem: str | None = None


def compiler_problem() -> str:
    """'' when Numba can build a CUDA kernel in this process, else why not. A toolchain that cannot (say
    numba-cuda 0.30 beside NumPy 2.5, which removed ``np.row_stack`` that numba-cuda registers) would
    otherwise fail at the first task with an error from deep inside numba-cuda. One tiny kernel is
    compiled once per process (the registries it loads are needed by the first real kernel anyway)."""
    global _compiler_problem
    if _compiler_problem is None:
        problem = ""
        if not simulator_requested():
            try:
                cuda().jit("void(float32[::1])")(_probe_kernel)
            except Exception as e:  # noqa: BLE001 - any failure to compile means kernels cannot run
                problem = _explain_compile_failure(e)
        _compiler_problem = problem
    return _compiler_problem


def _probe_kernel(x):
    x[0] = 1.0


def _explain_compile_failure(e: Exception) -> str:
    try:
        import numba_cuda

        nbc = f"numba-cuda {numba_cuda.__version__}"
    except ImportError:
        nbc = "numba-cuda"
    what = f"{nbc} cannot compile a CUDA kernel here ({type(e).__name__}: {e})"
    if isinstance(e, AttributeError) and "numpy" in str(e):
        return (f"{what}: this NumPy ({np.__version__}) lacks a function numba-cuda registers. "
                f"Install a NumPy that numba-cuda supports (pip install 'numpy<2.5') or a newer numba-cuda")
    return (f"{what}. Check that numba-cuda, its CUDA toolkit packages (pip install 'numba-cuda[cu12]') and "
            f"NumPy work together")


# Nominal figures when the device cannot tell us (the simulator): a recent data-centre GPU.
NOMINAL_FB_BANDWIDTH = 900e9
NOMINAL_FB_LATENCY = 1e-6


def device_info(index: int) -> dict:
    """Name, free and total bytes, and memory bandwidth (bytes/s) of device `index`."""
    cu = cuda()
    dev = cu.gpus[index]
    with dev:
        free, total = cu.current_context().get_memory_info()
    name = getattr(dev, "name", None)
    if isinstance(name, bytes):
        name = name.decode()
    bandwidth = NOMINAL_FB_BANDWIDTH
    try:
        clock_khz = dev.MEMORY_CLOCK_RATE
        bus_bits = dev.GLOBAL_MEMORY_BUS_WIDTH
        bandwidth = 2.0 * clock_khz * 1e3 * bus_bits / 8.0
    except AttributeError:
        pass
    return {"name": name or ("simulator" if simulator_requested() else f"cuda{index}"),
            "free": float(free), "total": float(total), "bandwidth": float(bandwidth)}


_bound = threading.local()  # .device: the device this thread was bound to by select_device


def on_device(index: int):
    """Make device `index` current for the calling thread inside the block (nothing to do on a GPU
    worker bound to it, unless a block for another device is open around this one: a context push and
    pop cost ~14 us of host time per task on numba-cuda 0.30)."""
    if getattr(_bound, "device", None) == index and not getattr(_bound, "pushed", 0):
        return contextlib.nullcontext()
    return _device_block(index)


@contextlib.contextmanager
def _device_block(index: int):
    _bound.pushed = getattr(_bound, "pushed", 0) + 1
    try:
        with cuda().gpus[index]:
            yield
    finally:
        _bound.pushed -= 1


def bind_thread(index: int) -> None:
    """Bind the calling thread to device `index` unless it is already (the sequential executor's issuing
    thread on a one-GPU machine)."""
    if getattr(_bound, "device", None) != index:
        select_device(index)


def select_device(index: int) -> None:
    """Bind the calling thread (a GPU worker) to device `index` for its lifetime."""
    cuda().select_device(index)
    _bound.device = index


def synchronize() -> None:
    cuda().synchronize()


_stream_table = None


def processor_stream(proc):
    """The CUDA stream of GPU processor `proc` (made on first use, on the current device)."""
    global _stream_table
    if _stream_table is None:
        from runtime.streams import StreamTable, cuda_stream

        _stream_table = StreamTable(cuda_stream)
    return _stream_table.get(proc)


def use_stream_factory(make) -> None:
    """Give processors streams made by `make()` from now on (tests: runtime.streams.DeferredStream)."""
    global _stream_table
    from runtime.streams import StreamTable

    _stream_table = StreamTable(make)


def synchronize_streams() -> None:
    """Block until every processor stream is idle."""
    if _stream_table is not None:
        from runtime.streams import synchronize as sync_all

        sync_all(_stream_table.all())


def device_array(index: int, shape, dtype):
    with on_device(index):
        return cuda().device_array(shape, dtype=dtype)


def zero_copy_array(shape, dtype, gpus: bool, shared: bool = False):
    """Host memory visible to GPUs: a mapped array on a real GPU machine, else a NumPy array. With
    `shared`, the NumPy array lives in an anonymous shared mapping, which processes forked later write
    into too (`is_process_shared`); CUDA's mapped memory cannot be shared so, and is returned as it is."""
    if gpus and not simulator_requested():
        return cuda().mapped_array(shape, dtype=dtype)
    if shared:
        return shared_host_array(shape, dtype)
    return np.zeros(shape, dtype=dtype)


def shared_host_array(shape, dtype) -> np.ndarray:
    """A zeroed array in an anonymous MAP_SHARED mapping: a child forked after this call and the parent
    see each other's writes (Linux and macOS)."""
    shape = tuple(int(d) for d in shape)
    nbytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    return np.frombuffer(buf, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def is_process_shared(array) -> bool:
    """True when `array` is a view of a `shared_host_array` mapping."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # np.frombuffer keeps a memoryview of the mapping
        base = base.obj
    return isinstance(base, mmap.mmap)


def is_device_array(a) -> bool:
    return not isinstance(a, np.ndarray) and hasattr(a, "copy_to_host")


def copy_host_to_device(dst, dst_index, src: np.ndarray) -> None:
    """dst[dst_index] = src for a device array `dst` and a host array `src` of the selected shape."""
    _h2d(dst[dst_index], src)


def copy_device_to_host(dst: np.ndarray, src, src_index) -> None:
    """dst[...] = src[src_index] for a host view `dst` and a device array `src`."""
    _d2h(dst, src[src_index])


@contextlib.contextmanager
def task_copies(index: int, stream):
    """Inside the block, copies into device `index` go on `stream` (a GPU task's copies, after its waits
    for its predecessors' events): asynchronous, in the order of the task's kernels. Outside, or for
    another device, they stay synchronous on the legacy default stream, which waits for every earlier
    kernel of the device."""
    prev = getattr(_bound, "copies", None)
    _bound.copies = (index, stream)
    try:
        yield
    finally:
        _bound.copies = prev


def copy_stream(index: int):
    """The stream a copy into device `index` goes on now (0: synchronous)."""
    c = getattr(_bound, "copies", None)
    return c[1] if c is not None and c[0] == index else 0


def h2d_view(view, src, stream=0) -> None:
    """view[...] = src for a device view (e.g. an instance's cached view) and a host array."""
    _h2d(view, src, stream)


def _h2d(view, src, stream=0) -> None:
    # one transfer per contiguous block: the whole view when it is contiguous, else row by row
    if view.ndim == 0 or view.size == 0:
        return
    if hasattr(stream, "enqueue"):  # runtime.streams.DeferredStream (simulator tests): in the stream's order
        data = np.array(src, dtype=view.dtype)  # taken now, as the driver stages pageable memory at the call
        stream.enqueue(lambda: _h2d(view, data))
        return
    if _contiguous(view):
        if stream:
            _h2d_async(view, src, stream)
        else:
            view.copy_to_device(np.ascontiguousarray(src, dtype=view.dtype))
    elif view.ndim == 1:
        for i in range(view.shape[0]):
            view[i] = src[i]  # synchronous: the legacy default stream waits for `stream`'s earlier work
    else:
        for i in range(view.shape[0]):
            _h2d(view[i], src[i], stream)


_staged: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # stream -> deque of (mark, host array)


def _h2d_async(view, src, stream) -> None:
    """An asynchronous copy on `stream` from a private host copy of `src`, kept until a mark recorded after
    the copy has passed: CUDA documents a copy from pageable memory as possibly synchronous, not as
    finished with its source when it returns, and the caller may overwrite `src` (the next batch) at once."""
    from runtime import streams

    data = np.array(src, dtype=view.dtype, order="C")  # always a copy
    view.copy_to_device(data, stream=stream)
    queue = _staged.get(stream)
    if queue is None:
        queue = _staged[stream] = collections.deque()
    while queue and streams.finished(queue[0][0]):
        queue.popleft()
    queue.append((streams.record(stream), data))


def _d2h(dst, view) -> None:
    if view.size == 0:
        return
    if _contiguous(view):
        tmp = np.empty(view.shape, dtype=view.dtype)
        view.copy_to_host(tmp)
        dst[...] = tmp
    elif view.ndim == 1:
        for i in range(view.shape[0]):
            dst[i] = view[i]
    else:
        for i in range(view.shape[0]):
            _d2h(dst[i], view[i])


def copy_device_to_device(dst, dst_index, src, src_index, stream=0) -> None:
    """Device-to-device on one device when both selections are contiguous (on `stream` when given), else
    through the host (synchronously)."""
    if hasattr(stream, "enqueue"):  # a deferred simulator stream: in its order
        stream.enqueue(lambda: copy_device_to_device(dst, dst_index, src, src_index))
        return
    dsel, ssel = dst[dst_index], src[src_index]
    if _contiguous(dsel) and _contiguous(ssel):
        dsel.copy_to_device(ssel, stream=stream)
        return
    tmp = np.empty(ssel.shape, dtype=ssel.dtype)
    _d2h(tmp, ssel)
    _h2d(dsel, tmp)


def _contiguous(a) -> bool:
    test = getattr(a, "is_c_contiguous", None)
    return bool(test()) if test is not None else bool(a.flags["C_CONTIGUOUS"])


def fold_on_device(op: str, dst, src) -> bool:
    """dst = dst (op) src elementwise for contiguous device arrays of one device; False if not possible."""
    if dst.size == 0:
        return True
    if not (_contiguous(dst) and _contiguous(src)):
        return False
    from runtime import gpu_kernels

    gpu_kernels.launch_fold(op, dst.reshape(dst.size), src.reshape(src.size))
    return True
