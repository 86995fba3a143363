"""CUDA twins of `kernels.linear`: a shared-memory tiled GEMM, the fused bias+activation pass, and the
activation-gradient / bias-gradient passes of backward. ``accumulate=True`` (a Dense split along its
input features) adds the partial product in the GEMM's store and the bias in one elementwise pass."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.activations import LINEAR, Activation
from kernels.gpu import empty, launch, launch_tiled, per_dtype
from kernels.gpu.activations import act_grad, act_value
from kernels.linear import check_accumulate

TILE = 16
NO_ACTIVATION = Activation(LINEAR)


def _build_gemm(dt):
    @cuda.jit
    def gemm(a, b, c, ta, tb, accumulate):
        # c[M, N] (+)= op(a) @ op(b), op transposing when ta / tb; one output element per thread.
        sa = cuda.shared.array((TILE, TILE), dt)
        sb = cuda.shared.array((TILE, TILE), dt)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        m, n = c.shape
        k_dim = a.shape[0] if ta else a.shape[1]
        acc = 0.0
        for t0 in range(0, k_dim, TILE):
            k = t0 + tx
            sa[ty, tx] = (a[k, row] if ta else a[row, k]) if row < m and k < k_dim else 0.0
            k = t0 + ty
            sb[ty, tx] = (b[col, k] if tb else b[k, col]) if col < n and k < k_dim else 0.0
            cuda.syncthreads()  # wait until both tiles are loaded
            for kk in range(TILE):
                acc += sa[ty, kk] * sb[kk, tx]
            cuda.syncthreads()  # wait until every thread is done with the tiles before reloading them
        if row < m and col < n:
            c[row, col] = c[row, col] + acc if accumulate else acc
    return gemm


def cuda_kernels() -> dict[str, object]:
    """The GEMM kernels built per dtype (see kernels.gpu.signatures)."""
    return {f"gemm[{dt}]": per_dtype("gemm", dt, _build_gemm) for dt in ("float32", "float64")}


def gemm_cuda(a, b, c, trans_a: bool = False, trans_b: bool = False, accumulate: bool = False) -> None:
    """``c (+)= op(a) @ op(b)`` for 2-D device arrays (op = transpose where asked)."""
    kernel = per_dtype("gemm", c.dtype, _build_gemm)
    launch_tiled(kernel, c.shape[0], c.shape[1], TILE, a, b, c, trans_a, trans_b, accumulate)


@cuda.jit
def _bias_act(src, b, dst, has_bias, keep_src, code, p0, p1, p2):
    i = cuda.grid(1)
    if i < src.size:
        cols = b.size
        r = i // cols
        j = i - r * cols
        v = src[r, j] + b[j] if has_bias else src[r, j]
        if keep_src:
            src[r, j] = v
        dst[r, j] = act_value(code, v, p0, p1, p2)


@cuda.jit
def _act_grad(dy, x, y, dz, code, p0, p1, p2):
    i = cuda.grid(1)
    if i < dy.size:
        cols = dy.shape[1]
        r = i // cols
        j = i - r * cols
        dz[r, j] = dy[r, j] * act_grad(code, x[r, j], y[r, j], p0, p1, p2)


@cuda.jit
def _column_sums(g, out, accumulate):
    j = cuda.grid(1)
    if j < g.shape[1]:
        s = 0.0
        for r in range(g.shape[0]):
            s += g[r, j]
        out[j] = out[j] + s if accumulate else s


def _rows(a, cols):
    return a.reshape(a.size // cols, cols)


def linear_forward_cuda(x, w, b, y, act: Activation = NO_ACTIVATION, z=None,
                        accumulate: bool = False) -> None:
    """``y = act(x @ w + b)`` over the last axis, on device arrays (see `linear_forward_cpu`); with
    `accumulate`, ``y += x @ w (+ b)`` (linear activation and z=None only)."""
    n_in, n_out = w.shape
    y2 = _rows(y, n_out)
    if accumulate:
        check_accumulate(act, z, "linear_forward_cuda")
        gemm_cuda(_rows(x, n_in), w, y2, accumulate=True)
        if b is not None:
            launch(_bias_act, y2.size, y2, b, y2, True, False, LINEAR, 0.0, 0.0, 0.0)
        return
    src = y2 if z is None else _rows(z, n_out)
    gemm_cuda(_rows(x, n_in), w, src)
    bias = b if b is not None else w[0]
    launch(_bias_act, y2.size, src, bias, y2, b is not None, z is not None, act.code, act.p0, act.p1, act.p2)


def linear_backward_cuda(x, w, y, dy, dx, dw, db, act: Activation = NO_ACTIVATION, z=None,
                         accumulate: tuple[bool, bool, bool] = (False, False, False)) -> None:
    """Gradients of `linear_forward_cuda` (None buffers skipped; see `linear_backward_cpu`)."""
    n_in, n_out = w.shape
    dy2 = _rows(dy, n_out)
    if act.code == LINEAR:
        dz = dy2
    else:
        dz = empty(dy2.shape, dy2.dtype)
        y2 = _rows(y, n_out)
        pre = y2 if z is None else _rows(z, n_out)
        launch(_act_grad, dz.size, dy2, pre, y2, dz, act.code, act.p0, act.p1, act.p2)
    if db is not None:
        launch(_column_sums, n_out, dz, db, accumulate[2])
    if dw is not None:
        gemm_cuda(_rows(x, n_in), dz, dw, trans_a=True, accumulate=accumulate[1])
    if dx is not None:
        gemm_cuda(dz, w, _rows(dx, n_in), trans_b=True, accumulate=accumulate[0])


def _as_matrices(a, b):
    # (batch, m, k) / (batch, k, n) views of a and b (1-D promoted as NumPy does) and, per output
    # matrix, the batch index of each operand after broadcasting.
    sa, sb = tuple(a.shape), tuple(b.shape)
    sa = (1,) + sa if len(sa) == 1 else sa
    sb = sb + (1,) if len(sb) == 1 else sb
    lead = np.broadcast_shapes(sa[:-2], sb[:-2])
    ia = np.broadcast_to(np.arange(int(np.prod(sa[:-2], dtype=np.int64))).reshape(sa[:-2]), lead).reshape(-1)
    ib = np.broadcast_to(np.arange(int(np.prod(sb[:-2], dtype=np.int64))).reshape(sb[:-2]), lead).reshape(-1)
    am = a.reshape(int(np.prod(sa[:-2], dtype=np.int64)), sa[-2], sa[-1])
    bm = b.reshape(int(np.prod(sb[:-2], dtype=np.int64)), sb[-2], sb[-1])
    return am, bm, ia, ib


def matmul_forward_cuda(a, b, y) -> None:
    """``y = a @ b`` with NumPy matmul semantics on device arrays (one tiled GEMM per batch matrix)."""
    am, bm, ia, ib = _as_matrices(a, b)
    ym = y.reshape(len(ia), am.shape[1], bm.shape[2])
    for k, (i, j) in enumerate(zip(ia, ib, strict=True)):
        gemm_cuda(am[int(i)], bm[int(j)], ym[k])


def matmul_backward_cuda(a, b, dy, da, db, accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of `matmul_forward_cuda`, summed over broadcast batch matrices."""
    am, bm, ia, ib = _as_matrices(a, b)
    dym = dy.reshape(len(ia), am.shape[1], bm.shape[2])
    for buf, idx, acc0, is_a in ((da, ia, accumulate[0], True), (db, ib, accumulate[1], False)):
        if buf is None:
            continue
        gm = buf.reshape(*(am.shape if is_a else bm.shape))
        written = set()
        for k, (i, j) in enumerate(zip(ia, ib, strict=True)):
            target = int(idx[k])
            add = acc0 or target in written
            if is_a:
                gemm_cuda(dym[k], bm[int(j)], gm[target], trans_b=True, accumulate=add)
            else:
                gemm_cuda(am[int(i)], dym[k], gm[target], trans_a=True, accumulate=add)
            written.add(target)
