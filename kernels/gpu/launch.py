"""Every CUDA launch configuration, in one place: grid and block shapes and the scalar argument types.

Shapes: `launch` (1-D, one thread per item), `launch_tiled` (2-D square tiles over an output matrix),
`launch_output_tiles` (register-blocked GEMM tiles, batched in z),
`launch_rows` (one warp per row: WARPS_PER_BLOCK rows per block, 32 lanes reduce each row),
`launch_blocks` (one block per item, e.g. per channel). Under the CUDA simulator every thread is a Python thread, so blocks
are kept small there; the grid arithmetic is the same.

Direct launches: a kernel already launched with the same argument types skips numba-cuda's dispatch
(`kernels.gpu.direct`); the first launch, which compiles, goes through numba.

Streams: launches go to the thread's current stream (`on_stream`; the runtime sets a GPU task's
processor stream around its body), else to the default stream.

Scalars: a Python float would reach a kernel as float64 and turn its arithmetic into f64 instructions
(the PTX test rejects those in float32 kernels). `typed_scalars` gives Python floats the dtype of the
kernel's floating-point arrays (float32 when any is float32 and none float64, else float64).
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager

import numpy as np

from kernels.gpu import direct


def _simulated() -> bool:
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", 0))


WARP = 32
THREADS = 32 if _simulated() else 256  # threads per block of a 1-D launch
WARPS_PER_BLOCK = 2 if _simulated() else 8  # rows per block of a warp-per-row launch
REDUCE_THREADS = 64 if _simulated() else 256  # threads per block of a one-block-per-item reduction


_tls = threading.local()


def current_stream():
    """The stream launches go to on this thread (None: the default stream)."""
    return getattr(_tls, "stream", None)


@contextmanager
def on_stream(stream):
    """Send this thread's launches to `stream` inside the block (the runtime sets a GPU task's stream)."""
    prev = current_stream()
    _tls.stream = stream
    try:
        yield
    finally:
        _tls.stream = prev


def _run(kernel, grid, block, args) -> None:
    typed = typed_scalars(args)
    stream = current_stream()
    if hasattr(stream, "enqueue"):  # runtime.streams.DeferredStream (simulator tests)
        stream.enqueue(lambda: kernel[grid, block](*typed))
        return
    key = None
    if direct.enabled():
        key = direct.try_launch(kernel, grid, block, stream, typed)
        if key is direct.LAUNCHED:
            return
    if stream is None:
        kernel[grid, block](*typed)
    else:
        kernel[grid, block, stream](*typed)
    if key is not None:
        direct.remember(key, kernel, typed)


def launch_grid(kernel, grid, block, *args) -> None:
    """Run `kernel` on an explicit (grid, block) on the current stream (callers that size their own
    grid with `grid_1d`: the optimizers, the runtime's folds)."""
    _run(kernel, grid, block, args)


def grid_1d(n: int, threads: int = THREADS) -> tuple[int, int]:
    """(blocks, threads) covering `n` work items with one thread each."""
    return max(1, math.ceil(n / threads)), threads


def _float_dtype(args):
    kinds = {np.dtype(a.dtype) for a in args if hasattr(a, "dtype") and getattr(a, "ndim", 0) > 0
             and np.dtype(a.dtype).kind == "f"}
    if np.dtype(np.float32) in kinds and np.dtype(np.float64) not in kinds:
        return np.float32
    return np.float64


def typed_scalars(args) -> tuple:
    """`args` with each Python float converted to the dtype of the floating-point arrays among them."""
    for a in args:
        if type(a) is float:
            break
    else:
        return args  # nothing to convert (most launches): no dtype scan
    t = _float_dtype(args)
    return tuple(t(a) if type(a) is float else a for a in args)


def launch(kernel, n: int, *args) -> None:
    """Run `kernel` on a 1-D grid of at least `n` threads (a no-op when n is 0)."""
    if n > 0:
        blocks, threads = grid_1d(n)
        _run(kernel, blocks, threads, args)


def launch_tiled(kernel, rows: int, cols: int, tile: int, *args, batch: int = 1) -> None:
    """Run `kernel` on a grid of (tile, tile) blocks covering a (rows, cols) output, `batch` deep in z."""
    if rows > 0 and cols > 0 and batch > 0:
        _run(kernel, (math.ceil(cols / tile), math.ceil(rows / tile), batch), (tile, tile, 1), args)


def launch_output_tiles(kernel, rows: int, cols: int, tile: tuple[int, int], block: tuple[int, int], *args,
                        batch: int = 1) -> None:
    """Run `kernel` with one `block` (x, y threads) per (tile[0] rows x tile[1] cols) output tile, `batch`
    deep in z (each thread computes several outputs: register blocking)."""
    if rows > 0 and cols > 0 and batch > 0:
        grid = (math.ceil(cols / tile[1]), math.ceil(rows / tile[0]), batch)
        _run(kernel, grid, (block[0], block[1], 1), args)


def launch_rows(kernel, rows: int, *args) -> None:
    """Run `kernel` with one warp per row: blockDim = (32, WARPS_PER_BLOCK), row = blockIdx.x *
    WARPS_PER_BLOCK + threadIdx.y."""
    if rows > 0:
        _run(kernel, math.ceil(rows / WARPS_PER_BLOCK), (WARP, WARPS_PER_BLOCK), args)


def launch_blocks(kernel, blocks: tuple[int, ...] | int, *args,
                  threads: int | tuple[int, ...] = REDUCE_THREADS) -> None:
    """Run `kernel` with one block of `threads` (1-D or 2-D) per grid point (a tiled reduction)."""
    grid = (blocks,) if isinstance(blocks, int) else tuple(blocks)
    if all(g > 0 for g in grid):
        _run(kernel, grid, threads, args)
