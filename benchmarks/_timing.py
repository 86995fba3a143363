"""Timing helpers shared by the strategy and search benchmarks."""

from __future__ import annotations

import math
import time

MIN_STRETCH_S = 0.5  # the measured stretch of steps lasts at least this long, so one hiccup cannot swamp it


def head(x, n):
    """The first `n` samples of one input array or of each of a list of them."""
    return [a[:n] for a in x] if isinstance(x, list) else x[:n]


def fit_seconds(model, x, y, batch, steps=None) -> float:
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False, steps_per_epoch=steps)
    return time.perf_counter() - t0


def step_ms(model, x, y, batch, steps, tries: int = 2) -> float:
    """Steady-state ms per step: the difference between a fit of 2k steps and one of k steps, over k (a
    fit's fixed costs, checking the data and copying the weights back to the host at its end, cancel
    out). k is at least `steps` and large enough that k steps last MIN_STRETCH_S; each length is timed
    `tries` times, alternating, and keeps its fastest (a hiccup only ever adds time, and one in the
    shorter fit would otherwise make the difference small or even negative). The fits cycle over the
    batches of `x`, `y`."""
    est = fit_seconds(model, x, y, batch, steps) / steps
    k = max(steps, math.ceil(MIN_STRETCH_S / max(est, 1e-6)))
    short = long = math.inf
    for _ in range(tries):
        short = min(short, fit_seconds(model, x, y, batch, k))
        long = min(long, fit_seconds(model, x, y, batch, 2 * k))
    return (long - short) / k * 1e3
