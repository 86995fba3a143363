"""Row-masked element-wise helpers for ops that take a Keras mask over every axis but the last (masked
BatchNormalization): a tensor viewed as (rows, channels) with one mask value per row.

`mask_rows`: ``out = x * m[row]`` (the masked values, for masked batch statistics); `blend_rows`:
``out (+)= a where m[row] != 0 else b`` (the input gradient of kept and of masked rows).
"""

from __future__ import annotations

import numpy as np

from kernels._jit import store


def _rows(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    return a.reshape(m.size, a.size // max(m.size, 1))


def mask_rows_cpu(x: np.ndarray, m: np.ndarray, out: np.ndarray) -> None:
    """``out = x * m`` with `m` of x's shape but the last axis (nonzero: keep)."""
    np.multiply(_rows(x, m), m.reshape(-1, 1).astype(x.dtype, copy=False), out=_rows(out, m))


def blend_rows_cpu(m: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool = False) -> None:
    """``out (+)= a`` on the rows where `m` is nonzero, ``b`` elsewhere."""
    keep = m.reshape(-1, 1) != 0
    store(_rows(out, m), np.where(keep, _rows(a, m), _rows(b, m)), accumulate)


def empty_like(a):
    """An uninitialised array of a's shape and dtype on a's side (host, or device for a device array)."""
    if hasattr(a, "copy_to_host"):
        from kernels.gpu import empty

        return empty(a.shape, a.dtype)
    return np.empty(a.shape, a.dtype)


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import masked_rows as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
