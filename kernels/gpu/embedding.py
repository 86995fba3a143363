"""CUDA twins of `kernels.embedding`: gather one element per thread; scatter-add with atomics. Row pieces
of a table (``row_offset`` / ``total_rows`` / ``accumulate``) as in `kernels.embedding`."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.embedding import check_rows
from kernels.gpu import empty, flat, launch, reshaped
from kernels.gpu.checks import buffer, note_bad, result
from kernels.gpu.scalar_source import float32_constants


@cuda.jit
@float32_constants
def _gather(ids, table, y, bad, row_offset, total_rows, accumulate):
    # y[r, j] (+)= table[ids[r] - row_offset, j] for this piece's ids, else 0 (or untouched when
    # accumulating); the first row whose id is outside [0, total_rows) goes to the check (kernels.gpu.checks)
    i = cuda.grid(1)
    if i < y.size:
        d = table.shape[1]
        r = i // d
        j = i % d
        k = ids[r]
        if k < 0 or k >= total_rows:
            note_bad(bad, r)
        t = k - row_offset
        v = table[t, j] if t >= 0 and t < table.shape[0] else 0.0
        y[r, j] = y[r, j] + v if accumulate else v


@cuda.jit
def _scatter_add(ids, dy, dtable, row_offset):
    i = cuda.grid(1)
    if i < dy.size:
        d = dtable.shape[1]
        r = i // d
        t = ids[r] - row_offset
        if t >= 0 and t < dtable.shape[0]:
            cuda.atomic.add(dtable, (t, i % d), dy[r, i % d])


@cuda.jit
def _scatter_moment(ids, dy, dmoment, row_offset, absolute):
    i = cuda.grid(1)
    if i < dy.size:
        d = dmoment.shape[1]
        r = i // d
        t = ids[r] - row_offset
        if t >= 0 and t < dmoment.shape[0]:
            x = dy[r, i % d]
            cuda.atomic.add(dmoment, (t, i % d), abs(x) if absolute else x * x)


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


def embedding_forward_cuda(ids, table, y, *, row_offset: int = 0, total_rows: int | None = None,
                           accumulate: bool = False, check=None) -> int:
    """``y = table[ids]`` on device arrays; returns the flat index of the first bad id or -1 (row pieces:
    see `kernels.embedding.embedding_forward_cpu`). With a `kernels.gpu.checks.DeviceCheck` the bad id
    goes to it and -1 is returned without waiting for the device."""
    total = check_rows(table.shape[0], row_offset, total_rows, "embedding_forward_cuda")
    d = table.shape[1]
    n = ids.size
    bad, flat_ids = buffer(check), int_ids(ids)
    launch(_gather, n * d, flat_ids, table, reshaped(y, n, d), bad, int(row_offset), total, bool(accumulate))
    return result(check, bad, flat_ids, n)


def embedding_backward_cuda(ids, dy, dtable, accumulate: bool = False, *, row_offset: int = 0) -> None:
    """``dtable[ids - row_offset] += dy`` for this piece's ids (zeroed first unless `accumulate`) on device
    arrays."""
    if not accumulate:
        launch(_fill, dtable.size, flat(dtable), 0.0)
    d = dtable.shape[1]
    n = ids.size
    launch(_scatter_add, n * d, int_ids(ids), reshaped(dy, n, d), dtable, int(row_offset))


def embedding_backward_moment_cuda(ids, dy, dmoment, accumulate: bool = False, *, row_offset: int = 0,
                                   power: int = 2) -> None:
    """`kernels.embedding.embedding_backward_moment_cpu` on device arrays (atomic adds)."""
    if power not in (1, 2):
        raise ValueError(f"embedding_backward_moment_cuda: power must be 1 or 2, received {power!r}.")
    if not accumulate:
        launch(_fill, dmoment.size, flat(dmoment), 0.0)
    d = dmoment.shape[1]
    n = ids.size
    launch(_scatter_moment, n * d, int_ids(ids), reshaped(dy, n, d), dmoment, int(row_offset), power == 1)
