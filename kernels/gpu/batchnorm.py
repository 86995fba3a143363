"""CUDA twins of `kernels.batchnorm` on (outer, C, inner) views (NHWC: inner = 1).

Per-channel sums are a two-pass tiled reduction: pass 1 gives each block a (TILE_C channels x TILE_R
rows) thread tile over one chunk of CHUNK rows; consecutive threads take consecutive channels, so NHWC
loads are coalesced, and the block folds its rows in shared memory into one partial per (chunk,
channel) in the data's dtype. Pass 2 folds the chunks' partials per channel, in float64, into the
statistics buffer the op keeps. No atomics: every run gives the same bits.

Per-channel vectors (mean, var, gamma, dgamma...) may be device arrays or host arrays; device ones stay on
the device (the scale / shift and 1/sqrt(var + eps) are per-channel kernels), host ones are copied up.
`batchnorm_moments` and `moving_average_update` are the host functions of `kernels.batchnorm`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.gpu import empty, launch, per_dtype, reshaped, to_device
from kernels.gpu.launch import _simulated, launch_blocks
from kernels.gpu.scalar_source import float32_constants
from kernels.softmax import axis_view

TILE_C, TILE_R = (8, 4) if _simulated() else (32, 8)  # pass-1 block: channels x rows
CHUNK = 64 if _simulated() else 1024  # rows folded by one pass-1 block


def _build_partials(dt):
    zero = dt(0)

    @cuda.jit
    def partials(x, a, mean, invstd, mode, part):
        # part[0 / 1, chunk, channel]: mode 0 (sum x, sum x*x); mode 1 (sum a*xhat, sum a), a = dy.
        s0 = cuda.shared.array((TILE_R, TILE_C), dt)
        s1 = cuda.shared.array((TILE_R, TILE_C), dt)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        c = cuda.blockIdx.x * TILE_C + tx
        chunk = cuda.blockIdx.y
        outer, n_c, inner = x.shape
        rows = outer * inner
        v0 = zero
        v1 = zero
        if c < n_c:
            for r in range(chunk * CHUNK + ty, min(rows, (chunk + 1) * CHUNK), TILE_R):
                o = r // inner
                k = r - o * inner
                v = x[o, c, k]
                if mode == 0:
                    v0 += v
                    v1 += v * v
                else:
                    g = a[o, c, k]
                    v0 += g * (v - mean[c]) * invstd[c]
                    v1 += g
        s0[ty, tx] = v0
        s1[ty, tx] = v1
        cuda.syncthreads()  # every row's partial is in shared memory
        if ty == 0 and c < n_c:
            for t in range(1, TILE_R):
                v0 += s0[t, tx]
                v1 += s1[t, tx]
            part[0, chunk, c] = v0
            part[1, chunk, c] = v1

    return partials


@cuda.jit
def _fold_chunks(part, out, acc0, acc1):
    # out[:, c] (+)= sum over chunks of part[:, chunk, c], in out's dtype (float64 for the statistics)
    c = cuda.grid(1)
    if c < part.shape[2]:
        t0 = out.dtype.type(0)
        t1 = t0
        for k in range(part.shape[1]):
            t0 += part[0, k, c]
            t1 += part[1, k, c]
        out[0, c] = out[0, c] + t0 if acc0 else t0
        out[1, c] = out[1, c] + t1 if acc1 else t1


@cuda.jit
@float32_constants
def _scale_shift(mean, var, gamma, beta, eps, scale, shift, invstd):
    # per channel: invstd = 1/sqrt(var + eps), scale = gamma * invstd, shift = beta - mean * scale
    c = cuda.grid(1)
    if c < scale.size:
        inv = 1.0 / math.sqrt(var[c] + eps)
        invstd[c] = inv
        scale[c] = inv * gamma[c]
        shift[c] = beta[c] - mean[c] * scale[c]


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
@float32_constants
def _input_grad(x, dy, mean, invstd, gamma, dgamma, dbeta, inv_count, training, dx, accumulate):
    i = cuda.grid(1)
    if i < x.size:
        outer, c, inner = x.shape
        o = i // (c * inner)
        j = (i // inner) % c
        k = i % inner
        xhat = (x[o, j, k] - mean[j]) * invstd[j]
        mb = dbeta[j] * inv_count if training else 0.0
        mg = dgamma[j] * inv_count if training else 0.0
        v = gamma[j] * invstd[j] * (dy[o, j, k] - mb - xhat * mg)
        dx[o, j, k] = dx[o, j, k] + v if accumulate else v


def cuda_kernels() -> dict[str, object]:
    """The per-dtype pass-1 kernels (see kernels.gpu.signatures)."""
    return {f"partials[{dt}]": per_dtype("bn_partials", dt, _build_partials) for dt in ("float32", "float64")}


def _as3(a, axis):
    return reshaped(a, axis_view(tuple(a.shape), axis))


def _vector(v, c, dtype, fill=0.0):
    """A per-channel device vector of `dtype`: device arrays of that dtype as they are, else copied up."""
    if v is not None and hasattr(v, "copy_to_host") and np.dtype(v.dtype) == np.dtype(dtype):
        return reshaped(v, c)
    if v is not None and hasattr(v, "copy_to_host"):
        host = v.copy_to_host()  # a dtype change on the device is not worth a kernel for C values
        return to_device(np.asarray(host, dtype).reshape(c))
    return to_device(np.full(c, fill, dtype) if v is None else np.asarray(v, dtype).reshape(c))


def _channel_sums(x3, a3, mean, invstd, mode, out, accumulate) -> None:
    c = x3.shape[1]
    rows = x3.shape[0] * x3.shape[2]
    chunks = max(1, math.ceil(rows / CHUNK))
    part = empty((2, chunks, c), x3.dtype)
    kernel = per_dtype("bn_partials", x3.dtype, _build_partials)
    launch_blocks(kernel, (math.ceil(c / TILE_C), chunks), x3, a3, mean, invstd, mode, part,
                  threads=(TILE_C, TILE_R))
    launch(_fold_chunks, c, part, out, accumulate[0], accumulate[1])


def batchnorm_stats_cuda(x, sums, axis: int = -1) -> None:
    """Fold per-channel ``[sum(x), sum(x*x)]`` into the (2, C) float64 device buffer `sums`."""
    x3 = _as3(x, axis)
    dummy = empty((1,), x3.dtype)
    _channel_sums(x3, x3, dummy, dummy, 0, sums, (True, True))


def _stats(x, mean, var, gamma, beta, epsilon, axis):
    c = tuple(x.shape)[axis]
    dt = x.dtype
    scale, shift, invstd = empty((c,), dt), empty((c,), dt), empty((c,), dt)
    launch(_scale_shift, c, _vector(mean, c, dt), _vector(var, c, dt), _vector(gamma, c, dt, 1.0),
           _vector(beta, c, dt), float(epsilon), scale, shift, invstd)
    return scale, shift, invstd


def batchnorm_forward_cuda(x, mean, var, gamma, beta, epsilon: float, y, axis: int = -1) -> None:
    """Normalise with per-channel statistics (host arrays or device vectors) on device arrays."""
    scale, shift, _ = _stats(x, mean, var, gamma, beta, epsilon, axis)
    launch(_normalise, x.size, _as3(x, axis), scale, shift, _as3(y, axis))


def batchnorm_backward_weights_cuda(x, dy, mean, var, epsilon: float, dgamma, dbeta, axis: int = -1,
                                    accumulate: tuple[bool, bool] = (False, False)) -> None:
    """This shard's dgamma = sum(dy * xhat), dbeta = sum(dy) into device buffers (None: skipped)."""
    c = tuple(x.shape)[axis]
    _, _, invstd = _stats(x, mean, var, None, None, epsilon, axis)
    out = empty((2, c), dgamma.dtype if dgamma is not None else x.dtype)
    _channel_sums(_as3(x, axis), _as3(dy, axis), _vector(mean, c, x.dtype), invstd, 1, out, (False, False))
    for buf, row, acc in ((dgamma, 0, accumulate[0]), (dbeta, 1, accumulate[1])):
        if buf is not None:
            launch(_copy_row, c, out, row, reshaped(buf, c), acc)


@cuda.jit
def _copy_row(src, row, dst, accumulate):
    c = cuda.grid(1)
    if c < dst.size:
        dst[c] = dst[c] + src[row, c] if accumulate else src[row, c]


def batchnorm_backward_inputs_cuda(x, dy, mean, var, gamma, epsilon: float, dgamma, dbeta, count: float,
                                   training: bool, dx, axis: int = -1, accumulate: bool = False) -> None:
    """Input gradient from the reduced dgamma/dbeta (see `batchnorm_backward_inputs_cpu`)."""
    c = tuple(x.shape)[axis]
    dt = x.dtype
    _, _, invstd = _stats(x, mean, var, None, None, epsilon, axis)
    launch(_input_grad, x.size, _as3(x, axis), _as3(dy, axis), _vector(mean, c, dt), invstd,
           _vector(gamma, c, dt, 1.0), _vector(dgamma, c, dt), _vector(dbeta, c, dt), 1.0 / float(count),
           training, _as3(dx, axis), accumulate)
