"""Shared helpers of the CPU kernels: the Numba compilation settings, array-argument checks and the
unsigned offset of flat-array loops (`u64`).

Every CPU kernel compiles with ``nogil=True`` (so runtime workers run them in parallel threads) and
``cache=True`` (compiled once per machine). None is ``parallel``: parallelism comes from the runtime's
processors, one kernel call per shard.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def cpu_jit(fn):
    """Compile `fn` with the project's Numba settings (nogil, cached, single-threaded).

    ``error_model="numpy"``: a float division by zero gives inf/NaN like NumPy and TensorFlow instead of
    raising, and the loops stay vectorisable (no per-division check).
    """
    return njit(nogil=True, cache=True, error_model="numpy")(fn)


def flat_out(a: np.ndarray, who: str) -> np.ndarray:
    """A 1-D view of an output buffer; raises when it is not C-contiguous (a copy would be lost)."""
    if not a.flags.c_contiguous:
        raise ValueError(f"{who}: output buffers must be C-contiguous, received strides {a.strides} for "
                         f"shape {a.shape}. Pass np.ascontiguousarray buffers.")
    return a.reshape(-1)


def flat_in(a: np.ndarray) -> np.ndarray:
    """A 1-D view of an input (copied only when it is not C-contiguous)."""
    return np.ascontiguousarray(a).reshape(-1)


def rows_out(a: np.ndarray, cols: int, who: str) -> np.ndarray:
    """A 2-D (rows, cols) view of a C-contiguous output buffer."""
    return flat_out(a, who).reshape(-1, cols)


def rows_in(a: np.ndarray, cols: int) -> np.ndarray:
    """A 2-D (rows, cols) view of an input."""
    return np.ascontiguousarray(a).reshape(-1, cols)


def store(out: np.ndarray, value: np.ndarray, accumulate: bool) -> None:
    """``out += value`` or ``out[...] = value``."""
    if accumulate:
        np.add(out, value, out=out)
    else:
        np.copyto(out, value, casting="same_kind")


@njit(nogil=True, cache=True)
def u64(i):
    """`i` as an unsigned offset: Numba then indexes a flat array without its negative-index check,
    which otherwise kept short channel loops from vectorizing as well as they do through views (and a
    view per window or tile row costs a reference-count update).

    An ordinary call, not ``inline="always"``: LLVM inlines it into its callers all the same (the machine
    code of `_conv_winograd4.input_transform` has the same instructions either way, registers aside),
    while Numba's own inlining typed and lowered a copy at each of the kernels' 141 call sites: 2-4 s of
    the 33-36 s of CPU a cold cache spends compiling `benchmarks/conv_kernels.py`'s kernels."""
    return np.uint64(i)
