"""The order a shuffle buffer gives: TensorFlow's ``Dataset.shuffle(buffer_size)`` semantics on indices.

`buffer_order(draws, size)`: the buffer starts with the first `size` indices; output `t` takes the slot
``floor(draws[t] * len(buffer))`` (`draws` uniform in [0, 1), one per output, drawn by the caller so the
order depends only on its generator); the next waiting index refills that slot, and once none waits the
last slot moves into it and the buffer shrinks (the drain). A plain loop, compiled: the data pipeline plans
a pass with it, over millions of indices when a repeat is endless.
"""

from __future__ import annotations

import numpy as np

from kernels._jit import cpu_jit


@cpu_jit
def _fill(draws, size, out):
    n = out.size
    buffer = np.arange(size, dtype=np.int64)
    live, waiting = size, size
    for t in range(n):
        j = int(draws[t] * live)
        out[t] = buffer[j]
        if waiting < n:
            buffer[j] = waiting
            waiting += 1
        else:
            live -= 1
            buffer[j] = buffer[live]


def buffer_order(draws: np.ndarray, size: int) -> np.ndarray:
    """The shuffle-buffer order of ``len(draws)`` indices with a buffer of `size` (1 <= size < len(draws))."""
    draws = np.ascontiguousarray(draws, dtype=np.float64)
    if draws.ndim != 1 or not 1 <= int(size) < draws.size:
        raise ValueError(f"buffer_order expects 1-D draws and 1 <= size < len(draws), received draws of shape "
                         f"{draws.shape} and size={size}.")
    out = np.empty(draws.size, np.int64)
    _fill(draws, int(size), out)
    return out
