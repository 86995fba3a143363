"""CUDA twins of `kernels.embedding`: gather one element per thread; scatter-add with atomics."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.gpu import empty, flat, launch


@cuda.jit
def _gather(ids, table, y, bad):
    i = cuda.grid(1)
    if i < y.size:
        d = table.shape[1]
        r = i // d
        k = ids[r]
        if k < 0 or k >= table.shape[0]:
            cuda.atomic.min(bad, 0, r)
            y[r, i % d] = 0.0
        else:
            y[r, i % d] = table[k, i % d]


@cuda.jit
def _scatter_add(ids, dy, dtable):
    i = cuda.grid(1)
    if i < dy.size:
        d = dtable.shape[1]
        r = i // d
        k = ids[r]
        if k >= 0 and k < dtable.shape[0]:
            cuda.atomic.add(dtable, (k, i % d), dy[r, i % d])


@cuda.jit
def _to_int(src, dst):
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = int(src[i])


@cuda.jit
def _fill(a, value):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = value


def int_ids(ids):
    """A flat int64 device view of `ids` (float ids converted, as Keras casts them)."""
    f = flat(ids)
    if f.dtype.kind in "iu":
        return f
    out = empty((f.size,), np.int64)
    launch(_to_int, f.size, f, out)
    return out


def embedding_forward_cuda(ids, table, y) -> int:
    """``y = table[ids]`` on device arrays; returns the flat index of the first bad id or -1."""
    d = table.shape[1]
    n = ids.size
    bad = cuda.to_device(np.array([n], np.int64))
    launch(_gather, n * d, int_ids(ids), table, y.reshape(n, d), bad)
    first = int(bad.copy_to_host()[0])
    return -1 if first >= n else first


def embedding_backward_cuda(ids, dy, dtable, accumulate: bool = False) -> None:
    """``dtable[ids] += dy`` (zeroed first unless `accumulate`) on device arrays."""
    if not accumulate:
        launch(_fill, dtable.size, flat(dtable), 0.0)
    d = dtable.shape[1]
    n = ids.size
    launch(_scatter_add, n * d, int_ids(ids), dy.reshape(n, d), dtable)
