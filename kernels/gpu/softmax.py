"""CUDA twins of `kernels.softmax`: one warp per softmax vector of an (outer, n, inner) view.

The 32 lanes of a row stride over its n entries (consecutive lanes read consecutive entries when the
axis is the last one), and `kernels.gpu.rows.row_reduce` folds the max and the sum of exponentials, so a
row of any length costs n/32 steps per lane. Kernels are built per dtype (the shared fold buffer's).
"""

from __future__ import annotations

import math

from numba import cuda

from kernels.gpu import per_dtype, reshaped
from kernels.gpu.launch import WARP, WARPS_PER_BLOCK, launch_rows
from kernels.gpu.rows import row_reduce
from kernels.softmax import axis_view


def _build_forward(dt):
    zero = dt(0)

    @cuda.jit
    def forward(x, y, log):
        buf = cuda.shared.array((WARPS_PER_BLOCK, WARP), dt)
        w = cuda.threadIdx.y
        lane = cuda.threadIdx.x
        row = cuda.blockIdx.x * WARPS_PER_BLOCK + w
        outer, n, inner = x.shape
        live = row < outer * inner
        o = row // inner if live else 0
        k = row - o * inner if live else 0
        m = x[o, 0, k]
        for j in range(lane, n, WARP):
            m = max(m, x[o, j, k])
        m = row_reduce(buf, w, lane, m, True)
        s = zero
        for j in range(lane, n, WARP):
            s += math.exp(x[o, j, k] - m)
        s = row_reduce(buf, w, lane, s, False)
        if live:
            lse = m + math.log(s)
            for j in range(lane, n, WARP):
                y[o, j, k] = x[o, j, k] - lse if log else math.exp(x[o, j, k] - lse)

    return forward


def _build_backward(dt):
    zero = dt(0)

    @cuda.jit
    def backward(y, dy, dx, log, accumulate):
        buf = cuda.shared.array((WARPS_PER_BLOCK, WARP), dt)
        w = cuda.threadIdx.y
        lane = cuda.threadIdx.x
        row = cuda.blockIdx.x * WARPS_PER_BLOCK + w
        outer, n, inner = y.shape
        live = row < outer * inner
        o = row // inner if live else 0
        k = row - o * inner if live else 0
        s = zero
        for j in range(lane, n, WARP):
            s += dy[o, j, k] if log else dy[o, j, k] * y[o, j, k]
        s = row_reduce(buf, w, lane, s, False)
        if live:
            for j in range(lane, n, WARP):
                g = dy[o, j, k] - math.exp(y[o, j, k]) * s if log else y[o, j, k] * (dy[o, j, k] - s)
                dx[o, j, k] = dx[o, j, k] + g if accumulate else g

    return backward


def cuda_kernels() -> dict[str, object]:
    """The per-dtype kernels (see kernels.gpu.signatures)."""
    return {f"{name}[{dt}]": per_dtype(f"softmax_{name}", dt, build) for dt in ("float32", "float64")
            for name, build in (("forward", _build_forward), ("backward", _build_backward))}


def _as3(a, axis):
    return reshaped(a, axis_view(tuple(a.shape), axis))


def _run_forward(x, y, axis, log):
    outer, _, inner = axis_view(tuple(x.shape), axis)
    launch_rows(per_dtype("softmax_forward", x.dtype, _build_forward), outer * inner, _as3(x, axis),
                _as3(y, axis), log)


def _run_backward(y, dy, dx, axis, log, accumulate):
    outer, _, inner = axis_view(tuple(y.shape), axis)
    launch_rows(per_dtype("softmax_backward", y.dtype, _build_backward), outer * inner, _as3(y, axis),
                _as3(dy, axis), _as3(dx, axis), log, accumulate)


def softmax_forward_cuda(x, y, axis: int = -1) -> None:
    """Softmax along `axis` on device arrays."""
    _run_forward(x, y, axis, False)


def softmax_backward_cuda(y, dy, dx, axis: int = -1, accumulate: bool = False) -> None:
    """Softmax backward from the forward output."""
    _run_backward(y, dy, dx, axis, False, accumulate)


def log_softmax_forward_cuda(x, y, axis: int = -1) -> None:
    """Log-softmax along `axis` on device arrays."""
    _run_forward(x, y, axis, True)


def log_softmax_backward_cuda(y, dy, dx, axis: int = -1, accumulate: bool = False) -> None:
    """Log-softmax backward from the forward output."""
    _run_backward(y, dy, dx, axis, True, accumulate)
