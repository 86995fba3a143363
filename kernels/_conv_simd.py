"""A register-blocked float32 GEMM written as LLVM vector IR inside Numba, for the Winograd convolution's
small GEMMs (16 per chunk, a reduction of 32-64 channels or a few hundred tiles, 16-64 columns).

Why: NumPy's OpenBLAS picks its kernels once per process (or from OPENBLAS_CORETYPE); on a CPU with
AVX-512 running the AVX2 ("Haswell") kernels it reaches ~90-110 GFLOP/s per core on these shapes, while
Numba's JIT compiles for the host CPU. The micro-kernel here keeps an R x (16 NV) block of C in vector
registers (R*NV <= 24 accumulators of 16 floats: 24 of the 32 AVX-512 registers), and for each step of
the reduction loads NV vectors of a row of B, broadcasts R values of A and issues R*NV fused
multiply-adds (`llvm.fmuladd`, so it is exact code on any target, fused where the CPU has FMA).

    C (m x 16 NV) (+)= A (m x k) @ B (k x 16 NV)

A is read through element strides (rs_a, cs_a), so the same kernel computes A @ B (rs_a = lda, cs_a = 1)
and A^T @ B (rs_a = 1, cs_a = lda). B and C are row-major with row strides ldb and ldc, in elements.

`gemm` is the entry point for Numba code: it takes this path for float32 when `ENABLED` (the host has
AVX-512F and Numba compiles for it) and the column count is a multiple of 16, and calls NumPy's BLAS
(`_conv_blas.gemm`) otherwise. Measured on the 2-core AMD EPYC (Zen 5) here, one thread, the Winograd
GEMMs of MNIST's conv2: 206-220 GFLOP/s against 95-102 for OpenBLAS with OPENBLAS_CORETYPE=Haswell (the
environment's setting) and 142-182 for its SkylakeX kernels.

Rounding: the micro-kernel sums each chunk of at most KC products of the reduction from zero in its
registers and adds that block sum to C, rather than loading C into the accumulators and chaining every
product onto it. A reduction of k products then rounds like k/KC block sums of KC terms (OpenBLAS's kernels
do the same) instead of one float32 chain of k: the im2col kernel gradient, a reduction over the batch's
output pixels, had about 10x TensorFlow's error (tests/kernels/test_conv_im2col_accuracy.py). The loop is
the same code; C is loaded once per block either way, and the block's adds are one per KC FMAs.
"""

from __future__ import annotations

import llvmlite.binding as _llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core import config as _config
from numba.extending import intrinsic

from kernels._conv_blas import gemm as blas_gemm

_FEATURES = _llvm.get_host_cpu_features()
# Only when Numba compiles for this host: with NUMBA_CPU_NAME set (portable caches, e.g. "generic") the
# 16-lane vectors would be split into SSE registers and run slower than BLAS.
ENABLED = bool(_FEATURES.get("avx512f", False) and _FEATURES.get("fma", False)
               and _config.CPU_NAME in (None, "host"))
LANES = 16
KC = 256  # rows of B per chunk of the reduction (simd_gemm)
# simd_gemm copies each chunk of a panel of B (KC x 64 values) to a contiguous buffer before the blocks of
# rows of A read it, where B's rows lie a multiple of PACK_STRIDE values apart and C has PACK_MIN_ROWS
# rows. In place, rows 2 KiB or 4 KiB apart (a phase kernel gradient's gathered dZ: 1024 columns) all fall
# in a few cache sets and are evicted before the next block of A reads them. Measured one thread, GFLOP/s,
# best of 7-9 alternating (loaded machine), in place vs packed: A^T (512 x 682) B (682 x 1024) 134 vs 172,
# A^T (256 x 512) B (512 x 2048) 65 vs 199, A^T (128 x 512) B 173 vs 216, A (256 x 1024) B (1024 x 1024)
# 158 vs 208. Elsewhere the copy does not pay: DCGAN's im2col GEMMs (rows 256 columns apart) 140-205
# both ways, and the 4x4 stride-2 64x64x512 -> 256 forward, whose 8 MiB kernel matrix would be copied
# again for each 256-row chunk, went 832 -> 912 ms; a Dense's 32 x 9216 by 9216 x 128, 171 vs 132.
PACK_STRIDE = 512
PACK_MIN_ROWS = 128
_threads = [1]  # threads one kernel call may use (set_kernel_threads)


def set_kernel_threads(n: int) -> None:
    """How many threads one kernel call may use (the engine sets it with its BLAS limit). `simd_gemm`
    runs on one thread: callers that may use more (`one_thread()` is False) take the multi-threaded BLAS
    instead, which then runs about twice as fast on two cores."""
    _threads[0] = max(1, int(n))


def kernel_threads() -> int:
    """Threads one kernel call may use (`set_kernel_threads`)."""
    return _threads[0]


def one_thread() -> bool:
    """Whether kernel calls run on one thread (where `simd_gemm` is the faster GEMM)."""
    return _threads[0] == 1


def _micro(rows: int, nv: int):
    """The intrinsic micro_kernel(k, a, rs_a, cs_a, b, ldb, c, ldc, accumulate) for a rows x (16 nv) block
    of C; a, b, c are the addresses (integers) of the block's first elements."""

    @intrinsic
    def micro(typingctx, k, a, rs_a, cs_a, b, ldb, c, ldc, accumulate):
        sig = types.void(types.intp, types.intp, types.intp, types.intp, types.intp, types.intp, types.intp,
                         types.intp, types.boolean)

        def codegen(context, builder, signature, args):
            k_, a_, rs_, cs_, b_, ldb_, c_, ldc_, acc_ = args
            f32 = ir.FloatType()
            vec = ir.VectorType(f32, LANES)
            fptr = f32.as_pointer()
            vptr = vec.as_pointer()
            i64 = ir.IntType(64)
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, vec, vec]),
                                                 "llvm.fmuladd.v16f32")
            pa = builder.inttoptr(a_, fptr)
            pb = builder.inttoptr(b_, fptr)
            pc = builder.inttoptr(c_, fptr)
            slots = [[cgutils.alloca_once(builder, vec) for _ in range(nv)] for _ in range(rows)]

            def cvec(i, j):
                off = builder.add(builder.mul(ir.Constant(i64, i), ldc_), ir.Constant(i64, j * LANES))
                return builder.bitcast(builder.gep(pc, [off]), vptr)

            # the block's products are summed from zero and added to C at the end (as OpenBLAS's kernels do),
            # not chained onto C's value: see "Rounding" in the module docstring
            for i in range(rows):
                for j in range(nv):
                    builder.store(ir.Constant(vec, [0.0] * LANES), slots[i][j])
            undef = ir.Constant(vec, ir.Undefined)
            mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
            with cgutils.for_range(builder, k_) as loop:
                p = loop.index
                brow = builder.mul(p, ldb_)
                bv = [builder.load(builder.bitcast(builder.gep(pb, [builder.add(brow, ir.Constant(i64, j * LANES))]),
                                                   vptr), align=4) for j in range(nv)]
                acol = builder.mul(p, cs_)
                for i in range(rows):
                    off = builder.add(acol, builder.mul(ir.Constant(i64, i), rs_))
                    s = builder.load(builder.gep(pa, [off]), align=4)
                    splat = builder.shuffle_vector(builder.insert_element(undef, s, ir.Constant(i64, 0)), undef,
                                                   mask)
                    for j in range(nv):
                        builder.store(builder.call(fma, [splat, bv[j], builder.load(slots[i][j])]), slots[i][j])
            with builder.if_else(builder.icmp_unsigned("!=", acc_, ir.Constant(acc_.type, 0))) as (add, store):
                with add:
                    for i in range(rows):
                        for j in range(nv):
                            builder.store(builder.fadd(builder.load(cvec(i, j), align=4), builder.load(slots[i][j])),
                                          cvec(i, j), align=4)
                with store:
                    for i in range(rows):
                        for j in range(nv):
                            builder.store(builder.load(slots[i][j]), cvec(i, j), align=4)
            return context.get_dummy_value()

        return sig, codegen

    return micro


def _packer(nv: int):
    """The intrinsic pack(k, b, ldb, dst) copying a k x (16 nv) block of B (row stride ldb, in elements)
    to dst, contiguous (row stride 16 nv); b and dst are addresses (integers)."""

    @intrinsic
    def pack(typingctx, k, b, ldb, dst):
        sig = types.void(types.intp, types.intp, types.intp, types.intp)

        def codegen(context, builder, signature, args):
            k_, b_, ldb_, d_ = args
            vptr = ir.VectorType(ir.FloatType(), LANES).as_pointer()
            fptr = ir.FloatType().as_pointer()
            i64 = ir.IntType(64)
            pb, pd = builder.inttoptr(b_, fptr), builder.inttoptr(d_, fptr)
            with cgutils.for_range(builder, k_) as loop:
                src = builder.mul(loop.index, ldb_)
                dst = builder.mul(loop.index, ir.Constant(i64, nv * LANES))
                for j in range(nv):
                    v = builder.load(builder.bitcast(builder.gep(pb, [builder.add(src, ir.Constant(i64, j * LANES))]),
                                                     vptr), align=4)
                    builder.store(v, builder.bitcast(builder.gep(pd, [builder.add(dst, ir.Constant(i64, j * LANES))]),
                                                     vptr), align=4)
            return context.get_dummy_value()

        return sig, codegen

    return pack


_PACK4, _PACK3, _PACK2, _PACK1 = _packer(4), _packer(3), _packer(2), _packer(1)


@njit(nogil=True, cache=True)
def _pack_b(nv, k, b, ldb, buf):
    """buf (k x 16 nv, contiguous float32) = the block of B at address b (bytes), row stride ldb."""
    dst = buf.ctypes.data
    if nv == 4:
        _PACK4(k, b, ldb, dst)
    elif nv == 3:
        _PACK3(k, b, ldb, dst)
    elif nv == 2:
        _PACK2(k, b, ldb, dst)
    else:
        _PACK1(k, b, ldb, dst)


# Rows per block for each vector count (at most 24 accumulators), and smaller blocks for the last rows.
_K6x4, _K4x4, _K2x4, _K1x4 = _micro(6, 4), _micro(4, 4), _micro(2, 4), _micro(1, 4)
_K8x3, _K1x3 = _micro(8, 3), _micro(1, 3)
_K12x2, _K4x2, _K1x2 = _micro(12, 2), _micro(4, 2), _micro(1, 2)
_K12x1, _K4x1, _K1x1 = _micro(12, 1), _micro(4, 1), _micro(1, 1)


@njit(nogil=True, cache=True)
def _panel(nv, m, k, a, rs_a, cs_a, b, ldb, c, ldc, acc):
    """C (m x 16 nv) (+)= A B for one panel of columns, in blocks of rows (addresses in bytes)."""
    i = 0
    if nv == 4:
        while i + 6 <= m:
            _K6x4(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 6
        if i + 4 <= m:
            _K4x4(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 4
        if i + 2 <= m:
            _K2x4(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 2
        while i < m:
            _K1x4(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 1
    elif nv == 3:
        while i + 8 <= m:
            _K8x3(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 8
        while i < m:
            _K1x3(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 1
    elif nv == 2:
        while i + 12 <= m:
            _K12x2(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 12
        while i + 4 <= m:
            _K4x2(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 4
        while i < m:
            _K1x2(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 1
    else:
        while i + 12 <= m:
            _K12x1(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 12
        while i + 4 <= m:
            _K4x1(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 4
        while i < m:
            _K1x1(k, a + 4 * i * rs_a, rs_a, cs_a, b, ldb, c + 4 * i * ldc, ldc, acc)
            i += 1


@njit(nogil=True, cache=True)
def simd_gemm(trans_a, m, n, k, a, lda, b, ldb, accumulate, c, ldc):
    """C (m x n) = op(A) @ B, or C += op(A) @ B if accumulate, with the vector micro-kernels: float32
    arrays, n a multiple of 16; op(A) is A (m x k, row stride lda) or A^T (A is k x m)."""
    rs_a, cs_a = (1, lda) if trans_a else (lda, 1)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    # B's chunk of each panel is packed first where PACK_STRIDE and PACK_MIN_ROWS say (same products, same
    # order).
    # the reduction in chunks of KC rows of B, each chunk through every panel of columns before the next:
    # a chunk of B (KC whole rows, 128 KB for 128 columns) is read once from memory, in order, and every
    # block of rows of A reuses it from cache; C holds the sum of the chunks done so far, and each chunk's
    # block sums are added to it (see "Rounding" above). A Dense of 9216 -> 128 on 32 rows: 100 ->
    # 120-130 GFLOP/s against panel by panel, where each panel read every row of B in part. The first
    # chunk always runs, so k == 0 still sets C = 0 (or leaves it when accumulating).
    packed = m >= PACK_MIN_ROWS and ldb % PACK_STRIDE == 0
    buf = np.empty(KC * 4 * LANES if packed else 1, np.float32)  # read by address: used in the loop, so alive
    p = 0
    while True:
        kk = min(KC, k - p)
        j = 0
        while j < n:
            nv = min(4, (n - j) // LANES)
            src = pb + 4 * (p * ldb + j)
            if packed:
                _pack_b(nv, kk, src, ldb, buf)
                _panel(nv, m, kk, pa + 4 * p * cs_a, rs_a, cs_a, buf.ctypes.data, nv * LANES, pc + 4 * j, ldc,
                       accumulate or p > 0)
            else:
                _panel(nv, m, kk, pa + 4 * p * cs_a, rs_a, cs_a, src, ldb, pc + 4 * j, ldc, accumulate or p > 0)
            j += nv * LANES
        p += kk
        if p >= k:
            break


def flag():
    """The `simd` argument of `gemm` (and of the kernels that pass it on): True where the micro-kernels run
    (`ENABLED`), else None, so Numba prunes their branch from every kernel it compiles there: on a host
    without AVX-512 they were compiled all the same, 12 of the MNIST CNN's 58 s of first-run compiling."""
    return True if ENABLED else None


@njit(nogil=True, cache=True)
def gemm(simd, trans_a, m, n, k, a, lda, b, ldb, accumulate, c, ldc):
    """C (m x n) (+)= op(A) @ B: the vector micro-kernels when `simd` (pass `flag()`; None: never, and not
    compiled) and they apply (float32, n % 16 == 0), NumPy's BLAS otherwise. Numba code only."""
    if simd is not None and simd and a.itemsize == 4 and n % LANES == 0 and n > 0:
        simd_gemm(trans_a, m, n, k, a, lda, b, ldb, accumulate, c, ldc)
    else:
        blas_gemm(trans_a, False, m, n, k, 1.0, a, lda, b, ldb, 1.0 if accumulate else 0.0, c, ldc)
