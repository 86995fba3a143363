"""Dropout with a counter-based mask: the same (seed, step, op seed) always drops the same elements of the
same *global* sample, however the batch is split across shards.

An element's keep bit is a pure function of ``key = dropout_key(seed, step, op_seed)``, its global
sample index ``s = batch_offset + local row`` and its flat index ``e`` inside the per-sample noise shape:
``h = mix64(mix64(key ^ s) + e)``, ``u = (h >> 40) / 2**24``, keep when ``u >= rate`` (Keras keeps where
the uniform draw is >= rate). Kept values are scaled by ``1 / (1 - rate)``. `mix64` is SplitMix64's
finaliser. The mask (uint8, per-sample noise shape) is kept for backward.

A tile that splits non-batch dims passes ``origin`` (its global start in every dim of the mask, dim 0
included, which then replaces ``batch_offset``) and ``noise_shape`` (the whole per-sample noise shape):
``e`` is then the element's global flat index in that shape, so the tile's mask is exactly its slice of
the whole mask. Without them (the default, the fast path) the mask spans whole samples.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernels._jit import cpu_jit

_M64 = (1 << 64) - 1


def mix64_int(z: int) -> int:
    """SplitMix64's finaliser on a Python int (host side; the kernels use `_mix64`)."""
    z &= _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def dropout_key(seed: int, step: int, op_seed: int) -> int:
    """The 64-bit key of one dropout op at one training step."""
    return mix64_int(mix64_int(mix64_int(int(seed)) ^ int(step)) ^ int(op_seed))


def _keep(key, s, e, threshold):
    # Two SplitMix64 finaliser rounds, written out (this source is also compiled for CUDA, where it
    # cannot call a CPU-compiled helper); threshold = ceil(rate * 2**24).
    z = key ^ np.uint64(s)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = (z ^ (z >> np.uint64(31))) + np.uint64(e)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)) >= np.uint64(threshold)


SCALAR_SOURCES = (_keep,)
_keep_jit = cpu_jit(_keep)


@cpu_jit
def _make_mask(mask, key, offset, threshold):
    rows, m = mask.shape
    k = np.uint64(key)
    for r in range(rows):
        for e in range(m):
            mask[r, e] = 1 if _keep_jit(k, offset + r, e, threshold) else 0


@cpu_jit
def _make_mask_at(mask, key, offset, threshold, flat_index):
    # mask[r, e] = keep bit of global sample offset + r at global flat index flat_index[e]
    rows, m = mask.shape
    k = np.uint64(key)
    for r in range(rows):
        for e in range(m):
            mask[r, e] = 1 if _keep_jit(k, offset + r, flat_index[e], threshold) else 0


@cpu_jit
def _apply(x, mask, y, scale):
    rows, m = x.shape
    for r in range(rows):
        for e in range(m):
            y[r, e] = x[r, e] * scale if mask[r, e] else 0.0


def keep_threshold(rate: float) -> int:
    """The 24-bit threshold of `rate` (a draw ``u < rate`` drops)."""
    return int(np.ceil(float(rate) * (1 << 24)))


class TileIndex(NamedTuple):
    """Where a mask tile sits in the whole mask: its first global sample, its per-sample shape, its
    per-sample origin and the whole per-sample noise shape's element strides."""

    offset: int
    shape: tuple[int, ...]
    origin: tuple[int, ...]
    strides: tuple[int, ...]

    def flat_index(self) -> np.ndarray:
        """The global flat index (in the whole per-sample noise shape) of each of the tile's elements."""
        idx = np.zeros((), np.int64)
        for o, n, s in zip(self.origin, self.shape, self.strides, strict=True):
            idx = idx[..., None] + np.arange(o, o + n, dtype=np.int64) * s
        return idx.reshape(-1)


def tile_index(mask_shape, batch_offset: int, origin, noise_shape, who: str) -> TileIndex | None:
    """Validate `origin` / `noise_shape` against the mask tile; None when neither is given (whole samples).

    Raises:
        ValueError: naming `who`, when the lengths do not match the mask's rank, an origin is negative,
            the tile does not fit the noise shape, or batch_offset disagrees with origin[0].
    """
    if origin is None and noise_shape is None:
        return None
    shape = tuple(int(s) for s in mask_shape)
    noise = shape[1:] if noise_shape is None else tuple(int(s) for s in noise_shape)
    if origin is None:
        start = (int(batch_offset),) + (0,) * (len(shape) - 1)
    else:
        start = tuple(int(o) for o in origin)
    if len(start) != len(shape) or len(noise) != len(shape) - 1:
        raise ValueError(f"{who}: origin (one start per mask dim, batch first) and noise_shape (the whole "
                         f"per-sample noise shape) must match the mask's rank {len(shape)} (mask shape "
                         f"{shape}); received origin={origin!r}, noise_shape={noise_shape!r}.")
    if origin is not None and batch_offset not in (0, start[0]):
        raise ValueError(f"{who}: batch_offset={batch_offset} disagrees with origin[0]={start[0]}; origin "
                         f"replaces batch_offset (pass batch_offset=origin[0] or 0).")
    if min(start) < 0 or any(o + n > g for o, n, g in zip(start[1:], shape[1:], noise, strict=True)):
        raise ValueError(f"{who}: a mask tile of shape {shape} at origin {start} does not fit the noise "
                         f"shape {noise} (origins must be >= 0 and origin + tile size <= noise size; "
                         f"broadcast dims of size 1 have origin 0).")
    strides, acc = [], 1
    for g in reversed(noise):
        strides.append(acc)
        acc *= g
    return TileIndex(start[0], shape[1:], start[1:], tuple(reversed(strides)))


def dropout_mask_cpu(mask: np.ndarray, rate: float, key: int, batch_offset: int = 0, *,
                     origin=None, noise_shape=None) -> None:
    """Fill `mask` (uint8, shape (rows, *noise)) with keep bits for global samples from `batch_offset`.

    Args:
        mask: the uint8 mask (tile) to fill. rate: drop probability. key: `dropout_key(...)`.
        batch_offset: the global index of the mask's first sample (ignored when `origin` is given).
        origin: the tile's global start in every dim of the mask (dim 0 first), for a tile that splits
            non-batch dims; None for whole samples.
        noise_shape: the whole mask's per-sample shape (default: mask.shape[1:]).
    """
    where = tile_index(mask.shape, batch_offset, origin, noise_shape, "dropout_mask_cpu")
    rows = mask.shape[0]
    if where is None:
        _make_mask(mask.reshape(rows, -1), np.uint64(key), int(batch_offset), keep_threshold(rate))
    else:
        _make_mask_at(mask.reshape(rows, -1), np.uint64(key), where.offset, keep_threshold(rate),
                      where.flat_index())


def dropout_forward_cpu(x: np.ndarray, y: np.ndarray, mask: np.ndarray, rate: float, key: int,
                        batch_offset: int = 0, *, origin=None, noise_shape=None) -> None:
    """Make the mask for this shard and write ``y = x * mask / (1 - rate)``.

    Args:
        x: (B, ...) input shard. y: preallocated output. mask: preallocated uint8 (B, *noise_shape[1:]),
            each noise dim equal to x's or 1 (broadcast). rate: drop probability in [0, 1).
        key: `dropout_key(...)`. batch_offset: the global index of this shard's first sample.
        origin, noise_shape: for a tile splitting non-batch dims, see `dropout_mask_cpu`.
    """
    dropout_mask_cpu(mask, rate, key, batch_offset, origin=origin, noise_shape=noise_shape)
    scale = 1.0 / (1.0 - rate)
    if mask.shape == x.shape:
        rows = x.shape[0]
        _apply(np.ascontiguousarray(x).reshape(rows, -1), mask.reshape(rows, -1), y.reshape(rows, -1), scale)
    else:
        np.multiply(x, mask, out=y)
        y *= y.dtype.type(scale)


def dropout_backward_cpu(dy: np.ndarray, mask: np.ndarray, dx: np.ndarray, rate: float,
                         accumulate: bool = False) -> None:
    """``dx (+)= dy * mask / (1 - rate)``."""
    scale = dy.dtype.type(1.0 / (1.0 - rate))
    if accumulate:
        dx += dy * mask * scale
    else:
        np.multiply(dy, mask, out=dx)
        dx *= scale


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import dropout as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
