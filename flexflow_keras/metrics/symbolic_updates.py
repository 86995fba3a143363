"""Metrics updated with symbolic tensors while a model's training loss is built (Keras 3's
``compute_loss`` override that calls ``self.loss_tracker.update_state(loss, sample_weight)``).

flexflow_keras traces ``compute_loss`` once, on symbolic tensors, into the step graph. While that trace
runs (`recording`), a metric's ``update_state`` called with symbolic tensors is not run: the call is
recorded (`record`) and its tensors become outputs of the step graph. Each step, every data-parallel
shard hands `Recorded.shard_stats` the values of those tensors for its rows; it replays the recorded
calls on them, in order, and returns what they added to the metrics' states (the deltas of
`metrics/user_state.py`), which the execution layer sums over the shards and merges: Keras' own rule for
metric variables across replicas, so a ``Mean`` is the weighted mean over every sample of the epoch. A
tensor without a batch dim (a loss already reduced over the batch) is the whole batch's value on every
shard; each shard counts it with its share of the batch, so the shards together count it once, as one
Keras step does. Outside such a trace (a metric updated in a layer's ``call()``) symbolic updates stay
refused (`metrics/base.py`).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import numpy as np

from flexflow_keras.metrics.base import Metric
from flexflow_keras.metrics.user_state import (
    LOCK,
    delta_of,
    flat_values,
    results_by_name,
    state_arrays,
    write_values,
)

_ACTIVE = threading.local()  # .calls: the list the current trace records into (None: not recording)


@dataclass(frozen=True)
class RecordedCall:
    """One ``metric.update_state(*args, **kwargs)``; `tensors` are the KerasTensor leaves of the
    arguments, which `args`/`kwargs` hold as `_Slot` placeholders."""

    metric: Metric
    args: tuple
    kwargs: dict
    tensors: tuple


class _Slot:
    def __init__(self, index: int):
        self.index = index


@contextlib.contextmanager
def recording():
    """While the body runs, symbolic ``update_state`` calls are recorded; yields the list they go to."""
    outer = getattr(_ACTIVE, "calls", None)
    calls: list[RecordedCall] = []
    _ACTIVE.calls = calls
    try:
        yield calls
    finally:
        _ACTIVE.calls = outer


def record(metric: Metric, args: tuple, kwargs: dict) -> bool:
    """Record a symbolic ``metric.update_state`` when a trace records (True); False otherwise."""
    calls = getattr(_ACTIVE, "calls", None)
    if calls is None:
        return False
    from flexflow_keras.ops.graph import KerasTensor

    tensors: list = []

    def slot(x):
        if isinstance(x, KerasTensor):
            tensors.append(x)
            return _Slot(len(tensors) - 1)
        if isinstance(x, (list, tuple)):
            return type(x)(slot(v) for v in x)
        if isinstance(x, dict):
            return {k: slot(v) for k, v in x.items()}
        return x

    calls.append(RecordedCall(metric, slot(tuple(args)), slot(dict(kwargs)), tuple(tensors)))
    return True


def _fill(x, values):
    if isinstance(x, _Slot):
        return values[x.index]
    if isinstance(x, (list, tuple)):
        return type(x)(_fill(v, values) for v in x)
    if isinstance(x, dict):
        return {k: _fill(v, values) for k, v in x.items()}
    return x


class Recorded(Metric):
    """The metrics a traced ``compute_loss`` updated, as one metric object of the step (see the module
    docstring). Its result is each metric's result by name; it resets them each epoch."""

    _ff_recorded = True

    def __init__(self, metrics: list[Metric]):
        super().__init__(name="compute_loss_metrics")
        self._ff_metrics = list(metrics)

    def _tracked(self) -> list:
        return list(self._ff_metrics)

    def _arrays(self) -> list:
        seen: set[int] = set()
        arrays = []
        for m in self._ff_metrics:
            if id(m) not in seen:
                seen.add(id(m))
                arrays += state_arrays(m, seen)
        return arrays

    def recorded_stats(self, calls, values: list[np.ndarray], batched: list[bool], share: float) -> np.ndarray:
        """What `calls` add to the metrics' states for one shard: `values` are the shard's values of the
        calls' tensors in order (a batched one: the shard's rows; another: the whole value, counted with
        the shard's `share` of the batch). The states are left as they were."""
        at, whole, rows = 0, [], []
        for call in calls:
            n = len(call.tensors)
            mine = values[at:at + n]
            (rows if all(batched[at:at + n]) else whole).append((call, mine))
            at += n

        def run(items):
            def go():
                for call, mine in items:
                    call.metric.update_state(*_fill(call.args, mine), **_fill(call.kwargs, mine))
            return go

        message = ("A metric updated in compute_loss() created metric state while it ran; create its variables "
                   "in __init__.")
        delta = delta_of(self._arrays, run(rows), message) if rows else 0.0
        if whole:
            delta = delta + share * delta_of(self._arrays, run(whole), message)
        return np.asarray(delta, np.float64) + np.zeros(flat_values(self._arrays()).size)

    def merge_shard(self, stats) -> None:
        stats = np.asarray(stats, np.float64)
        with LOCK:
            arrays = self._arrays()
            write_values(arrays, flat_values(arrays) + stats)

    def result(self) -> dict:
        return results_by_name(self._ff_metrics)

    def reset_state(self) -> None:
        for m in self._ff_metrics:
            m.reset_state()


def metrics_of(calls) -> list[Metric]:
    """The distinct metrics `calls` update, in the order of their first update."""
    out, seen = [], set()
    for call in calls:
        if id(call.metric) not in seen:
            seen.add(id(call.metric))
            out.append(call.metric)
    return out
