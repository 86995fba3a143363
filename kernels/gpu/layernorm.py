"""CUDA twins of `kernels.layernorm`: one warp per row for the forward and the input gradient (the row's
mean and variance in two passes, folded by `kernels.gpu.rows.row_reduce`), one thread per column for
dgamma / dbeta (consecutive threads read consecutive columns). Statistics stay in the data's dtype.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.gpu import empty, launch, per_dtype, reshaped, to_device
from kernels.gpu.launch import WARP, WARPS_PER_BLOCK, launch_rows
from kernels.gpu.rows import row_reduce
from kernels.gpu.scalar_source import float32_constants


def _build_rows(dt):
    zero = dt(0)
    one = dt(1)

    @cuda.jit(device=True)
    def mean_invstd(buf, w, lane, x, r, inv_d, eps):
        # the row's mean and 1/sqrt(var + eps), two passes (every lane of the block calls this)
        s = zero
        for j in range(lane, x.shape[1], WARP):
            s += x[r, j]
        mean = row_reduce(buf, w, lane, s, False) * inv_d
        q = zero
        for j in range(lane, x.shape[1], WARP):
            q += (x[r, j] - mean) * (x[r, j] - mean)
        var = row_reduce(buf, w, lane, q, False) * inv_d
        return mean, one / math.sqrt(var + eps)

    @cuda.jit
    def forward(x, gamma, beta, y, inv_d, eps):
        buf = cuda.shared.array((WARPS_PER_BLOCK, WARP), dt)
        w = cuda.threadIdx.y
        lane = cuda.threadIdx.x
        row = cuda.blockIdx.x * WARPS_PER_BLOCK + w
        live = row < x.shape[0]
        r = row if live else 0
        mean, inv = mean_invstd(buf, w, lane, x, r, inv_d, eps)
        if live:
            for j in range(lane, x.shape[1], WARP):
                y[r, j] = (x[r, j] - mean) * inv * gamma[j] + beta[j]

    @cuda.jit
    def backward(x, gamma, dy, dx, stats, inv_d, eps, want_dx, accumulate):
        # dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * gamma; keeps
        # (mean, inv) in stats[r] for the parameter gradients.
        buf = cuda.shared.array((WARPS_PER_BLOCK, WARP), dt)
        w = cuda.threadIdx.y
        lane = cuda.threadIdx.x
        row = cuda.blockIdx.x * WARPS_PER_BLOCK + w
        live = row < x.shape[0]
        r = row if live else 0
        mean, inv = mean_invstd(buf, w, lane, x, r, inv_d, eps)
        a = zero
        b = zero
        for j in range(lane, x.shape[1], WARP):
            gh = dy[r, j] * gamma[j]
            a += gh
            b += gh * (x[r, j] - mean) * inv
        a = row_reduce(buf, w, lane, a, False) * inv_d
        b = row_reduce(buf, w, lane, b, False) * inv_d
        if live:
            if lane == 0:
                stats[r, 0] = mean
                stats[r, 1] = inv
            if want_dx:
                for j in range(lane, x.shape[1], WARP):
                    v = inv * (dy[r, j] * gamma[j] - a - (x[r, j] - mean) * inv * b)
                    dx[r, j] = dx[r, j] + v if accumulate else v

    return forward, backward


@cuda.jit
@float32_constants
def _backward_cols(x, dy, stats, dgamma, dbeta, want_g, want_b, acc_g, acc_b):
    j = cuda.grid(1)
    if j < x.shape[1]:
        sg = 0.0
        sb = 0.0
        for r in range(x.shape[0]):
            sg += dy[r, j] * (x[r, j] - stats[r, 0]) * stats[r, 1]
            sb += dy[r, j]
        if want_g:
            dgamma[j] = dgamma[j] + sg if acc_g else sg
        if want_b:
            dbeta[j] = dbeta[j] + sb if acc_b else sb


def _rows(dtype):
    return per_dtype("layernorm_rows", dtype, _build_rows)


def cuda_kernels() -> dict[str, object]:
    """The per-dtype kernels (see kernels.gpu.signatures)."""
    return {f"{name}[{dt}]": k for dt in ("float32", "float64")
            for name, k in zip(("forward", "backward"), _rows(dt), strict=True)}


def _params(p, d, fill, dtype):
    return to_device(np.full(d, fill, dtype)) if p is None else reshaped(p, d)


def layernorm_forward_cuda(x, gamma, beta, y, n_axes: int = 1, epsilon: float = 1e-3) -> None:
    """Layer normalisation over the last `n_axes` axes on device arrays."""
    d = int(np.prod(tuple(x.shape)[x.ndim - n_axes:], dtype=np.int64))
    rows = x.size // d
    launch_rows(_rows(x.dtype)[0], rows, reshaped(x, rows, d), _params(gamma, d, 1, x.dtype),
                _params(beta, d, 0, x.dtype), reshaped(y, rows, d), 1.0 / d, float(epsilon))


def layernorm_backward_cuda(x, gamma, dy, dx, dgamma, dbeta, n_axes: int = 1, epsilon: float = 1e-3,
                            accumulate: tuple[bool, bool, bool] = (False, False, False)) -> None:
    """Gradients of `layernorm_forward_cuda` (None buffers skipped)."""
    d = int(np.prod(tuple(x.shape)[x.ndim - n_axes:], dtype=np.int64))
    rows = x.size // d
    x2, dy2 = reshaped(x, rows, d), reshaped(dy, rows, d)
    stats = empty((rows, 2), x.dtype)
    dx2 = reshaped(dx, rows, d) if dx is not None else empty((1, d), x.dtype)
    launch_rows(_rows(x.dtype)[1], rows, x2, _params(gamma, d, 1, x.dtype), dy2, dx2, stats, 1.0 / d,
                float(epsilon), dx is not None, accumulate[0])
    if dgamma is None and dbeta is None:
        return
    dummy = empty((d,), x.dtype)
    launch(_backward_cols, d, x2, dy2, stats, dummy if dgamma is None else reshaped(dgamma, d),
           dummy if dbeta is None else reshaped(dbeta, d), dgamma is not None, dbeta is not None, accumulate[1],
           accumulate[2])
