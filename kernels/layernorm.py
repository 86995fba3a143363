"""Layer normalisation over the trailing axes, forward and backward.

The input is viewed as (rows, D) with D the product of the normalised (trailing) axes. Per row:
``y = (x - mean) / sqrt(var + eps) * gamma + beta`` with the biased variance, statistics in float64.
Backward recomputes the row statistics instead of keeping them (one pass per row, then one per column
for dgamma/dbeta, so the CUDA twin has no write conflicts):
``dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))`` with ``dxhat = dy * gamma``.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit


def _ln_row(x, gamma, beta, y, r, eps):
    d = x.shape[1]
    s = 0.0
    for j in range(d):
        s += x[r, j]
    mean = s / d
    q = 0.0
    for j in range(d):
        q += (x[r, j] - mean) * (x[r, j] - mean)
    inv = 1.0 / math.sqrt(q / d + eps)
    for j in range(d):
        y[r, j] = (x[r, j] - mean) * inv * gamma[j] + beta[j]


def _ln_grad_row(x, gamma, dy, dx, stats, r, eps, want_dx, accumulate):
    # Recomputes the row's mean and invstd, keeps them in stats[r] for the parameter gradients, and
    # writes dx[r] = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    d = x.shape[1]
    s = 0.0
    for j in range(d):
        s += x[r, j]
    mean = s / d
    q = 0.0
    for j in range(d):
        q += (x[r, j] - mean) * (x[r, j] - mean)
    inv = 1.0 / math.sqrt(q / d + eps)
    stats[r, 0] = mean
    stats[r, 1] = inv
    if want_dx:
        a = 0.0
        b = 0.0
        for j in range(d):
            gh = dy[r, j] * gamma[j]
            a += gh
            b += gh * (x[r, j] - mean) * inv
        a /= d
        b /= d
        for j in range(d):
            v = inv * (dy[r, j] * gamma[j] - a - (x[r, j] - mean) * inv * b)
            if accumulate:
                dx[r, j] += v
            else:
                dx[r, j] = v


def _ln_param_grad_col(x, dy, stats, sums, j):
    # sums[0, j] = sum_r dy * xhat (dgamma), sums[1, j] = sum_r dy (dbeta).
    sg = 0.0
    sb = 0.0
    for r in range(x.shape[0]):
        sg += dy[r, j] * (x[r, j] - stats[r, 0]) * stats[r, 1]
        sb += dy[r, j]
    sums[0, j] = sg
    sums[1, j] = sb


# The row/column functions are also compiled as CUDA device functions (kernels.gpu.layernorm).
ROW_SOURCES = (_ln_row, _ln_grad_row, _ln_param_grad_col)
_row = cpu_jit(_ln_row)
_grad_row = cpu_jit(_ln_grad_row)
_param_col = cpu_jit(_ln_param_grad_col)


@cpu_jit
def _forward(x, gamma, beta, y, eps):
    for r in range(x.shape[0]):
        _row(x, gamma, beta, y, r, eps)


@cpu_jit
def _backward(x, gamma, dy, dx, stats, sums, eps, want_dx, accumulate):
    for r in range(x.shape[0]):
        _grad_row(x, gamma, dy, dx, stats, r, eps, want_dx, accumulate)
    for j in range(x.shape[1]):
        _param_col(x, dy, stats, sums, j)


def layernorm_forward_cpu(x: np.ndarray, gamma, beta, y: np.ndarray, n_axes: int = 1,
                          epsilon: float = 1e-3) -> None:
    """Normalise over the last `n_axes` axes. gamma/beta: arrays of those axes' shape, or None."""
    d = int(np.prod(x.shape[x.ndim - n_axes:], dtype=np.int64))
    g = np.ones(d, x.dtype) if gamma is None else np.ascontiguousarray(gamma).reshape(d)
    b = np.zeros(d, x.dtype) if beta is None else np.ascontiguousarray(beta).reshape(d)
    _forward(np.ascontiguousarray(x).reshape(-1, d), g, b, y.reshape(-1, d), epsilon)


def layernorm_backward_cpu(x: np.ndarray, gamma, dy: np.ndarray, dx: np.ndarray | None,
                           dgamma: np.ndarray | None, dbeta: np.ndarray | None, n_axes: int = 1,
                           epsilon: float = 1e-3,
                           accumulate: tuple[bool, bool, bool] = (False, False, False)) -> None:
    """Gradients of `layernorm_forward_cpu` (None buffers are skipped; accumulate per (dx, dgamma, dbeta))."""
    d = int(np.prod(x.shape[x.ndim - n_axes:], dtype=np.int64))
    g = np.ones(d, x.dtype) if gamma is None else np.ascontiguousarray(gamma).reshape(d)
    x2 = np.ascontiguousarray(x).reshape(-1, d)
    sums = np.zeros((2, d), np.float64)
    stats = np.empty((x2.shape[0], 2), np.float64)
    dx2 = dx.reshape(-1, d) if dx is not None else np.empty((1, d), x.dtype)
    _backward(x2, g, np.ascontiguousarray(dy).reshape(-1, d), dx2, stats, sums, epsilon, dx is not None,
              accumulate[0])
    for buf, row, acc in ((dgamma, sums[0], accumulate[1]), (dbeta, sums[1], accumulate[2])):
        if buf is not None:
            flat = buf.reshape(d)
            if acc:
                flat += row.astype(buf.dtype)
            else:
                flat[...] = row


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import layernorm as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
