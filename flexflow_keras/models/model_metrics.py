"""The model's metrics as Keras exposes them: ``metrics`` (the metric objects), ``metrics_names`` (the keys
of the logs, in `evaluate`'s order), ``get_metrics_result`` and the ``compute_metrics`` hook (an override
runs through `models/metrics_hook.py`)."""

from __future__ import annotations


def _compiled_lists(model) -> list:
    """Per loss output, the compiled metric objects (built by the first fit/evaluate; [] before)."""
    return model.__dict__.get("_ff_compiled_metric_lists") or getattr(model, "_metric_objects", None) or []


def _logged_loss_names(model) -> list[str]:
    """The outputs whose losses the logs show: those with a loss (not those with metrics only)."""
    from flexflow_keras.models.training_utils import metrics_only

    hidden = metrics_only(model)
    names = model.__dict__.get("_ff_loss_log_names", {})  # a subclassed model's unnamed outputs' (training.py)
    return [names.get(n, n) for n in getattr(model, "_loss_names", None) or [] if n not in hidden]


def keras_flat_names(model) -> list[str]:
    """The names Keras 3's ``_flatten_metrics_in_order`` orders a list of logs by (evaluate and the
    ``*_on_batch`` calls without return_dict): "loss", the name of each compiled metric as it was made
    (without the output's prefix or the "weighted_" a name taken by a plain metric gets in the logs), those of
    `metrics` before those of `weighted_metrics`, then each output's loss for several outputs, then the
    metrics the model holds (a model that defines `metrics` gives its names). Keras lists a name each time it meets it, so ``metrics=["mae"],
    weighted_metrics=["mae"]`` gives [loss, mae, mae, weighted_mae]."""
    from flexflow_keras.models.metrics_hook import held_metrics

    if type(model).metrics is not ModelMetrics.metrics or "_ff_assigned_metrics" in model.__dict__:
        return [m.name for m in model.metrics]  # the model's own list, as Keras reads self.metrics
    compiled = [m for ms in _compiled_lists(model) for m in ms]
    flat = [t for m in compiled for t in (m._tracked() if getattr(m, "_ff_whole_batch", False) else [m])]
    made = [getattr(m, "_ff_made_name", m.name) for m in flat if not getattr(m, "_ff_weighted", False)]
    made += [getattr(m, "_ff_made_name", m.name) for m in flat if getattr(m, "_ff_weighted", False)]
    loss_names = _logged_loss_names(model)
    losses = [f"{n}_loss" for n in loss_names] if len(loss_names) > 1 else []
    tracker = model.__dict__.get("_ff_loss_tracker")  # an eager step's "loss" (metrics_hook.eager_loss_tracker)
    known = compiled + flat + ([tracker] if tracker is not None else [])
    return ["loss"] + made + losses + [m.name for m in held_metrics(model, known)]


class ModelMetrics:
    """`metrics`, `metrics_names`, `get_metrics_result` and `compute_metrics` for `Model`."""

    @property
    def metrics(self) -> list:
        """Keras: the model's metric objects: the loss tracker of a model whose own train_step runs eagerly
        or that overrides compute_metrics (metrics_hook.LossTracker), the compiled ones (once the first fit or evaluate has built them), then the metrics it holds as
        attributes, then its layers' (layers/layer_metrics.py; not a nested model's compiled ones). A
        subclass may override it, or assign a list."""
        from flexflow_keras.layers.layer_metrics import sublayer_metrics
        from flexflow_keras.models.metrics_hook import held_metrics

        assigned = self.__dict__.get("_ff_assigned_metrics")
        if assigned is not None:
            return list(assigned)
        compiled = [m for ms in _compiled_lists(self) for m in ms]
        tracker = self.__dict__.get("_ff_loss_tracker")  # metrics_hook.loss_tracker
        if tracker is not None:
            compiled = [tracker] + compiled
        return compiled + held_metrics(self, compiled) + sublayer_metrics(self)

    @metrics.setter
    def metrics(self, value) -> None:
        self.__dict__["_ff_assigned_metrics"] = list(value)

    @property
    def metrics_names(self) -> list[str]:
        """The names of the logs in the order `evaluate()` returns its list: the loss (and each output's
        loss for several outputs), then every metric (Keras 2's list; [] before the first fit or evaluate)."""
        if not getattr(self, "_loss_names", None):
            return []
        loss_names = _logged_loss_names(self)
        names = ["loss"] + ([f"{n}_loss" for n in loss_names] if len(loss_names) > 1 else [])
        for ms in getattr(self, "_metric_objects", None) or []:
            for m in ms:
                names += [t.name for t in m._tracked()] if getattr(m, "_ff_whole_batch", False) else [m.name]
        return names

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras 3's hook: update the compiled metrics with `y` and `y_pred`, return every metric's result.
        An override runs on each shard's NumPy batch after the forward pass (models/metrics_hook.py):
        ``super().compute_metrics(x, y, y_pred, sample_weight)`` updates the compiled metrics, and metrics
        the model holds as attributes may be updated beside them; the logs show all of them by name.

        Args:
            x, y, y_pred: NumPy inputs, labels and predictions (lists for several). sample_weight: the
                per-sample weights, or None.
        """
        from flexflow_keras.models.metrics_hook import update_compiled

        return update_compiled(self, y, y_pred, sample_weight)

    def get_metrics_result(self) -> dict:
        """Keras 3: the current result of every metric of the model, by name: the loss (that of the latest
        fit, evaluate or *_on_batch call, or an eager step's loss tracker), the compiled metrics, each
        output's loss for several outputs, then the metrics the model holds."""
        from flexflow_keras.metrics.user_state import results_by_name
        from flexflow_keras.models.metrics_hook import held_metrics, shard_loss

        compiled = [m for ms in _compiled_lists(self) for m in ms]
        running = self.__dict__.get("_ff_running")  # models/training_utils.RunningMeans
        tracker = self.__dict__.get("_ff_loss_tracker")
        losses = running.loss_logs() if running is not None and shard_loss() is None else {}
        if shard_loss() is not None:  # called by a compute_metrics override: the "loss" its step logs
            out = {"loss": shard_loss()}
        else:
            out = {"loss": losses.pop("loss")} if losses else {} if tracker is None else {"loss": tracker.result()}
        known = compiled + ([tracker] if tracker is not None else [])
        return out | results_by_name(compiled) | losses | results_by_name(held_metrics(self, known))
