"""Batch assembly: the epoch's sample order and contiguous batch buffers.

`Batcher.order(epoch)` is the sample order (Keras' ``shuffle=True``: a fresh permutation each epoch
from a seeded generator; ``"batch"``: batch-sized chunks in shuffled order; False: in order).
`Batcher.fill(rows, ...)` gathers those rows of every array into caller-provided contiguous buffers
with a Numba kernel (casting to the buffer's dtype, e.g. uint8 images into float32), and
`Batcher.batches(epoch)` yields batches in buffers the Batcher preallocates once and reuses: a batch
is valid until the next one is produced.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from flexflow_keras.data.order import epoch_order


@njit(nogil=True, cache=True, error_model="numpy")
def _gather_rows(src, rows, out):
    n = src.shape[0]
    for i in range(rows.shape[0]):
        r = rows[i]
        if r < 0 or r >= n:
            return i  # the position of the bad row index
        for j in range(src.shape[1]):
            out[i, j] = src[r, j]
    return -1


def gather_rows(src: np.ndarray, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[i] = src[rows[i]]`` for a C-contiguous `src`, casting to `out`'s dtype; returns `out`.

    Args:
        src: (N, ...) C-contiguous array.
        rows: int64 sample indices.
        out: (len(rows), ...) C-contiguous buffer.
    """
    if out.shape[0] != len(rows) or out.shape[1:] != src.shape[1:]:
        raise ValueError(f"gather_rows: buffer shape {out.shape} does not fit {len(rows)} rows of {src.shape}.")
    if len(rows) == 0:
        return out
    width = out.size // len(rows)
    bad = _gather_rows(src.reshape(src.shape[0], width), rows.astype(np.int64, copy=False),
                       out.reshape(len(rows), width))
    if bad >= 0:
        raise IndexError(f"gather_rows: row index {rows[bad]} at position {bad} is outside [0, {src.shape[0]}).")
    return out


def _buffer_dtype(a: np.ndarray, want=None) -> np.dtype:
    if want is not None:
        return np.dtype(want)
    if a.dtype.kind in "iu":
        return a.dtype
    return np.dtype(np.float32)


@dataclass
class Batch:
    """One batch: its index in the epoch, the sample rows, and views of the filled buffers."""

    index: int
    rows: np.ndarray
    x: list[np.ndarray]
    y: list[np.ndarray]
    sample_weight: np.ndarray | None

    @property
    def size(self) -> int:
        return len(self.rows)


class Batcher:
    """Orders and assembles batches from a source (anything with ``x``, ``y``, ``sample_weight``).

    Args:
        source: an ArraySource/NpzSource/SyntheticSource (or an object with those attributes).
        batch_size: samples per batch.
        shuffle: True (permutation per epoch), "batch" (shuffled chunks) or False.
        seed: generator seed; None draws one from NumPy's global generator (so
            ``utils.set_random_seed`` makes runs repeatable).
        drop_remainder: drop the last partial batch.
        x_dtypes, y_dtypes: per array, the buffer dtype (None: float32 for floating data, the array's own
            dtype for integers); e.g. ``x_dtypes=["float32"]`` turns uint8 images into float32 batches.
    """

    def __init__(self, source, batch_size: int, shuffle=True, seed: int | None = None,
                 drop_remainder: bool = False, x_dtypes=None, y_dtypes=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"Batcher expects a positive integer batch_size, received {batch_size!r}.")
        if shuffle not in (True, False, "batch"):
            raise ValueError(f"shuffle must be True, False or 'batch', received {shuffle!r}.")
        self.x = [np.ascontiguousarray(a) for a in source.x]
        self.y = [np.ascontiguousarray(a) for a in getattr(source, "y", [])]
        sw = getattr(source, "sample_weight", None)
        self.sample_weight = None if sw is None else np.ascontiguousarray(sw, np.float32)
        self.n = int(self.x[0].shape[0])
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.seed = int(np.random.randint(0, 2**31 - 1)) if seed is None else int(seed)
        self.drop_remainder = drop_remainder
        self.x_dtypes = list(x_dtypes) if x_dtypes is not None else [None] * len(self.x)
        self.y_dtypes = list(y_dtypes) if y_dtypes is not None else [None] * len(self.y)
        self._bufs = None

    @property
    def num_batches(self) -> int:
        full, rest = divmod(self.n, self.batch_size)
        return full if (self.drop_remainder or rest == 0) else full + 1

    def order(self, epoch: int) -> np.ndarray:
        """The sample order for `epoch` (int64), the same for the same seed and epoch."""
        return epoch_order(self.n, self.seed, epoch, self.shuffle, self.batch_size)

    def rows(self, order: np.ndarray, b: int) -> np.ndarray:
        """The rows of batch `b` in `order`."""
        return order[b * self.batch_size:(b + 1) * self.batch_size]

    def new_buffers(self, size: int | None = None):
        """Fresh contiguous buffers for one batch: (x buffers, y buffers, sample-weight buffer or None)."""
        size = self.batch_size if size is None else size
        xb = [np.empty((size,) + a.shape[1:], _buffer_dtype(a, d)) for a, d in zip(self.x, self.x_dtypes, strict=True)]
        yb = [np.empty((size,) + a.shape[1:], _buffer_dtype(a, d)) for a, d in zip(self.y, self.y_dtypes, strict=True)]
        sb = None if self.sample_weight is None else np.empty(size, np.float32)
        return xb, yb, sb

    def fill(self, rows: np.ndarray, x_out: Sequence[np.ndarray], y_out: Sequence[np.ndarray] = (),
             sw_out: np.ndarray | None = None) -> None:
        """Gather `rows` of every array into the given buffers (each with len(rows) samples)."""
        for src, out in zip(self.x, x_out, strict=True):
            gather_rows(src, rows, out)
        for src, out in zip(self.y, y_out, strict=True):
            gather_rows(src, rows, out)
        if sw_out is not None and self.sample_weight is not None:
            gather_rows(self.sample_weight[:, None], rows, sw_out[:, None])

    def batches(self, epoch: int = 0) -> Iterator[Batch]:
        """The epoch's batches, in reused preallocated buffers (a batch is valid until the next)."""
        if self._bufs is None:
            self._bufs = self.new_buffers()
        xb, yb, sb = self._bufs
        order = self.order(epoch)
        for b in range(self.num_batches):
            rows = self.rows(order, b)
            k = len(rows)
            xs, ys = [a[:k] for a in xb], [a[:k] for a in yb]
            sw = None if sb is None else sb[:k]
            self.fill(rows, xs, ys, sw)
            yield Batch(b, rows, xs, ys, sw)
