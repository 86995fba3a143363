"""Test helper: how long this pytest process spent compiling Numba functions, for the terminal summary.

CI runs on a clean checkout, so every kernel is compiled (Numba's on-disk cache starts empty) by the first
test that runs it; the summary line says how much of the suite's time that is. Only outermost compiles are
timed (a kernel compiling its callees counts once); Numba compiles under one global lock, so the events do
not interleave between threads.
"""

from __future__ import annotations

import time

from numba.core import event

_state = {"depth": 0, "start": 0.0, "total": 0.0, "count": 0}


class _Listener(event.Listener):
    def on_start(self, ev):
        if _state["depth"] == 0:
            _state["start"] = time.perf_counter()
        _state["depth"] += 1

    def on_end(self, ev):
        _state["depth"] -= 1
        if _state["depth"] == 0:
            _state["total"] += time.perf_counter() - _state["start"]
            _state["count"] += 1


def install() -> None:
    event.register("numba:compile", _Listener())


def totals() -> tuple[int, float]:
    """(compiles, seconds) of this process so far."""
    return _state["count"], _state["total"]


def summary(workers: list[tuple[int, float]] | None = None) -> str:
    """The line for this process, or, under pytest-xdist, for the workers' ``totals()`` together."""
    if workers:
        count, total = sum(c for c, _ in workers), sum(t for _, t in workers)
        return f"numba compiles in the {len(workers)} test workers: {count}, {total:.0f} s"
    return f"numba compiles in this process: {_state['count']}, {_state['total']:.0f} s"
