"""Embedding lookup (gather) and its backward (scatter-add into the table gradient).

A table may be split by rows: a call then holds rows [row_offset, row_offset + table.shape[0]) of a
table of `total_rows` rows. Ids outside [0, total_rows) are errors (the forward reports the first one);
ids of other pieces contribute zeros, and with ``accumulate=True`` the forward adds its rows into y, so
the caller sums the partial lookups of all pieces. The backward scatters only this piece's ids.

`embedding_backward_moment_cpu` scatters, per lookup, the square (or absolute value) of its gradient row:
the sparse moment that Keras 3's TensorFlow optimizers read for a table (kernels/optimizers.py's
`moment_args`).
"""

from __future__ import annotations

import numpy as np

from kernels._jit import cpu_jit


@cpu_jit
def _gather(ids, table, y, row_offset, total_rows, accumulate):
    # y[r] (+)= table[ids[r] - row_offset] for ids in this piece's rows; other rows are zero-filled (or
    # left alone when accumulating). The first row whose id is outside [0, total_rows) is returned (-1:
    # none).
    n = ids.size
    v, d = table.shape
    bad = -1
    for r in range(n):
        k = ids[r]
        if (k < 0 or k >= total_rows) and bad < 0:
            bad = r
        t = k - row_offset
        if 0 <= t < v:
            if accumulate:
                for j in range(d):
                    y[r, j] += table[t, j]
            else:
                for j in range(d):
                    y[r, j] = table[t, j]
        elif not accumulate:
            for j in range(d):
                y[r, j] = 0.0
    return bad


@cpu_jit
def _scatter_add(ids, dy, dtable, row_offset):
    v, d = dtable.shape
    for r in range(ids.size):
        t = ids[r] - row_offset
        if 0 <= t < v:
            for j in range(d):
                dtable[t, j] += dy[r, j]


@cpu_jit
def _scatter_moment(ids, dy, dmoment, row_offset, absolute):
    v, d = dmoment.shape
    for r in range(ids.size):
        t = ids[r] - row_offset
        if 0 <= t < v:
            for j in range(d):
                x = dy[r, j]
                dmoment[t, j] += abs(x) if absolute else x * x


def _ids(ids: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(ids).reshape(-1)
    if a.dtype.kind == "f":
        a = a.astype(np.int64)  # Keras casts float ids to int
    return a


def check_rows(table_rows: int, row_offset: int, total_rows: int | None, who: str) -> int:
    """`total_rows` (default: table_rows) after checking that the piece fits in the whole table.

    Raises:
        ValueError: naming `who`, when row_offset is negative or the piece's rows overrun total_rows.
    """
    total = table_rows if total_rows is None else int(total_rows)
    if row_offset < 0 or row_offset + table_rows > total:
        raise ValueError(f"{who}: a table piece of {table_rows} rows at row_offset={row_offset} does not fit "
                         f"a table of total_rows={total}; pass 0 <= row_offset and row_offset + "
                         f"table.shape[0] <= total_rows.")
    return total


def embedding_forward_cpu(ids: np.ndarray, table: np.ndarray, y: np.ndarray, *, row_offset: int = 0,
                          total_rows: int | None = None, accumulate: bool = False) -> int:
    """``y[..., :] = table[ids[...], :]``; returns the flat index of the first out-of-range id, or -1.

    Args:
        ids: integer (or integral float) ids of any shape. table: (V, D). y: preallocated ids.shape + (D,).
        row_offset: the global id of `table`'s first row, when it is a row piece of a larger table.
        total_rows: the whole table's row count (default: V); ids outside [0, total_rows) are errors.
        accumulate: add the looked-up rows into y instead of overwriting it (ids of other pieces then
            leave y alone; without it they write zeros).
    """
    total = check_rows(table.shape[0], row_offset, total_rows, "embedding_forward_cpu")
    return int(_gather(_ids(ids), table, y.reshape(-1, table.shape[1]), int(row_offset), total,
                       bool(accumulate)))


def embedding_backward_cpu(ids: np.ndarray, dy: np.ndarray, dtable: np.ndarray, accumulate: bool = False, *,
                           row_offset: int = 0) -> None:
    """``dtable[ids[r] - row_offset] += dy[r]`` (zeroed first unless `accumulate`) for the ids in
    [row_offset, row_offset + dtable.shape[0]); other ids (other pieces, out of range) are skipped."""
    if not accumulate:
        dtable[...] = 0
    _scatter_add(_ids(ids), np.ascontiguousarray(dy).reshape(-1, dtable.shape[1]), dtable, int(row_offset))


def embedding_backward_moment_cpu(ids: np.ndarray, dy: np.ndarray, dmoment: np.ndarray, accumulate: bool = False,
                                  *, row_offset: int = 0, power: int = 2) -> None:
    """``dmoment[ids[r] - row_offset] += dy[r]**2`` (``power`` 1: ``|dy[r]|``), zeroed first unless
    `accumulate`, for this piece's ids, as `embedding_backward_cpu` scatters the gradient: a row looked up
    k times gets the sum of its k squared gradients, not the square of their sum."""
    if power not in (1, 2):
        raise ValueError(f"embedding_backward_moment_cpu: power must be 1 or 2, received {power!r}.")
    if not accumulate:
        dmoment[...] = 0
    _scatter_moment(_ids(ids), np.ascontiguousarray(dy).reshape(-1, dmoment.shape[1]), dmoment, int(row_offset),
                    power == 1)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import embedding as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
