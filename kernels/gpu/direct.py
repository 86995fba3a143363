"""Direct launches: a compiled kernel run again without numba-cuda's per-call dispatch.

Why: on an H200, `kernel[grid, block, stream](x)` costs about 30 us of host time, most of it in typing
the arguments, looking the overload up and numba-cuda's context checks (a dozen driver calls per launch,
each logged). A GPU task of a small model runs a kernel of about 10 us, so that path, not the GPU, sets
the step time.

What: the first launch of a kernel for a set of argument types goes through numba (which compiles it);
`remember` then records that overload, its cuda.core kernel for the current device, and one packer per
argument, under a key made of the argument types (`_numba_type_` of a device array, the Python type of
a scalar), the stream and the current context. Later launches with that key build the parameter list
with numba's own marshalling (`_Kernel._prepare_args`, cached per device array, whose views the runtime
keeps) and call cuda.core's `launch` directly. Only plain device arrays and scalars (a Python int within
int64, float, bool, NumPy numbers) qualify; a host array (which numba copies), a record, a tuple, a thread
with no CUDA context yet, and a debug, specialised or launch-config-sensitive kernel keep numba's path. Off
under the CUDA simulator and with ``FF_DIRECT_LAUNCH=0``.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

_SCALARS = frozenset((int, float, bool, np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64, np.int8,
                      np.uint8, np.int16, np.uint16, np.bool_))

_I64 = 1 << 63
_entries: dict = {}  # (kernel, stream key, arg types) -> _Entry, or None: numba's path for good
_configs: dict = {}  # (grid, block, cooperative) -> cuda.core LaunchConfig
_streams: dict = {}  # id(numba stream) -> (numba stream, cuda.core stream)
_state = {"on": None}
LAUNCHED = object()  # try_launch's answer when it has launched


def enabled() -> bool:
    on = _state["on"]
    if on is None:
        from numba import config

        on = _state["on"] = (not getattr(config, "ENABLE_CUDASIM", 0)
                             and os.environ.get("FF_DIRECT_LAUNCH", "1") != "0")
    return on


def _array_type():
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray


class _Entry:
    __slots__ = ("kernel", "packers", "cooperative")

    def __init__(self, kernel, packers, cooperative):
        self.kernel, self.packers, self.cooperative = kernel, packers, cooperative


def _arg_key(args):
    """The argument types of a launch, or None when one is not a plain device array or scalar."""
    arr = _array_type()
    key = []
    for a in args:
        t = type(a)
        if t is int and not -_I64 <= a < _I64:
            return None  # numba types it uint64 (or rejects it): its path decides
        if t in _SCALARS:
            key.append(t)
        elif isinstance(a, arr):
            key.append(a._numba_type_)
        else:
            return None
    return tuple(key)


def _context() -> int:
    """The handle of this thread's current CUDA context (0: none)."""
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    return int(ctx) if err == driver.CUresult.CUDA_SUCCESS else 0


def _stream_key(stream):
    """(key, cuda.core stream) for a numba stream (None: the default stream, keyed by the context, as a
    kernel's module belongs to one context; (None, None) when this thread has no context yet)."""
    if stream is None:
        from numba.cuda.cudadrv import driver

        ctx = _context()
        if not ctx:
            return None, None  # no context yet: numba's launch makes one
        core = _streams.get(0)
        if core is None:
            core = _streams[0] = (None, driver._to_core_stream(0))
        return ("ctx", ctx), core[1]
    hit = _streams.get(id(stream))
    if hit is None or hit[0] is not stream:
        from numba.cuda.cudadrv import driver

        hit = _streams[id(stream)] = (stream, driver._to_core_stream(stream))
    return id(stream), hit[1]


def _array_packer(overload, ty):
    from kernels.gpu.memo import per_array

    def params(a):
        out: list = []
        overload._prepare_args(ty, a, 0, [], out)  # numba's own marshalling, once per array
        return out

    def pack(a, out):
        out.extend(per_array(a, "kernel_args", lambda: params(a)))
    return pack


def _scalar_packer(ctype):
    def pack(v, out):
        out.append(ctype(v))
    return pack


def _as_is(v, out):
    out.append(v)


def packers_for(overload):
    """One packer per argument of `overload`, mirroring `_Kernel._prepare_args` (None: a type it does not
    mirror, the launch keeps numba's path)."""
    from numba.cuda import types

    out = []
    for ty in overload.argument_types:
        if isinstance(ty, types.Array):
            out.append(_array_packer(overload, ty))
        elif isinstance(ty, types.Integer):
            out.append(_scalar_packer(getattr(ctypes, f"c_{ty}")))
        elif ty == types.float64:
            out.append(_scalar_packer(ctypes.c_double))
        elif ty == types.float32:
            out.append(_scalar_packer(ctypes.c_float))
        elif ty == types.boolean:
            out.append(_as_is)
        else:
            return None
    return out


def kernel_args(packers, args) -> list:
    out: list = []
    for pack, a in zip(packers, args, strict=True):
        pack(a, out)
    return out


def _dims(d) -> tuple:
    d = (d,) if isinstance(d, int) else tuple(int(x) for x in d)
    return d + (1,) * (3 - len(d))


def _config(grid, block, cooperative):
    key = (grid, block, cooperative)
    cfg = _configs.get(key)
    if cfg is None:
        from cuda.core import LaunchConfig
        from numba.cuda._compat import CUDA_CORE_GE_1_0

        coop = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": cooperative}
        cfg = _configs[key] = LaunchConfig(grid=_dims(grid), block=_dims(block), shmem_size=0, **coop)
    return cfg


def try_launch(kernel, grid, block, stream, args):
    """Launch directly when `kernel` was already launched with these argument types on this stream and
    context (returns LAUNCHED); else return the key to `remember` after numba's launch, or None when
    this launch never qualifies."""
    key = _arg_key(args)
    if key is None:
        return None
    skey, core_stream = _stream_key(stream)
    if skey is None:
        return None
    full = (kernel, skey, key)
    entry = _entries.get(full, False)
    if entry is False:
        return full
    if entry is None:
        return None
    from cuda.core import launch

    launch(core_stream, _config(grid, block, entry.cooperative), entry.kernel, *kernel_args(entry.packers, args))
    return LAUNCHED


def remember(full, kernel, args) -> None:
    """After numba launched `kernel(*args)` (compiling it if needed): record the overload it used."""
    if getattr(kernel, "specialized", False) or getattr(kernel, "_launch_config_sensitive", False) \
            or kernel.targetoptions.get("extensions"):
        _entries[full] = None
        return
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    overload = kernel.overloads.get(argtypes)
    packers = packers_for(overload) if overload is not None else None
    if (overload is None or packers is None or overload.debug
            or getattr(overload, "launch_config_sensitive", False)):
        _entries[full] = None
        return
    _entries[full] = _Entry(overload._codelibrary.get_cufunc().kernel, packers, bool(overload.cooperative))
