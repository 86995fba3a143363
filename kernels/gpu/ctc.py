"""CUDA twin of `kernels.ctc`: one thread per sample, sharing the CPU row functions (the forward-backward
recursions are sequential over frames; samples are the parallel dimension, as in TensorFlow's CTC kernels)."""

from __future__ import annotations

from numba import cuda

from kernels.ctc import _ctc_row, _ctc_scale_row
from kernels.gpu import empty, launch, reshaped
from kernels.gpu.checks import buffer, note_bad, result
from kernels.gpu.embedding import int_ids
from kernels.gpu.scalar_source import device_function

_row = device_function(_ctc_row)
_scale_row = device_function(_ctc_scale_row)


@cuda.jit
def _forward(x, labels, label_len, logit_len, blank, probs, eps, loss, grad, alpha, beta, bad):
    r = cuda.grid(1)
    if r < x.shape[0]:
        if not _row(x, labels, label_len, logit_len, blank, probs, eps, loss, grad, alpha, beta, r):
            note_bad(bad, r)


@cuda.jit
def _backward(grad, g, dx, accumulate):
    r = cuda.grid(1)
    if r < grad.shape[0]:
        _scale_row(grad, g, dx, r, accumulate)


def ctc_forward_cuda(x, labels, label_len, logit_len, blank: int, probs: bool, eps: float, loss, grad,
                     check=None) -> int:
    """Device twin of `kernels.ctc.ctc_forward_cpu` (with a `kernels.gpu.checks.DeviceCheck`: the bad sample
    goes to it and -1 is returned without waiting for the device)."""
    n, frames = x.shape[0], x.shape[1]
    max_labels = labels.size // n if n else 0
    width = 2 * max_labels + 1
    alpha = empty((n, frames, width), x.dtype)
    beta = empty((n, frames, width), x.dtype)
    ids = reshaped(int_ids(labels), n, max_labels)
    bad = buffer(check)
    launch(_forward, n, x, ids, int_ids(label_len), int_ids(logit_len), int(blank), bool(probs),
           x.dtype.type(eps), reshaped(loss, n), grad, alpha, beta, bad)
    return result(check, bad, int_ids(labels), n)


def ctc_backward_cuda(grad, g, dx, accumulate: bool = False) -> None:
    """Device twin of `kernels.ctc.ctc_backward_cpu`."""
    launch(_backward, grad.shape[0], grad, reshaped(g, grad.shape[0]), dx, bool(accumulate))
