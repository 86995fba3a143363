"""Layer normalisation over the trailing axes, forward and backward.

The input is viewed as (rows, D) with D the product of the normalised (trailing) axes. Per row:
``y = (x - mean) / sqrt(var + eps) * gamma + beta`` with the biased variance, statistics in float64.
Backward recomputes the row statistics instead of keeping them:
``dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))`` with ``dxhat = dy * gamma``.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit


@cpu_jit
def _row_stats(x, r, eps):
    d = x.shape[1]
    s = 0.0
    for j in range(d):
        s += x[r, j]
    mean = s / d
    q = 0.0
    for j in range(d):
        v = x[r, j] - mean
        q += v * v
    return mean, 1.0 / math.sqrt(q / d + eps)


@cpu_jit
def _forward(x, gamma, beta, y, eps):
    rows, d = x.shape
    for r in range(rows):
        mean, inv = _row_stats(x, r, eps)
        for j in range(d):
            y[r, j] = (x[r, j] - mean) * inv * gamma[j] + beta[j]


@cpu_jit
def _backward(x, gamma, dy, dx, sums, eps, want_dx, accumulate):
    # sums[0] += dy * xhat (dgamma), sums[1] += dy (dbeta), over rows.
    rows, d = x.shape
    for r in range(rows):
        mean, inv = _row_stats(x, r, eps)
        a = 0.0
        b = 0.0
        for j in range(d):
            xhat = (x[r, j] - mean) * inv
            g = dy[r, j]
            sums[0, j] += g * xhat
            sums[1, j] += g
            gh = g * gamma[j]
            a += gh
            b += gh * xhat
        if want_dx:
            a /= d
            b /= d
            for j in range(d):
                xhat = (x[r, j] - mean) * inv
                v = inv * (dy[r, j] * gamma[j] - a - xhat * b)
                if accumulate:
                    dx[r, j] += v
                else:
                    dx[r, j] = v


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
    sums = np.zeros((2, d), np.float64)
    dx2 = dx.reshape(-1, d) if dx is not None else np.empty((1, d), x.dtype)
    _backward(np.ascontiguousarray(x).reshape(-1, d), g, np.ascontiguousarray(dy).reshape(-1, d), dx2, sums,
              epsilon, dx is not None, accumulate[0])
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
