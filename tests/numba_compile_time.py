"""Test helper: how long this pytest process spent compiling Numba functions, for the terminal summary.

CI runs on a clean checkout, so every kernel is compiled (Numba's on-disk cache starts empty) by the first
test that runs it; the summary line says how much of the suite's time that is. Only outermost compiles are
timed (a kernel compiling its callees counts once); Numba compiles under one global lock, so the events do
not interleave between threads. The summary also names the functions whose compiles took longest.
"""

from __future__ import annotations

import collections
import time

from numba.core import event

_state = {"depth": 0, "start": 0.0, "total": 0.0, "count": 0, "name": ""}
_by_function: collections.Counter = collections.Counter()  # "module.qualname" -> seconds (outermost)


class _Listener(event.Listener):
    def on_start(self, ev):
        if _state["depth"] == 0:
            _state["start"] = time.perf_counter()
            fn = getattr(ev.data.get("dispatcher"), "py_func", None)
            _state["name"] = f"{fn.__module__}.{fn.__qualname__}" if fn is not None else "?"
        _state["depth"] += 1

    def on_end(self, ev):
        _state["depth"] -= 1
        if _state["depth"] == 0:
            spent = time.perf_counter() - _state["start"]
            _state["total"] += spent
            _state["count"] += 1
            _by_function[_state["name"]] += spent


def install() -> None:
    event.register("numba:compile", _Listener())


def totals() -> tuple[int, float, dict[str, float]]:
    """(compiles, seconds, seconds by function) of this process so far."""
    return _state["count"], _state["total"], dict(_by_function)


def summary(workers: list[tuple[int, float, dict[str, float]]] | None = None, top: int = 8) -> str:
    """The lines for this process, or, under pytest-xdist, for the workers' ``totals()`` together: the
    count and seconds, then the `top` functions by seconds."""
    if workers:
        count, total = sum(w[0] for w in workers), sum(w[1] for w in workers)
        by_function = collections.Counter()
        for w in workers:
            by_function.update(w[2])
        head = f"numba compiles in the {len(workers)} test workers: {count}, {total:.0f} s"
    else:
        count, total, by_function = _state["count"], _state["total"], _by_function
        head = f"numba compiles in this process: {count}, {total:.0f} s"
    longest = "; ".join(f"{name} {seconds:.0f} s" for name, seconds in by_function.most_common(top)
                        if seconds >= 1.0)
    return head + (f"\n  longest: {longest}" if longest else "")
