"""Embedding lookup (gather) and its backward (scatter-add into the table gradient)."""

from __future__ import annotations

import numpy as np

from kernels._jit import cpu_jit


@cpu_jit
def _gather(ids, table, y):
    # Rows with an out-of-range id are zero-filled; the first such row is returned (-1: none).
    n = ids.size
    v, d = table.shape
    bad = -1
    for r in range(n):
        k = ids[r]
        if k < 0 or k >= v:
            if bad < 0:
                bad = r
            for j in range(d):
                y[r, j] = 0.0
        else:
            for j in range(d):
                y[r, j] = table[k, j]
    return bad


@cpu_jit
def _scatter_add(ids, dy, dtable):
    v, d = dtable.shape
    for r in range(ids.size):
        k = ids[r]
        if 0 <= k < v:
            for j in range(d):
                dtable[k, j] += dy[r, j]


def _ids(ids: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(ids).reshape(-1)
    if a.dtype.kind == "f":
        a = a.astype(np.int64)  # Keras casts float ids to int
    return a


def embedding_forward_cpu(ids: np.ndarray, table: np.ndarray, y: np.ndarray) -> int:
    """``y[..., :] = table[ids[...], :]``; returns the flat index of the first out-of-range id, or -1.

    Args:
        ids: integer (or integral float) ids of any shape. table: (V, D). y: preallocated ids.shape + (D,).
    """
    return int(_gather(_ids(ids), table, y.reshape(-1, table.shape[1])))


def embedding_backward_cpu(ids: np.ndarray, dy: np.ndarray, dtable: np.ndarray, accumulate: bool = False) -> None:
    """``dtable[ids[r]] += dy[r]`` (zeroed first unless `accumulate`); out-of-range ids are skipped."""
    if not accumulate:
        dtable[...] = 0
    _scatter_add(_ids(ids), np.ascontiguousarray(dy).reshape(-1, dtable.shape[1]), dtable)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import embedding as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
