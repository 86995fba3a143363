"""The single-batch calls: `train_on_batch`, `test_on_batch`, `predict_on_batch` and `reset_metrics`
(`BatchCalls`, a mixin of `Trainer`).

Each runs one step on exactly the batch it is given, on the model's engine or a shape variant of it
(`Trainer._batch_engine`). It owns the running means these calls keep between calls
(`reset_metrics=False`, Keras 2) and the step count a train_on_batch loop's strategy search is sized for
(`LOOP_STEPS`).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.layers import host_prefix
from flexflow_keras.models import eager_fit, step_hooks
from flexflow_keras.models.training_inference import logs_result
from flexflow_keras.models.training_utils import RunningMeans

# The steps a train_on_batch loop's strategy search is sized for (execution/measured.py `effort_for`): its
# length is unknown at the first call, and a GAN's loop meets one search per model it trains.
LOOP_STEPS = 100


class BatchCalls:
    """The `*_on_batch` calls for models (mixed into `Trainer`)."""

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False,
                       reset_metrics=True):
        """One training step on exactly this batch; returns the batch's loss (and metrics).

        `reset_metrics=False` (Keras 2) accumulates the results over consecutive calls."""
        self._require_compiled("train_on_batch")
        x = host_prefix.wrap_data(self, x)
        if step_hooks.eager_reason(self, "train_step") is not None:
            return logs_result(eager_fit.train_on_batch(self, x, y, sample_weight, reset_metrics), return_dict,
                               self)
        graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        sw = self._class_weights(class_weight, ys, sw)
        self._hand_weights(sw)
        engine = self._batch_engine(graph, xs, ys)
        sources = self._sources(xs, ys, sw, n)  # after the engine: it names the outputs with losses
        if engine.strategy is None and engine.planned_steps is None:
            # a loop of unknown length (a GAN's alternating models, a custom schedule): its first call
            # must not spend minutes measuring strategies a fit of thousands of steps would repay
            engine.planned_steps = LOOP_STEPS
            engine.planned_run = f"a train_on_batch loop of unknown length, sized as {LOOP_STEPS} steps"
        step = getattr(self, "_batch_step", 0)
        self._batch_step = step + 1
        losses, stats, penalty = engine.train_step(sources, np.arange(n, dtype=np.int64), step, 1234)
        running = self._batch_means("train", reset_metrics)
        running.add(n, losses, self._loss_weights, penalty, stats)
        return logs_result(running.logs(), return_dict, self)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False, reset_metrics=True):
        """Loss (and metrics) of this batch in inference mode; `reset_metrics=False` (Keras 2)
        accumulates over consecutive calls."""
        self._require_compiled("test_on_batch")
        x = host_prefix.wrap_data(self, x)
        graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        self._hand_weights(sw)
        engine = self._batch_engine(graph, xs, ys)
        losses, stats = engine.eval_step(self._sources(xs, ys, sw, n), np.arange(n, dtype=np.int64))
        running = self._batch_means("test", reset_metrics)
        running.add(n, losses, self._loss_weights, self._penalty(), stats)
        return logs_result(running.logs(), return_dict, self)

    def _batch_means(self, kind: str, reset: bool) -> RunningMeans:
        """The running means of the *_on_batch calls: fresh when `reset`, else the previous call's."""
        kept = getattr(self, "_on_batch_means", None)
        if reset or kept is None or kept[0] != kind or kept[1].metric_objects != \
                [list(m) for m in self._metric_objects]:
            kept = (kind, RunningMeans(self._loss_names, self._metric_objects, getattr(self, "run_eagerly", False),
                                       owner=self))
            self._on_batch_means = kept
        self.__dict__["_ff_running"] = kept[1]
        return kept[1]

    def reset_metrics(self) -> None:
        """Reset the state of every compiled metric (and what `*_on_batch(reset_metrics=False)` kept)."""
        self._on_batch_means = None
        for ms in getattr(self, "_metric_objects", None) or []:
            for m in ms:
                m.reset_state()
        running = self.__dict__.get("_ff_running")
        if running is not None:  # Keras' loss trackers read 0 after a reset (get_metrics_result)
            running.reset_losses()

    def predict_on_batch(self, x):
        from flexflow_keras.utils import tree

        return self.predict(x, batch_size=len(tree.flatten(x)[0]), verbose=0)
