"""Keras 3's ``compute_metrics`` override, run on each shard's NumPy batch.

A model that overrides ``compute_metrics(self, x, y, y_pred, sample_weight)`` gets one metric object in
place of its compiled ones: `ComputeMetricsHook`. The step's metrics task hands it the shard's inputs,
labels, predictions and sample weights, and it calls the override eagerly (``super().compute_metrics``
updates the compiled metrics; the override may change ``y_pred`` first, or update metrics it holds as
attributes). What the call changes in the state of every metric it can reach (the compiled ones and
those held by the model) is the shard's partial sum, as for a metric's own ``update_state``
(`metrics/user_state.py`): shards add up, as replicas do in Keras. The logs show the loss, the compiled
metrics and the held metrics, by name; the dict the override returns is not read, so a value it
computes without a metric (``metrics["loss"] += penalty``) does not reach the logs. Masks of masked
outputs are not applied to what the override sees.
"""

from __future__ import annotations

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


def held_metrics(model, compiled: list) -> list:
    """Metrics the model holds as attributes (``self.custom_metric = keras.metrics.Mean()``), not compiled."""
    ids = {id(m) for m in compiled}
    found = []
    for value in vars(model).values():
        items = value if isinstance(value, (list, tuple)) else value.values() if isinstance(value, dict) else [value]
        for m in items:
            if isinstance(m, Metric) and id(m) not in ids:
                ids.add(id(m))
                found.append(m)
    return found


def update_compiled(model, y, y_pred, sample_weight) -> dict:
    """The default ``Model.compute_metrics`` on NumPy values: update every compiled metric (per loss
    output; weighted metrics see the sample weights), then the current results."""
    lists = model.__dict__.get("_ff_compiled_metric_lists") or []
    several = len(lists) > 1
    ys = list(y) if several else [y]
    preds = list(y_pred) if several else [y_pred]
    sws = list(sample_weight) if several and isinstance(sample_weight, (list, tuple)) else [sample_weight] * len(lists)
    for metrics, yt, yp, sw in zip(lists, ys, preds, sws, strict=False):
        for m in metrics:
            weighted = getattr(m, "_ff_weighted", False) and sw is not None
            m.update_state(yt, yp, sw) if weighted else m.update_state(yt, yp)
    return model.get_metrics_result()


class ComputeMetricsHook(Metric):
    """Stands for a model's compiled metrics when the model overrides ``compute_metrics`` (see the
    module docstring); the metrics task calls `whole_batch_stats` with every output's values."""

    _ff_whole_batch = True

    def __init__(self, model, compiled_lists: list[list[Metric]]):
        super().__init__(name="compute_metrics")
        self._ff_model = model
        self._ff_lists = [list(ms) for ms in compiled_lists]
        model.__dict__["_ff_compiled_metric_lists"] = self._ff_lists

    def _tracked(self) -> list:
        compiled = [m for ms in self._ff_lists for m in ms]
        return compiled + held_metrics(self._ff_model, compiled)

    def _arrays(self) -> list:
        seen: set[int] = set()
        arrays = []
        for m in self._tracked():
            if id(m) not in seen:
                seen.add(id(m))
                arrays += state_arrays(m, seen)
        return arrays

    def whole_batch_stats(self, xs, ys, preds, sws) -> np.ndarray:
        """What the override changes in every tracked metric's state for this shard (the state is left
        as it was)."""
        model = self._ff_model
        x = xs[0] if len(xs) == 1 else list(xs)
        y, y_pred = (ys[0], preds[0]) if len(ys) == 1 else (list(ys), list(preds))
        sw = sws[0] if len(sws) == 1 else (None if all(s is None for s in sws) else list(sws))
        return delta_of(self._arrays, lambda: model.compute_metrics(x, y, y_pred, sw),
                        f"Model '{model.name}': its compute_metrics() created metric state while it ran; create the "
                        f"metrics it updates in __init__ (or compile them).")

    def merge_shard(self, stats) -> None:
        with LOCK:
            arrays = self._arrays()
            write_values(arrays, flat_values(arrays) + np.asarray(stats, np.float64))

    def result(self) -> dict:
        return results_by_name(self._tracked())

    def reset_state(self) -> None:
        for m in self._tracked():
            m.reset_state()
