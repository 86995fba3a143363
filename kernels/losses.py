"""Per-sample loss kernels with their gradients w.r.t. the prediction (Keras 3 formulas).

Every loss reduces over the last axis, like Keras: y_pred (..., C) gives one loss per row of
``rows = prod(shape[:-1])``. Backward takes the per-row upstream gradient `g` (the loss wrapper's 1/N or
sample weights) and writes ``dp = g * dloss/dp``.

Formulas (eps = `backend.epsilon()`, 1e-7; clipping passes gradient on the closed interval, as TF's):
- categorical, probabilities: q = p / sum(p); loss = -sum(t * log(clip(q, eps, 1 - eps)))
- categorical, logits: loss = sum(t) * logsumexp(z) - sum(t * z)
- label smoothing (categorical): t <- t * (1 - ls) + ls / C; (binary): t <- t * (1 - ls) + ls / 2
- sparse, probabilities: loss = -log(clip(p_c)) + log(sum(clip(p)))  (TF's softmax-CE on log p)
- sparse, logits: loss = logsumexp(z) - z_c
- binary, probabilities: loss = -mean(t * log(clip(p)) + (1 - t) * log(1 - clip(p)))
- binary, logits: loss = mean(max(z, 0) - z * t + log1p(exp(-|z|)))
- mean squared / absolute error: mean((p - t)^2), mean(|p - t|)
"""

from __future__ import annotations

import functools
import math

import numpy as np

from kernels._jit import cpu_jit

CCE, CCE_LOGITS, BCE, BCE_LOGITS, MSE, MAE = range(6)
DENSE_LOSSES = {"categorical_crossentropy": (CCE, CCE_LOGITS), "binary_crossentropy": (BCE, BCE_LOGITS),
                "mean_squared_error": (MSE, MSE), "mean_absolute_error": (MAE, MAE)}


def _dense_row(t, p, loss, r, kind, ls, lo, hi):
    c = p.shape[1]
    cf = p.dtype.type(c)  # the class count in p's dtype: float32 rows stay float32
    acc = 0.0
    if kind == CCE:
        s = 0.0
        for j in range(c):
            s += p[r, j]
        for j in range(c):
            tj = t[r, j] * (1.0 - ls) + ls / cf
            acc -= tj * math.log(min(max(p[r, j] / s, lo), hi))
    elif kind == CCE_LOGITS:
        m = p[r, 0]
        for j in range(1, c):
            m = max(m, p[r, j])
        se = 0.0
        for j in range(c):
            se += math.exp(p[r, j] - m)
        lse = m + math.log(se)
        for j in range(c):
            tj = t[r, j] * (1.0 - ls) + ls / cf
            acc += tj * (lse - p[r, j])
    else:
        for j in range(c):
            tj = t[r, j]
            pj = p[r, j]
            if kind == BCE:
                tj = tj * (1.0 - ls) + 0.5 * ls
                q = min(max(pj, lo), hi)
                acc -= tj * math.log(q) + (1.0 - tj) * math.log(1.0 - q)
            elif kind == BCE_LOGITS:
                tj = tj * (1.0 - ls) + 0.5 * ls
                acc += max(pj, 0.0) - pj * tj + math.log1p(math.exp(-abs(pj)))
            elif kind == MSE:
                acc += (pj - tj) * (pj - tj)
            else:
                acc += abs(pj - tj)
        acc /= cf
    loss[r] = acc


def _dense_grad_row(t, p, g, dp, r, kind, ls, lo, hi, accumulate):
    c = p.shape[1]
    cf = p.dtype.type(c)  # the class count in p's dtype: float32 rows stay float32
    gr = g[r]
    if kind == CCE:
        s = 0.0
        for j in range(c):
            s += p[r, j]
        # q = p / s; dL/dq_j = -t_j / q_j inside the clip; dL/dp_k = (dL/dq_k - sum_j dL/dq_j q_j) / s
        dot = 0.0
        for j in range(c):
            q = p[r, j] / s
            if lo <= q <= hi:
                dot -= t[r, j] * (1.0 - ls) + ls / cf
        for k in range(c):
            q = p[r, k] / s
            dq = -(t[r, k] * (1.0 - ls) + ls / cf) / q if lo <= q <= hi else 0.0
            v = gr * (dq - dot) / s
            dp[r, k] = dp[r, k] + v if accumulate else v
    elif kind == CCE_LOGITS:
        # softmax(p) - t, as TensorFlow's softmax_cross_entropy_with_logits (Keras' TF backend): the exact
        # gradient of the loss is softmax(p) * sum(t) - t, the same for targets that sum to 1, but tf.keras
        # trains multi-hot targets with this one
        m = p[r, 0]
        for j in range(1, c):
            m = max(m, p[r, j])
        se = 0.0
        for j in range(c):
            se += math.exp(p[r, j] - m)
        for j in range(c):
            v = gr * (math.exp(p[r, j] - m) / se - (t[r, j] * (1.0 - ls) + ls / cf))
            dp[r, j] = dp[r, j] + v if accumulate else v
    else:
        for j in range(c):
            tj = t[r, j]
            pj = p[r, j]
            if kind == BCE:
                tj = tj * (1.0 - ls) + 0.5 * ls
                d = (-tj / pj + (1.0 - tj) / (1.0 - pj)) if lo <= pj <= hi else 0.0
            elif kind == BCE_LOGITS:
                tj = tj * (1.0 - ls) + 0.5 * ls
                e = math.exp(-abs(pj))
                d = (1.0 / (1.0 + e) if pj >= 0 else e / (1.0 + e)) - tj
            elif kind == MSE:
                d = 2.0 * (pj - tj)
            else:
                d = 1.0 if pj > tj else (-1.0 if pj < tj else 0.0)
            v = gr * d / cf
            dp[r, j] = dp[r, j] + v if accumulate else v


def _sparse_row(labels, p, loss, r, logits, lo, hi):
    # Returns False (and a NaN loss) when the label is out of range.
    c = p.shape[1]
    k = labels[r]
    if k < 0 or k >= c:
        loss[r] = math.nan
        return False
    if logits:
        m = p[r, 0]
        for j in range(1, c):
            m = max(m, p[r, j])
        se = 0.0
        for j in range(c):
            se += math.exp(p[r, j] - m)
        loss[r] = m + math.log(se) - p[r, k]
    else:
        s = 0.0
        for j in range(c):
            s += min(max(p[r, j], lo), hi)
        loss[r] = math.log(s) - math.log(min(max(p[r, k], lo), hi))
    return True


def _sparse_grad_row(labels, p, g, dp, r, logits, lo, hi, accumulate):
    c = p.shape[1]
    k = labels[r]
    gr = g[r]
    if logits:
        m = p[r, 0]
        for j in range(1, c):
            m = max(m, p[r, j])
        se = 0.0
        for j in range(c):
            se += math.exp(p[r, j] - m)
        for j in range(c):
            v = gr * (math.exp(p[r, j] - m) / se - (1.0 if j == k else 0.0))
            dp[r, j] = dp[r, j] + v if accumulate else v
    else:
        s = 0.0
        for j in range(c):
            s += min(max(p[r, j], lo), hi)
        for j in range(c):
            pj = p[r, j]
            inside = lo <= pj <= hi
            d = 1.0 / s if inside else 0.0
            if j == k and inside:
                d -= 1.0 / pj
            v = gr * d
            dp[r, j] = dp[r, j] + v if accumulate else v


# The row functions are also compiled as CUDA device functions (kernels.gpu.losses).
ROW_SOURCES = (_dense_row, _dense_grad_row, _sparse_row, _sparse_grad_row)
_dense_row_jit = cpu_jit(_dense_row)
_dense_grad_row_jit = cpu_jit(_dense_grad_row)
_sparse_row_jit = cpu_jit(_sparse_row)
_sparse_grad_row_jit = cpu_jit(_sparse_grad_row)


@cpu_jit
def _dense_forward(t, p, loss, kind, ls, lo, hi):
    for r in range(p.shape[0]):
        _dense_row_jit(t, p, loss, r, kind, ls, lo, hi)


@cpu_jit
def _dense_backward(t, p, g, dp, kind, ls, lo, hi, accumulate):
    for r in range(p.shape[0]):
        _dense_grad_row_jit(t, p, g, dp, r, kind, ls, lo, hi, accumulate)


@cpu_jit
def _sparse_forward(labels, p, loss, logits, lo, hi):
    bad = -1
    for r in range(p.shape[0]):
        if not _sparse_row_jit(labels, p, loss, r, logits, lo, hi) and bad < 0:
            bad = r
    return bad


@cpu_jit
def _sparse_backward(labels, p, g, dp, logits, lo, hi, accumulate):
    for r in range(p.shape[0]):
        _sparse_grad_row_jit(labels, p, g, dp, r, logits, lo, hi, accumulate)


@functools.lru_cache(maxsize=64)
def _clip_bounds(dtype: str, epsilon: float) -> tuple[float, float]:
    lo = np.asarray(epsilon, dtype=dtype)
    return float(lo), float(np.asarray(1, dtype=dtype) - lo)


def clip_bounds(dtype, epsilon: float) -> tuple[float, float]:
    """The clip interval [eps, 1 - eps] as the prediction's dtype rounds it (TF clips in that dtype)."""
    return _clip_bounds(str(dtype), float(epsilon))


def _rows(a: np.ndarray, c: int) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1, c)


def loss_forward_cpu(kind: int, y_true: np.ndarray, y_pred: np.ndarray, loss: np.ndarray,
                     label_smoothing: float = 0.0, epsilon: float = 1e-7) -> None:
    """Per-row loss of one of the dense losses (`CCE`, `CCE_LOGITS`, `BCE`, `BCE_LOGITS`, `MSE`, `MAE`).

    Args:
        kind: the loss code. y_true: targets of y_pred's size (cast to y_pred's dtype by the caller).
        y_pred: (..., C) predictions or logits. loss: preallocated (...,) output.
        label_smoothing: Keras' label_smoothing (crossentropies only). epsilon: the clip epsilon.
    """
    c = y_pred.shape[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    _dense_forward(_rows(y_true, c), _rows(y_pred, c), loss.reshape(-1), kind, label_smoothing, lo, hi)


def loss_backward_cpu(kind: int, y_true: np.ndarray, y_pred: np.ndarray, g: np.ndarray, dp: np.ndarray,
                      label_smoothing: float = 0.0, epsilon: float = 1e-7, accumulate: bool = False) -> None:
    """``dp (+)= g * dloss/dy_pred`` for `loss_forward_cpu`; `g` has the loss's shape."""
    c = y_pred.shape[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    _dense_backward(_rows(y_true, c), _rows(y_pred, c), np.ascontiguousarray(g).reshape(-1),
                    dp.reshape(-1, c), kind, label_smoothing, lo, hi, accumulate)


def sparse_loss_forward_cpu(labels: np.ndarray, y_pred: np.ndarray, loss: np.ndarray, from_logits: bool,
                            epsilon: float = 1e-7) -> int:
    """Sparse categorical crossentropy per row; returns the first row whose label is out of range, or -1.

    Args:
        labels: integer class ids, one per row of y_pred (any int dtype).
        y_pred: (..., C) probabilities or logits. loss: preallocated (...,) output.
    """
    c = y_pred.shape[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    ids = np.ascontiguousarray(labels).reshape(-1).astype(np.int64, copy=False)
    return int(_sparse_forward(ids, _rows(y_pred, c), loss.reshape(-1), from_logits, lo, hi))


def sparse_loss_backward_cpu(labels: np.ndarray, y_pred: np.ndarray, g: np.ndarray, dp: np.ndarray,
                             from_logits: bool, epsilon: float = 1e-7, accumulate: bool = False) -> None:
    """``dp (+)= g * dloss/dy_pred`` for `sparse_loss_forward_cpu`."""
    c = y_pred.shape[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    ids = np.ascontiguousarray(labels).reshape(-1).astype(np.int64, copy=False)
    _sparse_backward(ids, _rows(y_pred, c), np.ascontiguousarray(g).reshape(-1), dp.reshape(-1, c),
                     from_logits, lo, hi, accumulate)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import losses as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
