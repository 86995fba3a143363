"""CUDA twins of `kernels.linear`: a shared-memory tiled GEMM, the fused bias+activation pass, and the
activation-gradient / bias-gradient passes of backward. ``accumulate=True`` (a Dense split along its
input features) adds the partial product in the GEMM's store and the bias in one elementwise pass."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.activations import LINEAR, Activation
from kernels.gpu import blas, empty, launch, per_dtype, reshaped
from kernels.gpu.activations import scalar_functions
from kernels.gpu.gemm import SINGLE_PAIR, as3, gemm3_numba
from kernels.linear import check_accumulate

NO_ACTIVATION = Activation(LINEAR)


def gemm_cuda(a, b, c, trans_a: bool = False, trans_b: bool = False, accumulate: bool = False) -> None:
    """``c (+)= op(a) @ op(b)`` for 2-D device arrays (op = transpose where asked): cuBLAS when it is
    available (kernels.gpu.blas), else the Numba GEMM."""
    if not blas.gemm(a, b, c, trans_a, trans_b, accumulate):
        gemm3_numba(as3(a), as3(b), as3(c), SINGLE_PAIR, trans_a, trans_b, accumulate)


def _build_act(dt):
    value, grad = scalar_functions(dt)

    @cuda.jit
    def bias_act(src, b, dst, has_bias, keep_src, code, p0, p1, p2):
        i = cuda.grid(1)
        if i < src.size:
            cols = b.size
            r = i // cols
            j = i - r * cols
            v = src[r, j] + b[j] if has_bias else src[r, j]
            if keep_src:
                src[r, j] = v
            dst[r, j] = value(code, v, p0, p1, p2)

    @cuda.jit
    def act_grad(dy, x, y, dz, code, p0, p1, p2):
        i = cuda.grid(1)
        if i < dy.size:
            cols = dy.shape[1]
            r = i // cols
            j = i - r * cols
            dz[r, j] = dy[r, j] * grad(code, x[r, j], y[r, j], p0, p1, p2)

    return bias_act, act_grad


def _act_kernels(dtype):
    return per_dtype("linear_activation", dtype, _build_act)


def cuda_kernels() -> dict[str, object]:
    """The per-dtype bias + activation kernels (see kernels.gpu.signatures)."""
    return {f"{name}[{dt}]": k for dt in ("float32", "float64")
            for name, k in zip(("bias_act", "act_grad"), _act_kernels(dt), strict=True)}


@cuda.jit
def _column_sums(g, out, accumulate):
    j = cuda.grid(1)
    if j < g.shape[1]:
        s = out.dtype.type(0)
        for r in range(g.shape[0]):
            s += g[r, j]
        out[j] = out[j] + s if accumulate else s


def _rows(a, cols):
    return reshaped(a, a.size // cols, cols)


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
            launch(_act_kernels(y2.dtype)[0], y2.size, y2, b, y2, True, False, LINEAR, 0.0, 0.0, 0.0)
        return
    src = y2 if z is None else _rows(z, n_out)
    gemm_cuda(_rows(x, n_in), w, src)
    bias = b if b is not None else w[0]
    launch(_act_kernels(y2.dtype)[0], y2.size, src, bias, y2, b is not None, z is not None, act.code, act.p0, act.p1, act.p2)


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
        launch(_act_kernels(dz.dtype)[1], dz.size, dy2, pre, y2, dz, act.code, act.p0, act.p1, act.p2)
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
    am = reshaped(a, int(np.prod(sa[:-2], dtype=np.int64)), sa[-2], sa[-1])
    bm = reshaped(b, int(np.prod(sb[:-2], dtype=np.int64)), sb[-2], sb[-1])
    return am, bm, ia, ib


def matmul_forward_cuda(a, b, y) -> None:
    """``y = a @ b`` with NumPy matmul semantics on device arrays: one batched GEMM launch."""
    am, bm, ia, ib = _as_matrices(a, b)
    ym = reshaped(y, len(ia), am.shape[1], bm.shape[2])
    pairs = tuple(((int(i), int(j)),) for i, j in zip(ia, ib, strict=True))
    gemm3_numba(am, bm, ym, pairs, False, False, False)


def matmul_backward_cuda(a, b, dy, da, db, accumulate: tuple[bool, bool] = (False, False)) -> None:
    """Gradients of `matmul_forward_cuda`, summed over broadcast batch matrices: one launch per operand,
    each output matrix summing the products of the batch matrices broadcast onto it."""
    am, bm, ia, ib = _as_matrices(a, b)
    dym = reshaped(dy, len(ia), am.shape[1], bm.shape[2])
    if da is not None:
        groups = [[] for _ in range(am.shape[0])]
        for k, (i, j) in enumerate(zip(ia, ib, strict=True)):
            groups[int(i)].append((k, int(j)))  # da[i] += dy[k] @ b[j]^T
        gemm3_numba(dym, bm, reshaped(da, *am.shape), tuple(tuple(g) for g in groups), False, True,
                    accumulate[0])
    if db is not None:
        groups = [[] for _ in range(bm.shape[0])]
        for k, (i, j) in enumerate(zip(ia, ib, strict=True)):
            groups[int(j)].append((int(i), k))  # db[j] += a[i]^T @ dy[k]
        gemm3_numba(am, dym, reshaped(db, *bm.shape), tuple(tuple(g) for g in groups), True, False,
                    accumulate[1])
