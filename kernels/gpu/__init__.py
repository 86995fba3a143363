"""CUDA variants of the kernels (numba.cuda), imported only when a ``*_cuda`` kernel is first used.

Each module here mirrors a CPU module of `kernels` and exposes the same ``<name>_forward_cuda`` /
``<name>_backward_cuda`` functions, taking numba device arrays (simulator arrays under
``NUMBA_ENABLE_CUDASIM=1``). Kernels are 10-30 lines: ``i = cuda.grid(1)``, a bounds check, one store.
All launch arithmetic lives in `kernels.gpu.launch` (re-exported here), so a kernel body never computes its
own grid.
Scalar formulas shared with the CPU (activations, dropout hashing) are the same Python sources compiled as
device functions. Kernels that need a dtype-specific shared-memory tile are built per dtype by a cached
factory (`per_dtype`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import cuda

from kernels.gpu.launch import (  # noqa: E402,F401 - re-exported: every launch goes through kernels.gpu.launch
    THREADS,
    grid_1d,
    launch,
    launch_blocks,
    launch_rows,
    launch_tiled,
)


def flat(a):
    """A 1-D view of a contiguous device array, made once per array (a device array's shape and memory
    never change, and the runtime hands a task the same array at every step: the view, and the kernel
    parameters a direct launch caches on it, are reused)."""
    if a.ndim == 1:
        return a
    d = getattr(a, "__dict__", None)
    v = d.get("_ff_flat") if d is not None else None
    if v is None:
        v = a.reshape(a.size)
        if d is not None:
            d["_ff_flat"] = v
    return v


def reshaped(a, *shape):
    """`a.reshape(*shape)`, made once per array and shape for device arrays (as `flat`: the runtime hands a
    task the same arrays at every step, so the views and their cached kernel parameters are reused; a
    NumPy or CuPy array is reshaped as usual)."""
    d = getattr(a, "__dict__", None)
    if d is None:
        return a.reshape(*shape)
    views = d.get("_ff_views")
    if views is None:
        views = d["_ff_views"] = {}
    try:
        v = views.get(shape)
    except TypeError:  # a list among the arguments
        return a.reshape(*shape)
    if v is None:
        v = views[shape] = a.reshape(*shape)
    return v


def empty(shape, dtype):
    """An uninitialised device array."""
    return cuda.device_array(tuple(int(s) for s in shape), dtype=np.dtype(dtype))


def zeros(shape, dtype):
    """A zero-filled device array."""
    return cuda.to_device(np.zeros(tuple(int(s) for s in shape), dtype=np.dtype(dtype)))


def to_device(a):
    """Copy a host array (or scalar) to the device."""
    return cuda.to_device(np.ascontiguousarray(a))


def element_strides(a) -> tuple[int, ...]:
    """A device array's strides in elements."""
    return tuple(int(s) // a.dtype.itemsize for s in a.strides)


_FACTORIES: dict[tuple[str, str], object] = {}


def per_dtype(name: str, dtype, build: Callable) -> object:
    """The kernel `build(numba_dtype)` for this dtype, built once."""
    key = (name, np.dtype(dtype).str)
    if key not in _FACTORIES:
        from numba import from_dtype

        _FACTORIES[key] = build(from_dtype(np.dtype(dtype)))
    return _FACTORIES[key]
