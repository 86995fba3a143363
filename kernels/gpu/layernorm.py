"""CUDA twins of `kernels.layernorm`: one thread per row (forward, dx), one per column (dgamma, dbeta)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.gpu import empty, launch, to_device
from kernels.layernorm import _ln_grad_row, _ln_param_grad_col, _ln_row

_row = cuda.jit(device=True)(_ln_row)
_grad_row = cuda.jit(device=True)(_ln_grad_row)
_param_col = cuda.jit(device=True)(_ln_param_grad_col)


@cuda.jit
def _forward(x, gamma, beta, y, eps):
    r = cuda.grid(1)
    if r < x.shape[0]:
        _row(x, gamma, beta, y, r, eps)


@cuda.jit
def _backward_rows(x, gamma, dy, dx, stats, eps, want_dx, accumulate):
    r = cuda.grid(1)
    if r < x.shape[0]:
        _grad_row(x, gamma, dy, dx, stats, r, eps, want_dx, accumulate)


@cuda.jit
def _backward_cols(x, dy, stats, sums, dgamma, dbeta, want_g, want_b, acc_g, acc_b):
    j = cuda.grid(1)
    if j < x.shape[1]:
        _param_col(x, dy, stats, sums, j)
        if want_g:
            dgamma[j] = dgamma[j] + sums[0, j] if acc_g else sums[0, j]
        if want_b:
            dbeta[j] = dbeta[j] + sums[1, j] if acc_b else sums[1, j]


def _params(p, d, fill, dtype):
    return to_device(np.full(d, fill, dtype)) if p is None else p.reshape(d)


def layernorm_forward_cuda(x, gamma, beta, y, n_axes: int = 1, epsilon: float = 1e-3) -> None:
    """Layer normalisation over the last `n_axes` axes on device arrays."""
    d = int(np.prod(tuple(x.shape)[x.ndim - n_axes:], dtype=np.int64))
    rows = x.size // d
    launch(_forward, rows, x.reshape(rows, d), _params(gamma, d, 1, x.dtype), _params(beta, d, 0, x.dtype),
           y.reshape(rows, d), epsilon)


def layernorm_backward_cuda(x, gamma, dy, dx, dgamma, dbeta, n_axes: int = 1, epsilon: float = 1e-3,
                            accumulate: tuple[bool, bool, bool] = (False, False, False)) -> None:
    """Gradients of `layernorm_forward_cuda` (None buffers skipped)."""
    d = int(np.prod(tuple(x.shape)[x.ndim - n_axes:], dtype=np.int64))
    rows = x.size // d
    x2, dy2 = x.reshape(rows, d), dy.reshape(rows, d)
    stats = empty((rows, 2), np.float64)
    dx2 = dx.reshape(rows, d) if dx is not None else empty((1, d), x.dtype)
    launch(_backward_rows, rows, x2, _params(gamma, d, 1, x.dtype), dy2, dx2, stats, epsilon, dx is not None,
           accumulate[0])
    sums = empty((2, d), np.float64)
    dummy = empty((d,), x.dtype)
    launch(_backward_cols, d, x2, dy2, stats, sums, dummy if dgamma is None else dgamma.reshape(d),
           dummy if dbeta is None else dbeta.reshape(d), dgamma is not None, dbeta is not None, accumulate[1],
           accumulate[2])
