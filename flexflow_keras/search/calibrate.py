"""Calibrating the simulator against measured steps of the program being searched.

Kernel times are measured op by op, but a training step on this process's runtime also pays, per point
task, Python that no kernel measurement sees (the launch's binding, the task body's prologue and its
op's dispatch, all under the interpreter lock), and kernels running at once on a node's cores slow each
other (shared caches and memory bandwidth). Two anchors fix both: a measured data-parallel step on one
processor fixes the per-task Python cost (the only unknown there), and a measured data-parallel step on
every processor then fixes the slow-down of concurrent kernels. Each is found by bisection, the
simulated step time being monotone in it. The other strategies are then predicted, not fitted.
"""

from __future__ import annotations

import logging

log = logging.getLogger("flexflow_keras")


def _bisect(f, lo: float, hi: float, target: float, iters: int = 30) -> float:
    """x in [lo, hi] with f(x) ~ target for an increasing f (clamped to the ends)."""
    if f(lo) >= target:
        return lo
    if f(hi) <= target:
        return hi
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def calibrate(sim, single, single_time: float, spread=None, spread_time: float | None = None) -> dict:
    """Fit the cost model's `py_task` to `single` (measured `single_time` s) and its `contention` to
    `spread` (measured `spread_time` s). Returns the fitted values and the residual errors."""
    costs = sim.costs

    def with_py(x: float) -> float:
        costs.py_task = x
        sim._blocks.clear()
        return sim.simulate(single).step_time

    costs.contention = 1.0
    py = _bisect(with_py, 0.0, 2e-3, single_time)
    costs.py_task = py
    sim._blocks.clear()
    out = {"py_task": py, "single_error": (sim.simulate(single).step_time - single_time) / single_time}
    if spread is not None and spread_time is not None:
        def with_k(k: float) -> float:
            costs.contention = k
            sim._blocks.clear()
            return sim.simulate(spread).step_time

        k = _bisect(with_k, 1.0, 4.0, spread_time)
        costs.contention = k
        sim._blocks.clear()
        out["contention"] = k
        out["spread_error"] = (sim.simulate(spread).step_time - spread_time) / spread_time
    return out  # the search's table notes the fitted figures
