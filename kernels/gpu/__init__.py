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
from kernels.gpu.memo import per_array  # noqa: E402,F401 - re-exported


def flat(a):
    """A 1-D view of a contiguous device array (made once per array: `reshaped`)."""
    return a if a.ndim == 1 else reshaped(a, a.size)


def reshaped(a, *shape):
    """`a.reshape(*shape)`, made once per device array and shape (kernels.gpu.memo: the runtime hands a task
    the same arrays at every step, so the views and the kernel parameters direct launches cache on them are
    reused); a NumPy or CuPy array is reshaped as usual."""
    try:
        hash(shape)
    except TypeError:  # a list among the arguments
        return a.reshape(*shape)
    return per_array(a, shape, lambda: a.reshape(*shape))


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
