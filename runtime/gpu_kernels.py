"""CUDA kernels the runtime itself needs: elementwise reduction folds (imported only with GPUs).

Each kernel folds a contiguous 1-D source into a destination of the same size: one thread per
element, a bounds check, one store.
"""

from __future__ import annotations

from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def fold_add(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] += src[i]


@cuda.jit
def fold_mul(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] *= src[i]


@cuda.jit
def fold_max(dst, src):
    i = cuda.grid(1)
    if i < dst.size and src[i] > dst[i]:
        dst[i] = src[i]


@cuda.jit
def fold_min(dst, src):
    i = cuda.grid(1)
    if i < dst.size and src[i] < dst[i]:
        dst[i] = src[i]


FOLDS = {"+": fold_add, "*": fold_mul, "max": fold_max, "min": fold_min}


def launch_fold(op: str, dst, src) -> None:
    """dst = dst (op) src for contiguous 1-D device arrays of one size."""
    from kernels.gpu.launch import grid_1d, launch_grid

    blocks, threads = grid_1d(dst.size, THREADS_PER_BLOCK)
    launch_grid(FOLDS[op], blocks, threads, dst, src)
