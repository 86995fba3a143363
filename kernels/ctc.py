"""Connectionist temporal classification (CTC) loss kernels, with TensorFlow's conventions (tf.nn.ctc_loss, and
Keras' ctc_batch_cost / keras.ops.ctc_loss on top of it).

Per sample: the negative log-probability of its label sequence summed over every alignment to its frames
(Graves et al. 2006: the forward (alpha) and backward (beta) recursions over the labels with a blank between
and around them, in log space), and the loss's gradient for the frames' inputs, written in the same pass:
``softmax - occupancy / P``. The inputs are logits (softmax taken per frame) or, with `probs`, probabilities
whose ``log(p + eps)`` are the logits (Keras' ctc_batch_cost), the gradient then divided by ``p + eps``.
Repeated labels need a blank between them; frames past a sample's length and labels past its label length
are ignored (their gradient is 0); no valid alignment gives an infinite loss and the softmax as gradient, as
TensorFlow's. A label outside [0, classes) or equal to the blank, or a length out of range, marks the sample
bad (its loss NaN) and is reported.

One sample per call of `_ctc_row`: the CPU loops over the samples, the CUDA twin (kernels.gpu.ctc) runs one
thread per sample with the same row function. Scratch: alpha and beta, (samples, frames, 2 * labels + 1).
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit


def _ctc_row(x, labels, label_len, logit_len, blank, probs, eps, loss, grad, alpha, beta, r):
    n_frames, n_classes = x.shape[1], x.shape[2]
    big = 1.0 / 0.0
    ninf = -big
    t_len, l_len = logit_len[r], label_len[r]
    if t_len < 1 or t_len > n_frames or l_len < 0 or l_len > labels.shape[1]:
        loss[r] = big - big
        return False
    for i in range(l_len):
        c = labels[r, i]
        if c < 0 or c >= n_classes or c == blank:
            loss[r] = big - big
            return False
    s_len = 2 * l_len + 1
    # log-softmax of every frame's logits (or of log(p + eps)) into grad
    for t in range(t_len):
        m = ninf
        for k in range(n_classes):
            v = math.log(x[r, t, k] + eps) if probs else x[r, t, k]
            grad[r, t, k] = v
            m = max(m, v)
        z = 0.0
        for k in range(n_classes):
            z += math.exp(grad[r, t, k] - m)
        lz = m + math.log(z)
        for k in range(n_classes):
            grad[r, t, k] = grad[r, t, k] - lz
    # forward: alpha[t, s], the log-probability of the label prefix up to s after frame t
    for s in range(s_len):
        alpha[r, 0, s] = ninf
    alpha[r, 0, 0] = grad[r, 0, blank]
    if s_len > 1:
        alpha[r, 0, 1] = grad[r, 0, labels[r, 0]]
    for t in range(1, t_len):
        for s in range(s_len):
            c = blank if s % 2 == 0 else labels[r, (s - 1) // 2]
            a = alpha[r, t - 1, s]
            b = alpha[r, t - 1, s - 1] if s >= 1 else ninf
            d = ninf
            if s >= 3 and s % 2 == 1 and labels[r, (s - 1) // 2] != labels[r, (s - 3) // 2]:
                d = alpha[r, t - 1, s - 2]
            m = max(a, max(b, d))
            if m == ninf:
                alpha[r, t, s] = ninf
            else:
                alpha[r, t, s] = m + math.log(math.exp(a - m) + math.exp(b - m) + math.exp(d - m)) + grad[r, t, c]
    # backward: beta[t, s], the log-probability of the label suffix from s, frame t on (frame t included)
    last = t_len - 1
    for s in range(s_len):
        beta[r, last, s] = ninf
    beta[r, last, s_len - 1] = grad[r, last, blank]
    if s_len > 1:
        beta[r, last, s_len - 2] = grad[r, last, labels[r, l_len - 1]]
    for t in range(last - 1, -1, -1):
        for s in range(s_len):
            c = blank if s % 2 == 0 else labels[r, (s - 1) // 2]
            a = beta[r, t + 1, s]
            b = beta[r, t + 1, s + 1] if s + 1 < s_len else ninf
            d = ninf
            if s + 2 < s_len and s % 2 == 1 and labels[r, (s - 1) // 2] != labels[r, (s + 1) // 2]:
                d = beta[r, t + 1, s + 2]
            m = max(a, max(b, d))
            if m == ninf:
                beta[r, t, s] = ninf
            else:
                beta[r, t, s] = m + math.log(math.exp(a - m) + math.exp(b - m) + math.exp(d - m)) + grad[r, t, c]
    a = alpha[r, last, s_len - 1]
    b = alpha[r, last, s_len - 2] if s_len > 1 else ninf
    m = max(a, b)
    log_p = ninf if m == ninf else m + math.log(math.exp(a - m) + math.exp(b - m))
    loss[r] = -log_p
    # gradient for the logits: softmax minus each class's occupancy (sum over its label positions) / P
    for t in range(t_len):
        for s in range(s_len):
            c = blank if s % 2 == 0 else labels[r, (s - 1) // 2]
            alpha[r, t, s] = alpha[r, t, s] + beta[r, t, s] - grad[r, t, c]
        for k in range(n_classes):
            grad[r, t, k] = math.exp(grad[r, t, k])
        if log_p > ninf:
            for s in range(s_len):
                c = blank if s % 2 == 0 else labels[r, (s - 1) // 2]
                grad[r, t, c] = grad[r, t, c] - math.exp(alpha[r, t, s] - log_p)
        if probs:
            for k in range(n_classes):
                grad[r, t, k] = grad[r, t, k] / (x[r, t, k] + eps)
    for t in range(t_len, n_frames):
        for k in range(n_classes):
            grad[r, t, k] = 0.0
    return True


def _ctc_scale_row(grad, g, dx, r, accumulate):
    gr = g[r]
    for t in range(grad.shape[1]):
        for k in range(grad.shape[2]):
            v = gr * grad[r, t, k]
            dx[r, t, k] = dx[r, t, k] + v if accumulate else v


# The row functions are also compiled as CUDA device functions (kernels.gpu.ctc).
ROW_SOURCES = (_ctc_row, _ctc_scale_row)
_ctc_row_jit = cpu_jit(_ctc_row)
_ctc_scale_row_jit = cpu_jit(_ctc_scale_row)


@cpu_jit
def _ctc_forward(x, labels, label_len, logit_len, blank, probs, eps, loss, grad, alpha, beta):
    bad = -1
    for r in range(x.shape[0]):
        if not _ctc_row_jit(x, labels, label_len, logit_len, blank, probs, eps, loss, grad, alpha, beta, r) \
                and bad < 0:
            bad = r
    return bad


@cpu_jit
def _ctc_backward(grad, g, dx, accumulate):
    for r in range(grad.shape[0]):
        _ctc_scale_row_jit(grad, g, dx, r, accumulate)


def ctc_lengths(a, n: int) -> np.ndarray:
    """Per-sample lengths (n,) from an (n,) or (n, 1) array of any number dtype."""
    return np.ascontiguousarray(np.asarray(a).reshape(n), dtype=np.int64)


def ctc_forward_cpu(x: np.ndarray, labels: np.ndarray, label_len: np.ndarray, logit_len: np.ndarray, blank: int,
                    probs: bool, eps: float, loss: np.ndarray, grad: np.ndarray) -> int:
    """Per-sample CTC loss into `loss` (n,) and dloss/dx into `grad` (x's shape); returns the first bad
    sample or -1.

    Args:
        x: (n, frames, classes) logits, or probabilities with `probs`.
        labels: (n, max_labels) class ids (any number dtype; only the first label_len[i] are read).
        label_len, logit_len: (n,) or (n, 1) lengths. blank: the blank class (0 <= blank < classes).
        eps: added to probabilities before their log (`probs` only).
    """
    n, frames = x.shape[0], x.shape[1]
    width = 2 * labels.shape[1] + 1
    alpha = np.empty((n, frames, width), dtype=x.dtype)
    beta = np.empty((n, frames, width), dtype=x.dtype)
    ids = np.ascontiguousarray(labels, dtype=np.int64).reshape(n, -1)
    return int(_ctc_forward(np.ascontiguousarray(x), ids, ctc_lengths(label_len, n), ctc_lengths(logit_len, n),
                            int(blank), bool(probs), x.dtype.type(eps), loss.reshape(n), grad, alpha, beta))


def ctc_backward_cpu(grad: np.ndarray, g: np.ndarray, dx: np.ndarray, accumulate: bool = False) -> None:
    """``dx (+)= g[:, None, None] * grad``: the forward's per-sample gradient scaled by the upstream one."""
    _ctc_backward(grad, np.ascontiguousarray(g).reshape(grad.shape[0]), dx, bool(accumulate))


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import ctc as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
