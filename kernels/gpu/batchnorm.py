"""CUDA twins of `kernels.batchnorm` on (outer, C, inner) views: per-channel sums by one block per
channel with a shared-memory tree reduction, element-wise normalise and input-gradient kernels.

`batchnorm_moments` and `moving_average_update` run on the host: their inputs are per-channel vectors.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float64

from kernels.gpu import launch, to_device
from kernels.softmax import axis_view

REDUCE_THREADS = 128  # threads per channel block; a power of two for the tree reduction


@cuda.jit
def _channel_sums(x, a, mean, invstd, mode, out):
    # One block per channel j; mode 0: out[:, j] += (sum x, sum x^2); mode 1: (sum a*xhat, sum a), a = dy.
    s0 = cuda.shared.array(REDUCE_THREADS, float64)
    s1 = cuda.shared.array(REDUCE_THREADS, float64)
    j = cuda.blockIdx.x
    t = cuda.threadIdx.x
    outer, c, inner = x.shape
    v0 = 0.0
    v1 = 0.0
    for i in range(t, outer * inner, REDUCE_THREADS):
        v = float64(x[i // inner, j, i % inner])
        if mode == 0:
            v0 += v
            v1 += v * v
        else:
            g = float64(a[i // inner, j, i % inner])
            v0 += g * (v - mean[j]) * invstd[j]
            v1 += g
    s0[t] = v0
    s1[t] = v1
    cuda.syncthreads()  # every partial sum is in shared memory
    step = REDUCE_THREADS // 2
    while step > 0:
        if t < step:
            s0[t] += s0[t + step]
            s1[t] += s1[t + step]
        cuda.syncthreads()  # this tree level is complete before the next one reads it
        step //= 2
    if t == 0:
        out[0, j] += s0[0]
        out[1, j] += s1[0]


@cuda.jit
def _normalise(x, scale, shift, y):
    i = cuda.grid(1)
    if i < x.size:
        outer, c, inner = x.shape
        o = i // (c * inner)
        j = (i // inner) % c
        k = i % inner
        y[o, j, k] = x[o, j, k] * scale[j] + shift[j]


@cuda.jit
def _input_grad(x, dy, mean, invstd, gamma, dgamma, dbeta, count, training, dx, accumulate):
    i = cuda.grid(1)
    if i < x.size:
        outer, c, inner = x.shape
        o = i // (c * inner)
        j = (i // inner) % c
        k = i % inner
        xhat = (x[o, j, k] - mean[j]) * invstd[j]
        mb = dbeta[j] / count if training else 0.0
        mg = dgamma[j] / count if training else 0.0
        v = gamma[j] * invstd[j] * (dy[o, j, k] - mb - xhat * mg)
        dx[o, j, k] = dx[o, j, k] + v if accumulate else v


def _as3(a, axis):
    return a.reshape(axis_view(tuple(a.shape), axis))


def _host(v, c, fill=0.0):
    if v is None:
        return np.full(c, fill)
    if hasattr(v, "copy_to_host"):
        return v.copy_to_host().astype(np.float64)
    return np.asarray(v, np.float64)


def batchnorm_stats_cuda(x, sums, axis: int = -1) -> None:
    """Fold per-channel ``[sum(x), sum(x*x)]`` into the (2, C) float64 device buffer `sums`."""
    x3 = _as3(x, axis)
    dummy = to_device(np.zeros(1))
    _channel_sums[x3.shape[1], REDUCE_THREADS](x3, x3, dummy, dummy, 0, sums)


def batchnorm_forward_cuda(x, mean, var, gamma, beta, epsilon: float, y, axis: int = -1) -> None:
    """Normalise with per-channel statistics (host arrays or device vectors) on device arrays."""
    c = tuple(x.shape)[axis]
    inv = 1.0 / np.sqrt(_host(var, c) + epsilon)
    scale = inv * _host(gamma, c, 1.0)
    shift = _host(beta, c) - _host(mean, c) * scale
    launch(_normalise, x.size, _as3(x, axis), to_device(scale), to_device(shift), _as3(y, axis))


def batchnorm_backward_weights_cuda(x, dy, mean, var, epsilon: float, dgamma, dbeta, axis: int = -1,
                                    accumulate: tuple[bool, bool] = (False, False)) -> None:
    """This shard's dgamma = sum(dy * xhat), dbeta = sum(dy) into device buffers (None: skipped)."""
    c = tuple(x.shape)[axis]
    x3 = _as3(x, axis)
    out = to_device(np.zeros((2, c)))
    inv = 1.0 / np.sqrt(_host(var, c) + epsilon)
    _channel_sums[c, REDUCE_THREADS](x3, _as3(dy, axis), to_device(_host(mean, c)), to_device(inv), 1, out)
    sums = out.copy_to_host()
    for buf, row, acc in ((dgamma, sums[0], accumulate[0]), (dbeta, sums[1], accumulate[1])):
        if buf is not None:
            if acc:
                row = row + buf.copy_to_host()
            buf.copy_to_device(np.ascontiguousarray(row, dtype=buf.dtype))


def batchnorm_backward_inputs_cuda(x, dy, mean, var, gamma, epsilon: float, dgamma, dbeta, count: float,
                                   training: bool, dx, axis: int = -1, accumulate: bool = False) -> None:
    """Input gradient from the reduced dgamma/dbeta (see `batchnorm_backward_inputs_cpu`)."""
    c = tuple(x.shape)[axis]
    inv = 1.0 / np.sqrt(_host(var, c) + epsilon)
    launch(_input_grad, x.size, _as3(x, axis), _as3(dy, axis), to_device(_host(mean, c)), to_device(inv),
           to_device(_host(gamma, c, 1.0)), to_device(_host(dgamma, c)), to_device(_host(dbeta, c)),
           float(count), training, _as3(dx, axis), accumulate)


