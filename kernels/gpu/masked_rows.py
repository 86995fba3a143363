"""CUDA twins of `kernels.masked_rows` (one thread per element of the (rows, channels) view)."""

from __future__ import annotations

from numba import cuda

from kernels.gpu import launch, reshaped


@cuda.jit
def _mask_rows(x, m, out):
    i = cuda.grid(1)
    if i < x.size:
        c = x.size // m.size
        out[i] = x[i] * m[i // c]


@cuda.jit
def _blend_rows(m, a, b, out, accumulate):
    i = cuda.grid(1)
    if i < out.size:
        c = out.size // m.size
        v = a[i] if m[i // c] != 0 else b[i]
        out[i] = out[i] + v if accumulate else v


def _flat(a):
    return reshaped(a, a.size)


def mask_rows_cuda(x, m, out) -> None:
    """Device twin of `kernels.masked_rows.mask_rows_cpu` (contiguous device arrays)."""
    launch(_mask_rows, x.size, _flat(x), _flat(m), _flat(out))


def blend_rows_cuda(m, a, b, out, accumulate: bool = False) -> None:
    """Device twin of `kernels.masked_rows.blend_rows_cpu`."""
    launch(_blend_rows, out.size, _flat(m), _flat(a), _flat(b), _flat(out), accumulate)
