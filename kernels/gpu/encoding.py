"""CUDA twin of `kernels.encoding`: zero the output, then one thread per id writes (multi-hot) or
atomically adds (count) its slot; the first bad id's flat index is kept with an atomic min."""

from __future__ import annotations

from numba import cuda

from kernels.encoding import COUNT
from kernels.gpu import flat, launch, reshaped
from kernels.gpu.checks import buffer, note_bad, result
from kernels.gpu.embedding import _fill, int_ids


@cuda.jit
def _scatter(ids, y, width, mode, bad):
    i = cuda.grid(1)
    if i < ids.size:
        r = i // width
        v = ids[i]
        if v < 0 or v >= y.shape[1]:
            note_bad(bad, i)
        elif mode == COUNT:
            cuda.atomic.add(y, (r, v), 1.0)
        else:
            y[r, v] = 1.0


def category_encode_cuda(ids, y, mode: int, check=None) -> int:
    """Device twin of `kernels.encoding.category_encode_cpu` (with a `kernels.gpu.checks.DeviceCheck`: the
    bad id goes to it and -1 is returned without waiting for the device)."""
    n = y.shape[y.ndim - 1]  # (the simulator's shapes refuse negative indices)
    width = ids.shape[ids.ndim - 1] if ids.ndim else 1
    launch(_fill, y.size, flat(y), 0.0)
    bad, flat_ids = buffer(check), int_ids(ids)
    launch(_scatter, ids.size, flat_ids, reshaped(y, y.size // n, n), width, int(mode), bad)
    return result(check, bad, flat_ids, ids.size)
