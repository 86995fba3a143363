"""CUDA twin of `kernels.encoding`: zero the output, then one thread per id writes (multi-hot) or
atomically adds (count) its slot; the first bad id's flat index is kept with an atomic min."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.encoding import COUNT
from kernels.gpu import flat, launch, reshaped
from kernels.gpu.embedding import _fill, int_ids


@cuda.jit
def _scatter(ids, y, width, mode, bad):
    i = cuda.grid(1)
    if i < ids.size:
        r = i // width
        v = ids[i]
        if v < 0 or v >= y.shape[1]:
            cuda.atomic.min(bad, 0, i)
        elif mode == COUNT:
            cuda.atomic.add(y, (r, v), 1.0)
        else:
            y[r, v] = 1.0


def category_encode_cuda(ids, y, mode: int) -> int:
    """Device twin of `kernels.encoding.category_encode_cpu`."""
    n = y.shape[y.ndim - 1]  # (the simulator's shapes refuse negative indices)
    width = ids.shape[ids.ndim - 1] if ids.ndim else 1
    launch(_fill, y.size, flat(y), 0.0)
    bad = cuda.to_device(np.array([ids.size], np.int64))
    launch(_scatter, ids.size, int_ids(ids), reshaped(y, y.size // n, n), width, int(mode), bad)
    first = int(bad.copy_to_host()[0])
    return -1 if first >= ids.size else first
