"""CUDA twins of `kernels.losses`: one thread per row, sharing the CPU row functions."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import launch, reshaped
from kernels.gpu.checks import buffer, note_bad, result
from kernels.gpu.embedding import int_ids
from kernels.gpu.scalar_source import device_function
from kernels.losses import _dense_grad_row, _dense_row, _sparse_grad_row, _sparse_row, clip_bounds

_dense = device_function(_dense_row)
_dense_grad = device_function(_dense_grad_row)
_sparse = device_function(_sparse_row)
_sparse_grad = device_function(_sparse_grad_row)


@cuda.jit
def _dense_forward(t, p, loss, kind, ls, lo, hi):
    r = cuda.grid(1)
    if r < p.shape[0]:
        _dense(t, p, loss, r, kind, ls, lo, hi)


@cuda.jit
def _dense_backward(t, p, g, dp, kind, ls, lo, hi, accumulate):
    r = cuda.grid(1)
    if r < p.shape[0]:
        _dense_grad(t, p, g, dp, r, kind, ls, lo, hi, accumulate)


@cuda.jit
def _sparse_forward(labels, p, loss, logits, lo, hi, bad):
    r = cuda.grid(1)
    if r < p.shape[0]:
        if not _sparse(labels, p, loss, r, logits, lo, hi):
            note_bad(bad, r)


@cuda.jit
def _sparse_backward(labels, p, g, dp, logits, lo, hi, accumulate):
    r = cuda.grid(1)
    if r < p.shape[0]:
        _sparse_grad(labels, p, g, dp, r, logits, lo, hi, accumulate)


def _rows(a, c):
    return reshaped(a, a.size // c, c)


def loss_forward_cuda(kind: int, y_true, y_pred, loss, label_smoothing: float = 0.0,
                      epsilon: float = 1e-7) -> None:
    """Per-row dense loss on device arrays (see `loss_forward_cpu`)."""
    c = tuple(y_pred.shape)[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    p = _rows(y_pred, c)
    launch(_dense_forward, p.shape[0], _rows(y_true, c), p, reshaped(loss, p.shape[0]), kind, label_smoothing,
           lo, hi)


def loss_backward_cuda(kind: int, y_true, y_pred, g, dp, label_smoothing: float = 0.0, epsilon: float = 1e-7,
                       accumulate: bool = False) -> None:
    """``dp (+)= g * dloss/dy_pred`` on device arrays."""
    c = tuple(y_pred.shape)[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    p = _rows(y_pred, c)
    launch(_dense_backward, p.shape[0], _rows(y_true, c), p, reshaped(g, p.shape[0]), _rows(dp, c), kind,
           label_smoothing, lo, hi, accumulate)


def sparse_loss_forward_cuda(labels, y_pred, loss, from_logits: bool, epsilon: float = 1e-7,
                             check=None) -> int:
    """Sparse categorical crossentropy on device arrays; returns the first bad row or -1 (with a
    `kernels.gpu.checks.DeviceCheck`: the bad row goes to it, -1 without waiting for the device)."""
    c = tuple(y_pred.shape)[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    p = _rows(y_pred, c)
    rows = p.shape[0]
    bad, ids = buffer(check), int_ids(labels)
    launch(_sparse_forward, rows, ids, p, reshaped(loss, rows), from_logits, lo, hi, bad)
    return result(check, bad, ids, rows)


def sparse_loss_backward_cuda(labels, y_pred, g, dp, from_logits: bool, epsilon: float = 1e-7,
                              accumulate: bool = False) -> None:
    """``dp (+)= g * dloss/dy_pred`` for the sparse crossentropy on device arrays."""
    c = tuple(y_pred.shape)[-1]
    lo, hi = clip_bounds(y_pred.dtype, epsilon)
    p = _rows(y_pred, c)
    rows = p.shape[0]
    launch(_sparse_backward, rows, int_ids(labels), p, reshaped(g, rows), _rows(dp, c), from_logits, lo, hi,
           accumulate)


