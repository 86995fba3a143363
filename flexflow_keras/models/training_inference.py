"""`evaluate` and `predict` over arrays (`Inference`, a mixin of `Trainer`).

Each goes through its data batch by batch in inference mode, on the model's engine or a shape variant of
it (`Trainer._batch_engine`), with the callbacks' test or predict hooks. A dataset or generator is read
through models/training_feeds.py (`evaluate_stream`, `predict_stream`), which comes back here for each
batch. A model whose `test_step` runs eagerly evaluates through models/eager_fit.py.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from flexflow_keras.data.slices import bounded
from flexflow_keras.execution import overlap as _overlap
from flexflow_keras.layers import host_prefix
from flexflow_keras.models import call_mode, eager_fit, step_hooks
from flexflow_keras.models.training_feeds import evaluate_stream, is_stream, predict_stream
from flexflow_keras.models.training_utils import RunningMeans, check_not_empty, step_count
from flexflow_keras.ops.assign_in_call import AssignInCallError

log = logging.getLogger("flexflow_keras")


class Inference:
    """`evaluate` and `predict` for models (mixed into `Trainer`)."""

    @call_mode.in_inference
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        """Loss and metrics in inference mode; a scalar, a list, or a dict with return_dict=True."""
        kwargs.pop("_use_cached_eval_dataset", None)  # what Keras' fit hands its own evaluate
        if kwargs:  # Keras 3: "Arguments not recognized"
            raise ValueError(f"Model '{self.name}'.evaluate() does not take the arguments {sorted(kwargs)}; it takes x, "
                             f"y, batch_size, verbose, sample_weight, steps, callbacks and return_dict (Keras 2's "
                             f"workers/use_multiprocessing/max_queue_size are gone in Keras 3: drop them).")
        self._require_compiled("evaluate")
        steps = step_count(steps, "steps", f"Model '{self.name}'.evaluate()")
        x = host_prefix.wrap_data(self, bounded(x, steps, "evaluate()"))
        if step_hooks.eager_reason(self, "test_step") is not None:
            return eager_fit.evaluate(self, x, y, batch_size, verbose, sample_weight, steps, callbacks, return_dict)
        _overlap.clear_device_failures()
        batch_size = int(batch_size or 32)
        if x is None and y is None:
            x, y = self._default_data(8, batch_size, "test")
        if is_stream(x):
            logs = evaluate_stream(self, x, steps, callbacks, 1 if verbose == "auto" else int(verbose))
            return logs_result(logs, return_dict, self)
        try:
            graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        except AssignInCallError as e:  # a test_step of its own runs as written (eager_fit.py)
            why = step_hooks.assign_reason(self, e, "test_step")
            if why is None:
                raise
            log.info("model '%s': its test_step() %s, so evaluate() runs it as written, one batch at a time",
                     self.name, why)
            return eager_fit.evaluate(self, x, y, batch_size, verbose, sample_weight, steps, callbacks, return_dict)
        check_not_empty(n, "evaluate")
        self._validate_labels(graph, ys)
        logs = self._evaluate_arrays(xs, ys, sw, batch_size, steps, callbacks, verbose=verbose)
        return logs_result(logs, return_dict, self)

    def _evaluate_arrays(self, xs, ys, sw, batch_size, steps, callbacks, verbose=0):
        from flexflow_keras.callbacks import callback_list

        graph = self._graph_for(xs)
        self._hand_weights(sw)
        engine = self._batch_engine(graph, xs, ys)
        n = len(xs[0])
        sources = self._sources(xs, ys, sw, n)
        nsteps = math.ceil(n / batch_size) if steps is None else int(steps)
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = callback_list.for_evaluation(callbacks, self, verbose, nsteps)
        running = RunningMeans(self._loss_names, self._metric_objects, getattr(self, "run_eagerly", False),
                               owner=self, hook="test_step")
        cbs.on_test_begin()
        logs: dict = {}
        for b in range(nsteps):
            rows = np.arange(b * batch_size, min(n, (b + 1) * batch_size), dtype=np.int64)
            if len(rows) == 0:
                break
            cbs.on_test_batch_begin(b)
            losses, stats = engine.eval_step(sources, rows)
            penalty = self._penalty()
            running.add(len(rows), losses, self._loss_weights, penalty, stats)
            logs = running.logs()
            cbs.on_test_batch_end(b, logs)
        cbs.on_test_end(logs)
        return logs

    def _penalty(self) -> float:
        total = 0.0
        for v in self.trainable_weights:
            if v.regularizer is not None:
                total += float(np.asarray(v.regularizer(v.value)))
        return total

    @call_mode.in_inference
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for `x` in inference mode: one array, or several in the structure of the model's outputs
        (a list, a dict, nested lists), as Keras 3's predict."""
        from flexflow_keras import callbacks as callbacks_mod

        steps = step_count(steps, "steps", f"Model '{self.name}'.predict()")
        x = host_prefix.wrap_data(self, bounded(x, steps, "predict()"))
        _overlap.clear_device_failures()
        batch_size = int(batch_size or 32)
        if is_stream(x):
            return predict_stream(self, x, steps, callbacks, 1 if verbose == "auto" else int(verbose))
        graph, xs, _, _, n = self._prepare(x, None, None, need_labels=False)
        check_not_empty(n, "predict")
        engine = self._batch_engine(graph, xs, None)
        sources = tuple(xs)
        nsteps = math.ceil(n / batch_size) if steps is None else int(steps)
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                                         epochs=1, steps=nsteps)
        cbs.on_predict_begin()
        chunks: list[list[np.ndarray]] = []
        for b in range(nsteps):
            rows = np.arange(b * batch_size, min(n, (b + 1) * batch_size), dtype=np.int64)
            if len(rows) == 0:
                break
            cbs.on_predict_batch_begin(b)
            outs = engine.predict_step(sources, rows)
            chunks.append(outs)
            cbs.on_predict_batch_end(b, {"outputs": outs})
        cbs.on_predict_end()
        return self._pack_outputs([np.concatenate([c[i] for c in chunks], axis=0) for i in range(len(graph.outputs))])


def logs_result(logs: dict, return_dict: bool, model=None):
    """Logs as Keras returns them: the dict with `return_dict` (sorted by name, as Keras 3's pythonified logs),
    else one value as a scalar, several as a list in the order of Keras 3's ``_flatten_metrics_in_order``:
    each of `model`'s metric names (`model_metrics.keras_flat_names`) found in the logs, a name listed twice
    giving its value twice, then the other logs sorted by name."""
    if return_dict:
        return dict(sorted(logs.items()))
    if model is None:
        values = list(logs.values())
    else:
        from flexflow_keras.models.model_metrics import keras_flat_names

        names = keras_flat_names(model)
        listed = set(names)
        values = [logs[n] for n in names if n in logs] + [logs[k] for k in sorted(logs) if k not in listed]
    return values[0] if len(values) == 1 else values
