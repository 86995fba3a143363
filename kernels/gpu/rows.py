"""Row reductions for warp-per-row kernels (softmax, layer norm): the 32 lanes of a row stride over it,
then `row_reduce` folds their partials in shared memory.

A block is (32 lanes, WARPS_PER_BLOCK rows) (`kernels.gpu.launch.launch_rows`); `buf` is the block's
(WARPS_PER_BLOCK, 32) shared array. The fold is a shared-memory tree with block barriers rather than warp
shuffles because the CUDA simulator, which the tests run, has no shuffles; every thread of the block must
call it (rows past the end fold zeros), so no barrier sits in a divergent branch.
"""

from __future__ import annotations

from numba import cuda

from kernels.gpu.launch import WARP


@cuda.jit(device=True)
def row_reduce(buf, w, lane, v, take_max):
    """The sum (or max) of `v` over the 32 lanes of row slot `w`; every lane gets it."""
    buf[w, lane] = v
    cuda.syncthreads()  # every lane's partial is in shared memory
    step = WARP // 2
    while step > 0:
        if lane < step:
            a = buf[w, lane]
            b = buf[w, lane + step]
            buf[w, lane] = max(a, b) if take_max else a + b
        cuda.syncthreads()  # this level of the tree is complete before the next reads it
        step //= 2
    total = buf[w, 0]
    cuda.syncthreads()  # every lane has read the total before buf is written again
    return total
