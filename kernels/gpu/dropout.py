"""CUDA twins of `kernels.dropout`: the same counter-based keep bits (`_keep` is shared with the CPU),
for whole samples or for a tile that splits non-batch dims (``origin`` / ``noise_shape``: each element's
global flat index in the whole per-sample noise shape is computed in the kernel, no index array)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.dropout import _keep, keep_threshold, tile_index
from kernels.gpu import launch, reshaped
from kernels.gpu.elementwise import offset  # flat index -> element offset through strides (0: broadcast)
from kernels.gpu.scalar_source import float32_constants

keep = cuda.jit(device=True)(_keep)


@cuda.jit
def _make_mask(mask, key, offset, threshold):
    i = cuda.grid(1)
    if i < mask.size:
        m = mask.shape[1]
        r = i // m
        mask[r, i % m] = 1 if keep(key, offset + r, i % m, threshold) else 0


@cuda.jit
def _make_mask_at(mask, key, offset, threshold, shape, origin, gstrides):
    # mask[r, e] = keep bit of global sample offset + r at e's global flat index in the whole noise shape
    # (shape: the tile's per-sample dims; origin: their global starts; gstrides: the whole noise strides)
    i = cuda.grid(1)
    if i < mask.size:
        m = mask.shape[1]
        r = i // m
        e = i % m
        g = 0
        rem = e
        for d in range(len(shape) - 1, -1, -1):
            g += (origin[d] + rem % shape[d]) * gstrides[d]
            rem //= shape[d]
        mask[r, e] = 1 if keep(key, offset + r, g, threshold) else 0


@cuda.jit
@float32_constants
def _apply(x, mask, y, shape, nstrides, scale, accumulate):
    # y[r, e] (+)= x[r, e] * mask[r, ne] * scale, ne = e's index in the per-sample noise shape
    # (shape: x's per-sample dims; nstrides: the noise's element strides, 0 on broadcast dims).
    i = cuda.grid(1)
    if i < x.size:
        m = x.shape[1]
        r = i // m
        e = i % m
        ne = offset(e, shape, nstrides)
        v = x[r, e] * scale if mask[r, ne] else 0.0
        y[r, e] = y[r, e] + v if accumulate else v


def _noise_strides(x_shape, mask_shape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    per_x, per_m = tuple(x_shape[1:]) or (1,), tuple(mask_shape[1:]) or (1,)
    strides, acc = [], 1
    for xs, ms in zip(reversed(per_x), reversed(per_m), strict=True):
        strides.append(0 if ms == 1 and xs != 1 else acc)
        acc *= ms
    return per_x, tuple(reversed(strides))


def dropout_mask_cuda(mask, rate: float, key: int, batch_offset: int = 0, *, origin=None,
                      noise_shape=None) -> None:
    """Fill the uint8 device `mask` with keep bits for global samples from `batch_offset` (or, for a tile
    splitting non-batch dims, at `origin` inside the whole per-sample `noise_shape`; see
    `kernels.dropout.dropout_mask_cpu`)."""
    where = tile_index(mask.shape, batch_offset, origin, noise_shape, "dropout_mask_cuda")
    rows = mask.shape[0]
    mask2 = reshaped(mask, rows, mask.size // rows)
    if where is None:
        launch(_make_mask, mask.size, mask2, np.uint64(key), int(batch_offset), keep_threshold(rate))
    else:
        launch(_make_mask_at, mask.size, mask2, np.uint64(key), where.offset, keep_threshold(rate),
               where.shape or (1,), where.origin or (0,), where.strides or (1,))


def dropout_forward_cuda(x, y, mask, rate: float, key: int, batch_offset: int = 0, *, origin=None,
                         noise_shape=None) -> None:
    """Make this shard's mask and write ``y = x * mask / (1 - rate)`` on device arrays (`origin` and
    `noise_shape` as for `dropout_mask_cuda`)."""
    dropout_mask_cuda(mask, rate, key, batch_offset, origin=origin, noise_shape=noise_shape)
    _run_apply(x, mask, y, 1.0 / (1.0 - rate), False)


def dropout_backward_cuda(dy, mask, dx, rate: float, accumulate: bool = False) -> None:
    """``dx (+)= dy * mask / (1 - rate)`` on device arrays."""
    _run_apply(dy, mask, dx, 1.0 / (1.0 - rate), accumulate)


def _run_apply(x, mask, y, scale, accumulate):
    rows = x.shape[0]
    shape, nstrides = _noise_strides(x.shape, mask.shape)
    launch(_apply, x.size, reshaped(x, rows, x.size // rows), reshaped(mask, rows, mask.size // rows),
           reshaped(y, rows, y.size // rows), shape, nstrides, scale, accumulate)
