"""Keras 3's ``compute_metrics`` override, run on each shard's NumPy batch.

A model that overrides ``compute_metrics(self, x, y, y_pred, sample_weight)`` gets one metric object in
place of its compiled ones: `ComputeMetricsHook`. The step's metrics task hands it the shard's inputs,
labels, predictions, sample weights and batch loss, and it calls the override eagerly
(``super().compute_metrics`` updates the compiled metrics and returns them with the "loss" entry; the
override may change ``y_pred`` first, or update metrics it holds as attributes). What the call changes in
the state of every metric it can reach (the compiled ones and those held by the model) is the shard's
partial sum, as for a metric's own ``update_state`` (`metrics/user_state.py`): shards add up, as
replicas do in Keras. From the dict it returns, the logs take, as Keras' do: every metric's result by
name; what it added to "loss" (``metrics["loss"] += penalty``), added to the logged loss; and its other
entries (``metrics["penalty"] = p``), averaged over the shards. As in Keras, only the keys it returns are
logged: a dict without "loss" logs no loss (nor each output's), and a metric it leaves out is not shown. Masks of masked outputs are not applied to
what the override sees.
"""

from __future__ import annotations

import threading

import numpy as np

from flexflow_keras.metrics.base import Mean, Metric
from flexflow_keras.metrics.user_state import (
    LOCK,
    delta_of,
    flat_values,
    results_by_name,
    state_arrays,
    write_values,
)

_SHARD = threading.local()  # .loss: the batch loss of the shard whose compute_metrics runs on this thread


def shard_loss() -> float | None:
    """Inside a step's compute_metrics override: the shard's batch loss (its "loss" entry); else None."""
    return getattr(_SHARD, "loss", None)


def held_metrics(model, compiled: list) -> list:
    """Metrics the model holds as attributes (``self.custom_metric = keras.metrics.Mean()``), not compiled
    (nor its loss tracker, which `ModelMetrics.metrics` lists first)."""
    ids = {id(m) for m in compiled}
    found = []
    for key, value in vars(model).items():
        if key == "_ff_loss_tracker":
            continue
        items = value if isinstance(value, (list, tuple)) else value.values() if isinstance(value, dict) else [value]
        for m in items:
            if isinstance(m, Metric) and id(m) not in ids:
                ids.add(id(m))
                found.append(m)
    return found


class LossTracker(Mean):
    """Keras 3's loss tracker (a Mean named "loss"), first in ``model.metrics``. Inside a step's
    ``compute_metrics`` override its result is the shard's batch loss, the "loss" the logs show, so an
    override returning ``{m.name: m.result() for m in self.metrics}`` logs the loss unchanged, as in Keras,
    and one leaving it out logs none; elsewhere (an eager train_step updates it) it is a plain Mean."""

    def result(self) -> float:
        loss = getattr(_SHARD, "loss", None)
        return super().result() if loss is None else loss


def loss_tracker(model) -> LossTracker:
    """The compiled model's loss tracker (made fresh by each compile)."""
    tracker = model.__dict__.get("_ff_loss_tracker")
    if tracker is None:
        tracker = model.__dict__["_ff_loss_tracker"] = LossTracker(name="loss")
    return tracker


def eager_loss_tracker(model):
    """Keras 3's loss tracker (a Mean named "loss", made fresh by each compile) of a compiled model whose own
    train_step or test_step runs eagerly (models/eager_fit.py): first in ``model.metrics``, so a step returning
    ``{m.name: m.result() for m in self.metrics}`` logs "loss", as in Keras. None for a model not compiled."""
    if not getattr(model, "compiled", False):
        return None
    return loss_tracker(model)


def update_deprecated(model, y, y_pred, sample_weight) -> None:
    """Keras 3's ``self.compiled_metrics.update_state(y, y_pred)`` on values, as its TensorFlow backend's
    shim: every metric of ``model.metrics`` is updated, the compiled ones with (y, y_pred), any other Mean
    with y_pred alone (the loss tracker among them: the "loss" such a step logs is the predictions' mean, not
    the loss), the rest with (y, y_pred)."""
    from flexflow_keras.metrics.base import Mean

    update_compiled(model, y, y_pred, sample_weight)
    compiled = {id(m) for ms in model.__dict__.get("_ff_compiled_metric_lists") or
                getattr(model, "_metric_objects", None) or [] for m in ms}
    for m in model.metrics:
        if id(m) in compiled:
            continue
        if isinstance(m, Mean):
            m.update_state(y_pred, sample_weight)
        else:
            m.update_state(y, y_pred, sample_weight)


def update_compiled(model, y, y_pred, sample_weight) -> dict:
    """The default ``Model.compute_metrics`` on NumPy values: update every compiled metric (per loss
    output; weighted metrics see the sample weights), then the current results."""
    lists = model.__dict__.get("_ff_compiled_metric_lists") or eager_compiled_lists(model, y, y_pred)
    several = len(lists) > 1
    ys = list(y) if several else [y]
    preds = list(y_pred) if several else [y_pred]
    sws = list(sample_weight) if several and isinstance(sample_weight, (list, tuple)) else [sample_weight] * len(lists)
    for metrics, yt, yp, sw in zip(lists, ys, preds, sws, strict=False):
        for m in metrics:
            weighted = getattr(m, "_ff_weighted", False) and sw is not None
            m.update_state(yt, yp, sw) if weighted else m.update_state(yt, yp)
    loss = getattr(_SHARD, "loss", None)  # inside a step: this shard's batch loss, as Keras' "loss" entry
    compiled = [m for ms in lists for m in ms]
    # Keras 3's get_metrics_result: every metric of the model, those it holds as attributes too
    return ({} if loss is None else {"loss": loss}) | results_by_name(compiled + held_metrics(model, compiled))


def eager_compiled_lists(model, y, y_pred) -> list:
    """The compiled metrics of a model whose own train_step runs eagerly (models/eager_fit.py), built at
    its first ``compiled_metrics.update_state(y, y_pred)`` from those values ('accuracy' resolves
    against the compiled loss and their shapes, as in fit); [] when compile() was given no metrics."""
    from flexflow_keras import losses as losses_mod
    from flexflow_keras import metrics as metrics_mod

    idents = getattr(model, "_metrics_arg", None)
    if not idents or getattr(model, "_metric_objects", None):
        return getattr(model, "_metric_objects", None) or []
    if isinstance(idents, dict) or isinstance(y_pred, list | tuple):
        raise ValueError(f"Model '{model.name}': compiled_metrics.update_state in a train_step that runs eagerly "
                         f"supports one output with a list of metrics; update the metric objects directly.")
    loss = getattr(model, "_loss_arg", None)
    loss = losses_mod.get(loss) if loss is not None and not isinstance(loss, list | dict) else None
    lists = [[metrics_mod.resolve_metric(ident, loss, np.shape(y), np.shape(y_pred))
              for ident in (idents if isinstance(idents, list | tuple) else [idents])]]
    model.__dict__["_ff_compiled_metric_lists"] = lists
    return lists


class ComputeMetricsHook(Metric):
    """Stands for a model's compiled metrics when the model overrides ``compute_metrics`` (see the
    module docstring); the metrics task calls `whole_batch_stats` with every output's values."""

    _ff_whole_batch = True

    def __init__(self, model, compiled_lists: list[list[Metric]]):
        super().__init__(name="compute_metrics")
        self._ff_model = model
        self._ff_lists = [list(ms) for ms in compiled_lists]
        model.__dict__["_ff_compiled_metric_lists"] = self._ff_lists
        self._ff_more: list[Metric] = []  # metrics its compute_loss updates (`add_tracked`)
        self._ff_extra_keys: list[str] | None = None  # returned entries that are no metric's (first call's)
        self._ff_returned: list[str] | None = None  # every key the override returned (first call's): the logs'
        self._ff_extras: dict[str, float] = {}
        self.loss_offset = 0.0  # what the override added to the "loss" entry (RunningMeans.logs adds it)

    def add_tracked(self, metrics) -> None:
        """Track `metrics` too: those the model's compute_loss updates (metrics/symbolic_updates.py), held
        or not (keras.io's masked language model keeps its tracker at module level)."""
        self._ff_more += [m for m in metrics if all(m is not t for t in self._ff_more)]

    def _tracked(self) -> list:
        compiled = [m for ms in self._ff_lists for m in ms]
        held = held_metrics(self._ff_model, compiled)
        return compiled + held + [m for m in self._ff_more if all(m is not t for t in compiled + held)]

    def _arrays(self) -> list:
        seen: set[int] = set()
        arrays = []
        for m in self._tracked():
            if id(m) not in seen:
                seen.add(id(m))
                arrays += state_arrays(m, seen)
        return arrays

    def whole_batch_stats(self, xs, ys, preds, sws, loss: float | None = None) -> np.ndarray:
        """What the override changes in every tracked metric's state for this shard (the state is left
        as it was), then `_tail`'s entries; `loss` is the shard's batch loss (the "loss" entry it sees)."""
        model = self._ff_model
        x = xs[0] if len(xs) == 1 else list(xs)
        y, y_pred = (ys[0], preds[0]) if len(ys) == 1 else (list(ys), list(preds))
        sw = sws[0] if len(sws) == 1 else (None if all(s is None for s in sws) else list(sws))
        returned = {}

        def run():
            _SHARD.loss = loss
            try:
                returned.update(model.compute_metrics(x, y, y_pred, sw) or {})
            finally:
                _SHARD.loss = None

        delta = delta_of(self._arrays, run, f"Model '{model.name}': its compute_metrics() created metric state "
                                            f"while it ran; create the metrics it updates in __init__ (or compile them).")
        return np.concatenate([delta, self._tail(returned, loss)])

    def _tail(self, returned: dict, loss: float) -> np.ndarray:
        """[1 (a shard count), the override's change to "loss", its other entries that are no metric's]."""
        names = {m.name for m in self._tracked()}
        with LOCK:
            if self._ff_extra_keys is None:
                self._ff_extra_keys = [k for k in returned if k != "loss" and k not in names]
                self._ff_returned = list(returned)
            keys = self._ff_extra_keys
        # a "loss" that is a metric's result (a loss tracker) is logged as that metric, not as a change
        offset = float(np.mean(returned["loss"])) - loss if "loss" in returned and loss is not None and \
            "loss" not in names else 0.0
        return np.array([1.0, offset] + [float(np.mean(returned[k])) if k in returned else 0.0 for k in keys])

    def merge_shard(self, stats) -> None:
        stats = np.asarray(stats, np.float64)
        with LOCK:
            arrays = self._arrays()
            n = flat_values(arrays).size
            write_values(arrays, flat_values(arrays) + stats[:n])
            count, offset, extras = stats[n], stats[n + 1], stats[n + 2:]
            self.loss_offset = float(offset / count)
            self._ff_extras = dict(zip(self._ff_extra_keys or [], (extras / count).tolist(), strict=True))

    @property
    def logs_loss(self) -> bool:
        """Whether the logs show the loss: Keras 3's logs are the dict the override returns, so a
        "loss" key it leaves out (and each output's loss with it) is not logged (RunningMeans.logs)."""
        return self._ff_returned is None or "loss" in self._ff_returned

    def result(self) -> dict:
        """The results of the entries the override returned (of every tracked metric before its first call)."""
        results = results_by_name(self._tracked()) | self._ff_extras
        if self._ff_returned is None:
            return results
        return {k: v for k, v in results.items() if k in self._ff_returned}

    def reset_state(self) -> None:
        for m in self._tracked():
            m.reset_state()
        self._ff_extras, self.loss_offset = {}, 0.0
