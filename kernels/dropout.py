"""Dropout with a counter-based mask: the same (seed, step, op seed) always drops the same elements of the
same *global* sample, however the batch is split across shards.

An element's keep bit is a pure function of ``key = dropout_key(seed, step, op_seed)``, its global
sample index ``s = batch_offset + local row`` and its flat index ``e`` inside the per-sample noise shape:
``h = mix64(mix64(key ^ s) + e)``, ``u = (h >> 40) / 2**24``, keep when ``u >= rate`` (Keras keeps where
the uniform draw is >= rate). Kept values are scaled by ``1 / (1 - rate)``. `mix64` is SplitMix64's
finaliser. The mask (uint8, per-sample noise shape) is kept for backward.
"""

from __future__ import annotations

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
def _apply(x, mask, y, scale):
    rows, m = x.shape
    for r in range(rows):
        for e in range(m):
            y[r, e] = x[r, e] * scale if mask[r, e] else 0.0


def keep_threshold(rate: float) -> int:
    """The 24-bit threshold of `rate` (a draw ``u < rate`` drops)."""
    return int(np.ceil(float(rate) * (1 << 24)))


def dropout_mask_cpu(mask: np.ndarray, rate: float, key: int, batch_offset: int) -> None:
    """Fill `mask` (uint8, shape (rows, *noise)) with keep bits for global samples from `batch_offset`."""
    _make_mask(mask.reshape(mask.shape[0], -1), np.uint64(key), int(batch_offset), keep_threshold(rate))


def dropout_forward_cpu(x: np.ndarray, y: np.ndarray, mask: np.ndarray, rate: float, key: int,
                        batch_offset: int) -> None:
    """Make the mask for this shard and write ``y = x * mask / (1 - rate)``.

    Args:
        x: (B, ...) input shard. y: preallocated output. mask: preallocated uint8 (B, *noise_shape[1:]),
            each noise dim equal to x's or 1 (broadcast). rate: drop probability in [0, 1).
        key: `dropout_key(...)`. batch_offset: the global index of this shard's first sample.
    """
    dropout_mask_cpu(mask, rate, key, batch_offset)
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
