"""The Numba GEMM: ``c[z] (+)= sum_p op(a[pa[p]]) @ op(b[pb[p]])`` over p in ``starts[z]:starts[z+1]``.

One launch covers a plain GEMM (one output, one pair), a batched matmul (blockIdx.z = output matrix, one
pair each, with NumPy broadcasting in the pair indices) and the gradients of a broadcast operand (an
output summing several pairs, so no two blocks write one element and no atomics are needed).

Each block computes a BM x BN output tile from BK-deep shared-memory tiles; each thread keeps an RM x RN
block of accumulators in registers, in the dtype of `c` (float32 stays float32). Thread (ty, tx) owns
rows ``ty + TY*i`` and columns ``tx + TX*j``, so its shared-memory reads are broadcasts (A) or
consecutive (B) and its stores are coalesced. Tiles are loaded so that consecutive threads read
consecutive addresses whether an operand is transposed or not; they are stored with one column of
padding so the transposed stores do not hit one bank.

Under the CUDA simulator (one Python thread per CUDA thread) the tile constants are smaller; the code is
the same. cuBLAS, when available, is tried first by `gemm_cuda` (kernels.gpu.blas).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.gpu import per_dtype, reshaped, to_device
from kernels.gpu.launch import _simulated, launch_output_tiles

TY, TX, RM, RN = (4, 4, 2, 2) if _simulated() else (16, 16, 4, 4)
BM, BN = TY * RM, TX * RN  # output tile of one block
BK = TX  # depth of one shared-memory tile
THREADS = TX * TY
LOADS = BM * BK // THREADS  # elements of each operand tile one thread loads (BM == BN)
PADDED_M, PADDED_N = BM + 1, BN + 1  # shared tiles' rows, one column of padding against bank conflicts


def _build_gemm(dt):
    zero = dt(0)

    @cuda.jit
    def gemm(a, b, c, pa, pb, starts, ta, tb, accumulate):
        sa = cuda.shared.array((BK, PADDED_M), dt)  # sa[k, m] = op(a)[row0 + m, k0 + k]
        sb = cuda.shared.array((BK, PADDED_N), dt)  # sb[k, n] = op(b)[k0 + k, col0 + n]
        acc = cuda.local.array((RM, RN), dt)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * TX + tx
        z = cuda.blockIdx.z
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        m = c.shape[1]
        n = c.shape[2]
        k_dim = a.shape[1] if ta else a.shape[2]
        for i in range(RM):
            for j in range(RN):
                acc[i, j] = zero
        for p in range(starts[z], starts[z + 1]):
            ia = pa[p]
            ib = pb[p]
            for k0 in range(0, k_dim, BK):
                for ld in range(LOADS):
                    e = tid + ld * THREADS
                    if ta:  # a is (K, M): consecutive threads read consecutive m
                        kk = e // BM
                        mm = e - kk * BM
                        ok = row0 + mm < m and k0 + kk < k_dim
                        sa[kk, mm] = a[ia, k0 + kk, row0 + mm] if ok else zero
                    else:  # a is (M, K): consecutive threads read consecutive k
                        mm = e // BK
                        kk = e - mm * BK
                        ok = row0 + mm < m and k0 + kk < k_dim
                        sa[kk, mm] = a[ia, row0 + mm, k0 + kk] if ok else zero
                    if tb:  # b is (N, K): consecutive threads read consecutive k
                        nn = e // BK
                        kk = e - nn * BK
                        ok = col0 + nn < n and k0 + kk < k_dim
                        sb[kk, nn] = b[ib, col0 + nn, k0 + kk] if ok else zero
                    else:  # b is (K, N): consecutive threads read consecutive n
                        kk = e // BN
                        nn = e - kk * BN
                        ok = col0 + nn < n and k0 + kk < k_dim
                        sb[kk, nn] = b[ib, k0 + kk, col0 + nn] if ok else zero
                cuda.syncthreads()  # both tiles are loaded
                for kk in range(BK):
                    for i in range(RM):
                        av = sa[kk, ty + TY * i]
                        for j in range(RN):
                            acc[i, j] += av * sb[kk, tx + TX * j]
                cuda.syncthreads()  # every thread is done with the tiles before they are reloaded
        for i in range(RM):
            r = row0 + ty + TY * i
            for j in range(RN):
                col = col0 + tx + TX * j
                if r < m and col < n:
                    c[z, r, col] = c[z, r, col] + acc[i, j] if accumulate else acc[i, j]

    return gemm


def gemm_kernel(dtype):
    """The GEMM kernel for `dtype` (built once)."""
    return per_dtype("gemm", dtype, _build_gemm)


def cuda_kernels() -> dict[str, object]:
    """The GEMM kernels built per dtype (see kernels.gpu.signatures)."""
    return {f"gemm[{dt}]": gemm_kernel(dt) for dt in ("float32", "float64")}


_PLANS: dict[tuple, tuple] = {}


def pair_plan(pairs: tuple[tuple[tuple[int, int], ...], ...]):
    """Device arrays (pa, pb, starts) for per-output lists of (a index, b index) pairs (cached)."""
    if pairs not in _PLANS:
        flat = [p for group in pairs for p in group]
        starts = np.zeros(len(pairs) + 1, np.int64)
        starts[1:] = np.cumsum([len(g) for g in pairs])
        pa = np.array([p[0] for p in flat] or [0], np.int64)
        pb = np.array([p[1] for p in flat] or [0], np.int64)
        _PLANS[pairs] = (to_device(pa), to_device(pb), to_device(starts))
    return _PLANS[pairs]


SINGLE_PAIR = (((0, 0),),)  # the pairs of a plain GEMM: c[0] = op(a[0]) @ op(b[0])


def gemm3_numba(a3, b3, c3, pairs, trans_a: bool, trans_b: bool, accumulate: bool) -> None:
    """The Numba GEMM on 3-D (batch, rows, cols) device arrays; `pairs[z]` lists the (a, b) batch
    indices summed into c3[z]."""
    pa, pb, starts = pair_plan(pairs)
    launch_output_tiles(gemm_kernel(c3.dtype), c3.shape[1], c3.shape[2], (BM, BN), (TX, TY), a3, b3, c3, pa,
                        pb, starts, trans_a, trans_b, accumulate, batch=c3.shape[0])


def as3(a):
    """A (1, rows, cols) view of a 2-D device array."""
    return reshaped(a, 1, a.shape[0], a.shape[1])
