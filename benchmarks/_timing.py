"""Timing helpers shared by the strategy and search benchmarks."""

from __future__ import annotations

import time


def head(x, n):
    """The first `n` samples of one input array or of each of a list of them."""
    return [a[:n] for a in x] if isinstance(x, list) else x[:n]


def fit_seconds(model, x, y, batch) -> float:
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    return time.perf_counter() - t0


def step_ms(model, x, y, batch, steps) -> float:
    """Steady-state ms per step: the difference between a fit of 2 x `steps` and one of `steps` steps,
    over `steps` (a fit's fixed costs, checking the data and copying the weights back to the host at its
    end, cancel out). `x`, `y` hold 2 x `steps` batches."""
    short = fit_seconds(model, head(x, steps * batch), y[:steps * batch], batch)
    long = fit_seconds(model, x, y, batch)
    return (long - short) / steps * 1e3
