"""The training loop: `compile`, `fit`, `evaluate`, `predict` and the `*_on_batch` calls (`Trainer`).

`Model` inherits `Trainer`. The loop normalises and checks the data, resolves the command line
(`-e/-b/-p/-d` win over the script's arguments, and the log says so), builds an `execution.Engine` for
the model's training graph, and drives epochs and steps with Keras 3 semantics: per-batch logs are the
running means of the epoch, the loss is weighted by batch size, callbacks see every hook. Training steps
are issued without waiting and read only where a value is needed (models/step_window.py).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from flexflow_keras import config as _config
from flexflow_keras.data import provenance
from flexflow_keras.data.slices import bounded
from flexflow_keras.errors import DataError
from flexflow_keras.execution import overlap as _overlap
from flexflow_keras.execution import simulator_notice
from flexflow_keras.layers import host_prefix
from flexflow_keras.models import custom_training, eager_fit, sample_weights, step_hooks
from flexflow_keras.models.metrics_hook import ComputeMetricsHook
from flexflow_keras.models.shape_variants import ShapeVariants
from flexflow_keras.models.step_window import IN_FLIGHT, LogDemand, StepWindow, passive
from flexflow_keras.models.training_feeds import (
    ArrayFeed,
    IterFeed,
    evaluate_stream,
    is_stream,
    predict_stream,
    stream_feed,
)
from flexflow_keras.models.training_utils import (
    RunningMeans,
    check_inputs,
    check_lengths,
    check_not_empty,
    label_array,
    labels_per_output,
    should_validate,
    to_list,
    validation_cut,
)
from flexflow_keras.ops.graph import TensorSpec
from flexflow_keras.utils import interrupts as _interrupts

log = logging.getLogger("flexflow_keras")

# The steps a train_on_batch loop's strategy search is sized for (execution/measured.py `effort_for`): its
# length is unknown at the first call, and a GAN's loop meets one search per model it trains.
LOOP_STEPS = 100


class Trainer:
    """compile/fit/evaluate/predict for models (mixed into `Model`)."""

    # --- compile ----------------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True, **kwargs):
        """Configure the model for training (Keras 3 arguments; `run_eagerly`/`jit_compile` are accepted
        and ignored: every step runs through the runtime).

        flexflow_keras adds `strategy=`: a `flexflow_keras.Strategy` (op name -> `ParallelConfig`) or the
        path of a strategy file, used instead of the chosen one (`--import-strategy` still wins)."""
        from flexflow_keras import optimizers

        strategy = kwargs.pop("strategy", None)
        unknown = sorted(set(kwargs) - {"sample_weight_mode", "target_tensors", "distribute"})
        if unknown:
            raise TypeError(f"compile() got unexpected keyword arguments {unknown}.")
        if strategy is not None:
            from flexflow_keras.execution.choice import user_strategy

            strategy = user_strategy(strategy, "compile(strategy=...)")
        self._strategy_arg = strategy
        from flexflow_keras import losses as losses_mod

        self._detach_engine()
        self.optimizer = optimizers.get(optimizer)
        for ident in (loss.values() if isinstance(loss, dict) else
                      loss if isinstance(loss, (list, tuple)) else [loss]):
            if ident is not None:
                losses_mod.get(ident)  # an unknown name fails here, listing the valid ones
        self._loss_arg = loss
        self._loss_weights_arg = loss_weights
        self._metrics_arg = metrics
        self._weighted_metrics_arg = weighted_metrics
        self.compiled = True
        self._engine = None
        self._engine_key = None
        self.stop_training = False

    def _detach_engine(self) -> None:
        for attr in ("_shape_variants", "_predict_variants"):
            variants = self.__dict__.pop(attr, None)
            if variants is not None:
                variants.release()
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.detach()
        self._engine = None
        self._engine_key = None

    def _require_compiled(self, what: str) -> None:
        if not getattr(self, "compiled", False):
            raise RuntimeError(f"You must call compile() on model '{self.name}' before {what}(). "
                               f"Example: model.compile(optimizer='adam', loss='sparse_categorical_crossentropy',"
                               f" metrics=['accuracy']).")

    # --- graph and engine --------------------------------------------------------------------------------
    def _graph_for(self, xs: Sequence[np.ndarray] | None):
        specs = None
        if xs is not None:
            specs = [TensorSpec((None,) + tuple(x.shape[1:]), "float32" if x.dtype.kind == "f"
                                else str(x.dtype)) for x in xs]
        return self._op_graph(specs)

    def _per_output(self, arg, names, what):
        if arg is None:
            return [None] * len(names)
        if isinstance(arg, dict):
            unknown = sorted(set(arg) - set(names))
            if unknown:
                raise ValueError(f"compile({what}=...) has keys {unknown} that are not outputs of model "
                                 f"'{self.name}'; outputs: {list(names)}.")
            return [arg.get(n) for n in names]
        # a one-output model's loss=["mse"] / loss_weights=[0.5] are per-output lists too (Keras takes them)
        per_output = len(names) > 1 or (what in ("loss", "loss_weights") and len(names) == 1
                                        and isinstance(arg, (list, tuple)) and len(arg) == 1)
        # metrics: a list as long as the outputs is one entry per output (Keras 3, whose tf.keras refuses a
        # flat list of another length); a list of another length goes to every output (Keras 2)
        if isinstance(arg, (list, tuple)) and per_output and (what != "metrics" or len(arg) == len(names)):
            if len(arg) != len(names):
                raise ValueError(f"compile({what}=...) is a list of {len(arg)} entries but model '{self.name}' "
                                 f"has {len(names)} outputs {list(names)}.")
            return list(arg)
        return [arg] * len(names)

    def _loss_specs(self, graph, label_specs):
        """(output names, a LossSpec per output that has a loss) of `graph` with labels of `label_specs`
        (None: predict, no losses)."""
        from flexflow_keras import losses as losses_mod
        from flexflow_keras.execution import LossSpec

        out_names = self._output_names_for(graph)
        loss_args = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
        loss_args = custom_training.training_losses(self, graph, loss_args, label_specs is not None)  # i9-ops
        weights = self._per_output(getattr(self, "_loss_weights_arg", None), out_names, "loss_weights")
        specs = []
        for i in range(len(out_names)):
            if label_specs is not None and loss_args[i] is not None:
                w = 1.0 if weights[i] is None else float(weights[i])
                specs.append(LossSpec(i, losses_mod.get(loss_args[i]), w, label_specs[i]))
        if label_specs is not None and not specs:
            raise ValueError(f"Model '{self.name}' was compiled without a loss; pass loss= to compile() "
                             f"to train or evaluate it.")
        return out_names, specs

    @staticmethod
    def _label_specs(ys):
        if ys is None:
            return None
        return tuple(TensorSpec((None,) + tuple(y.shape[1:]), str(y.dtype)) for y in ys)

    def _training_graph(self, graph, ys):
        """The training graph of `graph` (the model at some input shapes) with labels like `ys`: what an
        engine runs, and what fit's step graph for batches of other shapes is (models/shape_variants.py)."""
        from flexflow_keras.execution import build_training_graph

        out_names, loss_specs = self._loss_specs(graph, self._label_specs(ys))
        return build_training_graph(graph.inputs, graph.outputs, loss_specs, out_names)

    def _engine_for(self, graph, ys: Sequence[np.ndarray] | None):
        from flexflow_keras import metrics as metrics_mod
        from flexflow_keras.execution import Engine, build_training_graph

        label_specs = self._label_specs(ys)
        key = (id(graph), label_specs)
        if self._engine is not None and self._engine_key == key:
            return self._engine
        carried = self._trained_slots()
        self._detach_engine()
        out_names, loss_specs = self._loss_specs(graph, label_specs)
        metric_objects, self._loss_names, self._loss_weights = [], [], []
        metric_args = self._per_output(getattr(self, "_metrics_arg", None), out_names, "metrics")
        weighted_args = self._per_output(getattr(self, "_weighted_metrics_arg", None), out_names,
                                         "weighted_metrics")
        multi = len(out_names) > 1
        by_output = {spec.output_index: spec for spec in loss_specs}
        for i, name in enumerate(out_names):
            objs = []
            spec = by_output.get(i)
            if spec is not None:
                loss = spec.loss
                self._loss_names.append(name)
                self._loss_weights.append(spec.weight)
                y_pred_shape = graph.outputs[i].shape
                plain = _as_list(metric_args[i])
                for j, ident in enumerate(plain + _as_list(weighted_args[i])):
                    m = metrics_mod.resolve_metric(ident, loss, label_specs[i].shape, y_pred_shape)
                    m._ff_weighted = j >= len(plain)  # Keras 3: only weighted_metrics see sample weights
                    if m._ff_weighted and any(o.name == (f"{name}_{m.name}" if multi else m.name) for o in objs):
                        m.name = f"weighted_{m.name}"
                    if multi:
                        m.name = f"{name}_{m.name}"
                    taken, base, k = {o.name for o in objs}, m.name, 0
                    while m.name in taken:  # two lambda metrics log as lambda and lambda_1, as in Keras
                        k += 1
                        m.name = f"{base}_{k}"
                    objs.append(m)
            metric_objects.append(objs)
        tgraph = build_training_graph(graph.inputs, graph.outputs, loss_specs, out_names)
        if loss_specs and step_hooks.overrides(self, "compute_metrics"):  # one metric object runs the override
            hook = ComputeMetricsHook(self, [metric_objects[s.output_index] for s in loss_specs])
            first = loss_specs[0].output_index
            metric_objects = [[hook] if i == first else [] for i in range(len(metric_objects))]
        self._metric_objects = [metric_objects[s.output_index] for s in loss_specs]
        engine = Engine(tgraph, self.weights, self.trainable_weights, getattr(self, "optimizer", None),
                        metric_objects, getattr(self, "_strategy_arg", None))
        from flexflow_keras.saving.optimizer_state import restore_pending_slots

        restore_pending_slots(engine)  # slots of a model loaded from a .keras file
        if carried:
            engine.weights.write_slots({uid: a for uid, a in carried.items() if uid in engine.weights.slots})
        self._engine, self._engine_key = engine, key
        return engine

    def _trained_slots(self):
        """The optimizer slots of the engine about to be replaced (another graph: a fit at another length,
        an engine made for predict) once the optimizer has stepped, so the new engine goes on from them as
        Keras' one optimizer state does; None otherwise."""
        old, opt = self._engine, getattr(self, "optimizer", None)
        if old is None or opt is None or old.optimizer is not opt or int(getattr(opt, "iterations", 0)) == 0:
            return None
        return old.weights.read_slots()

    def _output_names_for(self, graph) -> list[str]:
        names = list(getattr(self, "output_names", None) or [])
        if len(names) != len(graph.outputs):
            names = [f"output_{i}" for i in range(len(graph.outputs))] if len(graph.outputs) > 1 else ["output"]
        return names

    def _input_names_for(self, graph) -> list[str]:
        names = list(getattr(self, "input_names", None) or [])
        if len(names) != len(graph.inputs):
            names = [t.name for t in graph.inputs]
        return names

    # --- data ----------------------------------------------------------------------------------------------
    def _prepare(self, x, y, sample_weight, need_labels=True):
        struct = getattr(self, "_input_struct", None)
        if isinstance(x, Mapping) and isinstance(struct, dict) and set(x) <= set(struct):
            # Model({"a": Input(name="first"), ...}): data keyed as the model's inputs are (Keras 3)
            x = {struct[k].name: v for k, v in x.items()}
        xs = custom_training.adjust_input_rank(to_list(x, self._known_input_names(x), "input"),
                                               getattr(self, "_inputs", ()))  # Keras 3's rank rule (i9-ops)
        graph = self._graph_for(xs)
        xs = self._input_arrays(x, graph)
        in_names = self._input_names_for(graph)
        xs = [np.ascontiguousarray(a, dtype=np.float32) if a.dtype.kind in "fub" and
              graph.inputs[i].dtype.startswith("float") else np.ascontiguousarray(a, dtype=graph.inputs[i].dtype)
              for i, a in enumerate(xs)]
        check_inputs(xs, [t.spec for t in graph.inputs], in_names)
        ys = None
        if need_labels:
            if y is None and custom_training.labels_optional(self, graph, self._per_output(
                    getattr(self, "_loss_arg", None), self._output_names_for(graph), "loss")):
                y = [custom_training.placeholder_labels(len(xs[0])) for _ in graph.outputs]
            if y is None:
                raise DataError(f"Model '{self.name}' needs labels y to compute its loss; received y=None.")
            ys = self._labels(y, graph, len(xs[0]))
        n = check_lengths(xs, ys, None)
        sw = sample_weights.normalize(sample_weight, self._output_names_for(graph),
                                      [t.shape for t in graph.outputs], n)
        return graph, xs, ys, sw, n

    def _labels(self, y, graph, n: int) -> list[np.ndarray]:
        """`y` (an array, a list, or a dict by output name) as one label array per output of `graph`."""
        names = self._output_names_for(graph)
        y = labels_per_output(y, names, self._per_output(getattr(self, "_loss_arg", None), names, "loss"), n)
        return [label_array(a) for a in to_list(y, names, "output")]

    def _input_arrays(self, x, graph) -> list:
        """`x` (an array, a list, or a dict by input name) as the list of `graph`'s input arrays, with Keras'
        rank rule ((N,) data for an Input of shape (1,) is (N, 1))."""
        struct = getattr(self, "_input_struct", None)
        if isinstance(x, Mapping) and isinstance(struct, dict) and set(x) <= set(struct):
            x = {struct[k].name: v for k, v in x.items()}
        return custom_training.adjust_input_rank(to_list(x, self._input_names_for(graph), "input"), graph.inputs)

    def _known_input_names(self, x=None) -> list[str]:
        """The model's input names; for a subclassed model not traced yet, those the structure of the data
        `x` gives (a dict's keys, a list of several arrays: one input each, handed to call() as a dict or
        a list, as Keras hands them; models/model.py `_record`)."""
        names = list(getattr(self, "input_names", None) or [])
        if names:
            return names
        from flexflow_keras.models.model import Model

        if type(self)._op_graph is Model._op_graph:  # subclassed: call() takes whatever structure it is given
            if isinstance(x, Mapping) and len(x) >= 1:
                self._input_structure = ("dict", tuple(x))
                return list(x)
            if isinstance(x, (list, tuple)) and len(x) > 1 and all(getattr(a, "ndim", 0) >= 1 for a in x):
                self._input_structure = ("list", len(x))
                return [f"input_{i}" for i in range(len(x))]
        return ["input"]

    def _validate_labels(self, graph, ys) -> None:
        from flexflow_keras import losses as losses_mod

        out_names = self._output_names_for(graph)
        loss_args = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
        for i, (y, spec) in enumerate(zip(ys, graph.outputs, strict=True)):
            if loss_args[i] is not None:
                losses_mod.get(loss_args[i]).validate(y, spec.shape, out_names[i])

    def _default_data(self, n_batches_hint: int, batch_size: int, split: str = "train"):
        """The -d dataset when given (its `split`, shaped for the model), else synthetic data shaped for the
        model (always logged)."""
        from flexflow_keras import losses as losses_mod
        from flexflow_keras.data import SyntheticSource
        from flexflow_keras.data.formats import detect, flag_source
        from flexflow_keras.data.formats.detect import check_exists

        cfg = _config.get()
        graph = self._graph_for(None)
        out_names = self._output_names_for(graph)
        loss_args = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
        losses = [None if a is None else losses_mod.get(a) for a in loss_args]
        found = detect(check_exists(cfg.dataset)) if cfg.dataset else None
        if found is not None and found.kind == "image-folder":  # decoded by the loaders, not held in memory
            from flexflow_keras.models.training_feeds import folder_dataset, folder_for_split

            return folder_dataset(self, folder_for_split(found.target, split), batch_size), None
        if cfg.dataset:
            source = flag_source(cfg.dataset, [t.spec for t in graph.inputs], [t.spec for t in graph.outputs],
                                 losses, split, self._input_names_for(graph))
        else:
            source = SyntheticSource([t.spec for t in graph.inputs], [t.spec for t in graph.outputs],
                                     n_batches_hint * batch_size, loss=losses, seed=cfg.seed or 0)
        log.info("data: %s", source.describe())
        return source.x, source.y

    # --- fit ------------------------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=None, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None, sample_weight=None,
            initial_epoch=0, steps_per_epoch=None, validation_steps=None, validation_batch_size=None,
            validation_freq=1):
        """Train the model; returns a `History`. Command-line -e/-b override epochs/batch_size."""
        from flexflow_keras import callbacks as callbacks_mod

        self._require_compiled("fit")
        x = bounded(x, steps_per_epoch, "fit()", int(_config.resolve("epochs", epochs, "-e/--epochs")))
        validation_data = bounded(validation_data, validation_steps, "fit(validation_data=...)")
        x, validation_data = host_prefix.wrap_data(self, x), host_prefix.wrap_validation(self, validation_data)
        reason = step_hooks.eager_reason(self, "train_step")
        if reason is not None:  # a step that computes its own gradients runs as written (eager_fit.py)
            return eager_fit.fit(self, reason, x, y, batch_size, epochs, verbose, callbacks, validation_split,
                                 validation_data, shuffle, class_weight, sample_weight, initial_epoch,
                                 steps_per_epoch, validation_steps, validation_batch_size, validation_freq)
        _overlap.clear_device_failures()  # what a run stopped by something else left on a GPU
        script_batch = batch_size
        batch_size = int(_config.resolve("batch_size", batch_size, "-b/--batch-size"))
        epochs = int(_config.resolve("epochs", epochs, "-e/--epochs"))
        given = not (x is None and y is None)
        if not given:
            x, y = self._default_data(64, batch_size)
        cfg_seed = _config.get().seed  # --seed fixes the epochs' sample order (and dropout) on its own
        seed = int(cfg_seed) if cfg_seed is not None else int(np.random.randint(0, 2**31 - 1))
        feed = None
        if is_stream(x):
            from flexflow_keras.execution.context import get_runtime

            if validation_split:
                raise DataError("validation_split is only supported for arrays; with a dataset pass "
                                 "validation_data= (e.g. image_dataset_from_directory(subset='both')).")
            feed, x, y, n_stream, what = stream_feed(x, get_runtime(), _config.get().cpus)
            feed.shuffle, feed.seed, feed.steps_per_epoch = shuffle, seed, steps_per_epoch  # for a PyDataset
        graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        if feed is not None:
            feed.prepare_x = lambda bx, g=graph: self._input_arrays(bx, g)
            feed.prepare_y = lambda by, bn, g=graph: self._labels(by, g, bn) if by is not None else []
            n = n_stream
            log.info("data: %s (%d samples a pass)", what, n)
            if "batch_size" in _config.get().from_cli:  # a dataset's batches are its own: say the flag cannot act
                log.warning("-b/--batch-size %d on the command line does not apply to this fit(): it received %s, "
                            "whose batches are its own. Batch the dataset with that size (.batch(n), or the "
                            "batch_size of the function that makes it) to use it.", batch_size, what)
        elif given:
            log.info("data: arrays passed to fit(), %d samples", n)
        if feed is not None:
            if sample_weight is not None:
                raise DataError("sample_weight cannot be given with a dataset; yield (x, y, sample_weight) "
                                 "batches instead.")
            feed.weigh(lambda labels: self._class_weights(class_weight, labels, None))
            feed.set_dtypes([a.dtype for a in xs] + [a.dtype for a in ys])
            if feed.labels is not None:
                self._validate_labels(graph, feed.labels)  # every label, not only the first batch's
        self._validate_labels(graph, ys)
        _check_finite(xs, "x")
        _check_finite(ys, "y")
        check_not_empty(n, "fit")
        val = None
        if validation_data is not None:
            val = self._unpack_validation(validation_data)
        elif (cut := validation_cut(n, validation_split)) is not None:
            val = ([a[cut:] for a in xs], [a[cut:] for a in ys], sample_weights.take(sw, slice(cut, None)))
            xs, ys, sw = [a[:cut] for a in xs], [a[:cut] for a in ys], sample_weights.take(sw, slice(None, cut))
            n = cut
        sw = self._class_weights(class_weight, ys, sw)  # the training part only: Keras' validation is unweighted
        engine = self._engine_for(graph, ys)
        sources = self._sources(xs, ys, sw, len(xs[0]))
        if feed is None:
            if script_batch is None and not _config.get().given("batch_size"):
                log.info("fit(): no batch_size given, so batches of %d (the -b/--batch-size default; Keras' own "
                         "default is 32: pass batch_size=32 or -b 32 for Keras' number of steps)", batch_size)
            feed = ArrayFeed(sources, n, batch_size, shuffle, seed, steps_per_epoch)
        else:
            batch_size = len(xs[0])
        steps = len(feed) if steps_per_epoch is None else int(steps_per_epoch)
        simulator_notice.estimate_for(self)
        engine.refresh_threads()  # kernel threads sized to the cores other processes leave free
        _interrupts.phase("the strategy search")
        engine.planned_steps = steps * max(epochs - int(initial_epoch), 1)  # what the search may cost (choice.py)
        engine.planned_run = None  # a fit's steps (not a train_on_batch loop's guess)
        engine.prepare_strategy(sources, np.arange(min(batch_size, len(xs[0])), dtype=np.int64), 0, again=True)
        if _config.get().search_only:
            feed.close()
            log.info("--search-only: the strategy is chosen%s; not training",
                     f" and written to {_config.get().export_strategy}" if _config.get().export_strategy else "")
            if not _config._in_notebook():
                raise SystemExit(0)
            return getattr(self, "history", None)
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = callbacks_mod.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                                         verbose=verbose, epochs=epochs, steps=steps, samples=n,
                                         batch_size=batch_size,
                                         data=provenance.fit_note(not given and not _config.get().dataset, xs, ys))
        if verbose:
            cbs.append_flexflow_logger(_config.get().print_freq, batch_size)
        running = RunningMeans(self._loss_names, self._metric_objects)
        pipelined = passive(cbs)
        self.stop_training = False
        t_start = time.perf_counter()
        epoch_logs: dict = {}
        cbs.on_train_begin()
        resumed, self._initial_epoch = getattr(self, "_initial_epoch", None), None  # set by BackupAndRestore
        initial_epoch = int(resumed or initial_epoch)
        # a dataset's batches may change shape (padded per batch): one step graph per shape
        variants = self._variants(engine, len(graph.inputs)) if isinstance(feed, IterFeed) else None
        try:
            epoch_logs = self._epochs(engine, feed, cbs, running, pipelined, val, initial_epoch, epochs, steps,
                                      seed, validation_freq, validation_batch_size or batch_size, validation_steps,
                                      variants)
        finally:
            feed.close()
            if engine.trial is not None:  # stopped (a callback, too few full batches) before its trial decided
                engine.trial.cancel("the fit ended before its first steps decided")
        _interrupts.phase(None)  # not in `finally`: a Ctrl-C's message still names the epoch and step
        elapsed = time.perf_counter() - t_start
        samples = self._fit_samples
        engine.sync_to_host()
        cbs.on_train_end(epoch_logs)
        log.info("fit: %d samples in %.2f s, %.1f samples/s", samples, elapsed, samples / max(elapsed, 1e-9))
        self._last_fit_stats = {"samples": samples, "seconds": elapsed,
                                "samples_per_second": samples / max(elapsed, 1e-9), "data_stalls": feed.history}
        return self.history

    def _epochs(self, engine, feed, cbs, running, pipelined, val, initial_epoch, epochs, steps, seed,
                validation_freq, validation_batch_size, validation_steps, variants=None):
        """The epoch loop of fit; returns the last epoch's logs. `variants`: the engines of a dataset's
        batches of other shapes (models/shape_variants.py)."""
        # Per-step randomness (dropout) follows the optimizer's step count, so a fit resumed from a
        # checkpoint (initial_epoch=k, same seed) draws what the uninterrupted fit drew at that step.
        step_no = int(getattr(self.optimizer, "iterations", 0))
        samples = 0
        epoch_logs: dict = {}
        fit_key = self._engine_key  # fit's engine, to take back after another graph's ran (_reclaim)
        feed.final_epoch = epochs - 1
        # steps are issued without waiting and read where a value is needed (models/step_window.py)
        overlap = _overlap.enabled()
        window = StepWindow(engine, running, self._loss_weights, IN_FLIGHT if overlap and pipelined else 0)
        demand = LogDemand(cbs, every_batch=not (overlap and pipelined))
        for epoch in range(initial_epoch, epochs):
            running.reset()
            cbs.on_epoch_begin(epoch)
            if epoch > initial_epoch:
                engine.refresh_threads()  # load that came or went during the last epoch
            feed.start_epoch(epoch)
            t_epoch = time.perf_counter()
            logs: dict = {}
            window.start_epoch()
            for b in range(steps):
                if len(window) and not feed.ready(b):
                    window.drain()  # the data is late: what follows is time no step runs
                got = feed.take(b)
                if got is None:
                    break
                _interrupts.at(epoch, b)
                sources, rows = got
                cbs.on_train_batch_begin(b)
                if self._engine is not engine:  # a callback ran the model at other shapes (_reclaim)
                    self._reclaim(engine, fit_key)
                step_engine = engine if variants is None else variants.engine_for(sources)
                handle = step_engine.issue_train(sources, rows, step_no, seed, wait=not overlap)
                feed.consumed(b, getattr(handle[0], "last_loader", None))
                step_no += 1
                samples += len(rows)
                self._batch_rows = len(rows)  # the progress display's sample count (callbacks/progress.py)
                window.push(len(rows), handle)
                if demand.due(b):
                    window.drain()
                    logs = dict(sorted(running.logs().items()))  # Keras 3's order, as the epoch's logs
                else:
                    window.trim()  # logs: the last read's, for callbacks that only count batches
                cbs.on_train_batch_end(b, logs)
                if self.stop_training:
                    break
            window.end_epoch()
            if window.read:
                logs = dict(sorted(running.logs().items()))
            feed.end_epoch(epoch, time.perf_counter() - t_epoch)
            epoch_logs = dict(logs)
            if val is not None and should_validate(epoch, validation_freq):
                # fit's own callbacks see the validation's test hooks, as in Keras 3 (the progress bar
                # stays quiet in fit; TensorBoard writes its evaluation scalars)
                val_logs = (evaluate_stream(self, val, validation_steps, callbacks=cbs) if is_stream(val) else
                            self._evaluate_arrays(*val, validation_batch_size, validation_steps, callbacks=cbs))
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            epoch_logs = dict(sorted(epoch_logs.items()))  # Keras 3's order (History, CSVLogger, the epoch line)
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        self._reclaim(engine, fit_key)  # after the last epoch (within one, the next step does it)
        self._fit_samples = samples
        return epoch_logs

    def _reclaim(self, engine, key) -> None:
        """Make fit's `engine` the model's again after validation or a callback ran the model at other input
        shapes (Input(shape=(None,)): another graph, another engine, which took the variables with fit's
        values as they were then); fit's engine, its weights and optimizer slots, goes on."""
        if self._engine is not engine:
            self._detach_engine()
            engine.attach()
            self._engine, self._engine_key = engine, key

    def _class_weights(self, class_weight, ys, sw):
        if not class_weight:
            return sw
        if len(ys) != 1:
            raise ValueError("class_weight is only supported for models with a single output; use "
                             "sample_weight for several outputs.")
        y = ys[0]
        classes = np.argmax(y, axis=-1) if (y.ndim > 1 and y.shape[-1] > 1) else y.reshape(len(y), -1)[:, 0]
        w = np.array([float(class_weight.get(int(c), 1.0)) for c in classes.astype(np.int64)], np.float32)
        return sample_weights.scale(sw, w)

    def _unpack_validation(self, data):
        if is_stream(data):
            return data  # evaluated batch by batch at the end of each epoch
        if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
            raise ValueError("validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                             f"val_sample_weight); received {type(data).__name__} of length "
                             f"{len(data) if hasattr(data, '__len__') else '?'}.")
        _, xs, ys, sw, _ = self._prepare(data[0], data[1], data[2] if len(data) == 3 else None)
        return xs, ys, sw

    def _sources(self, xs, ys, sw, n):
        loss_outputs: list[int] = []
        if isinstance(sw, tuple):  # one weight array per output: the loader wants those of the losses
            out_names = self._output_names_for(self._graph_for(xs))
            loss_outputs = [out_names.index(k) for k in getattr(self, "_loss_names", [])]
        return tuple(xs) + tuple(ys) + (sample_weights.for_losses(sw, n, loss_outputs),)

    # --- evaluate / predict ------------------------------------------------------------------------------------
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        """Loss and metrics in inference mode; a scalar, a list, or a dict with return_dict=True."""
        self._require_compiled("evaluate")
        x = host_prefix.wrap_data(self, bounded(x, steps, "evaluate()"))
        if step_hooks.eager_reason(self, "test_step") is not None:
            return eager_fit.evaluate(self, x, y, batch_size, verbose, sample_weight, steps, callbacks, return_dict)
        _overlap.clear_device_failures()
        batch_size = int(batch_size or 32)
        if x is None and y is None:
            x, y = self._default_data(8, batch_size, "test")
        if is_stream(x):
            logs = evaluate_stream(self, x, steps, callbacks, 1 if verbose == "auto" else int(verbose))
            return _result(logs, return_dict)
        graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        check_not_empty(n, "evaluate")
        self._validate_labels(graph, ys)
        logs = self._evaluate_arrays(xs, ys, sw, batch_size, steps, callbacks, verbose=verbose)
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def _evaluate_arrays(self, xs, ys, sw, batch_size, steps, callbacks, verbose=0):
        from flexflow_keras.callbacks import callback_list

        graph = self._graph_for(xs)
        engine = self._batch_engine(graph, xs, ys)
        n = len(xs[0])
        sources = self._sources(xs, ys, sw, n)
        nsteps = math.ceil(n / batch_size) if steps is None else int(steps)
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = callback_list.for_evaluation(callbacks, self, verbose, nsteps)
        running = RunningMeans(self._loss_names, self._metric_objects)
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
                total += float(v.regularizer.penalty(v.value))
        return total

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for `x` in inference mode (one array, or a list for several outputs)."""
        from flexflow_keras import callbacks as callbacks_mod

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
        results = [np.concatenate([c[i] for c in chunks], axis=0) for i in range(len(graph.outputs))]
        return results[0] if len(results) == 1 else results

    # --- single batches ----------------------------------------------------------------------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False,
                       reset_metrics=True):
        """One training step on exactly this batch; returns the batch's loss (and metrics).

        `reset_metrics=False` (Keras 2) accumulates the results over consecutive calls."""
        self._require_compiled("train_on_batch")
        x = host_prefix.wrap_data(self, x)
        if step_hooks.eager_reason(self, "train_step") is not None:
            return _result(eager_fit.train_on_batch(self, x, y, sample_weight, reset_metrics), return_dict)
        graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        sw = self._class_weights(class_weight, ys, sw)
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
        return _result(running.logs(), return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False, reset_metrics=True):
        """Loss (and metrics) of this batch in inference mode; `reset_metrics=False` (Keras 2)
        accumulates over consecutive calls."""
        self._require_compiled("test_on_batch")
        x = host_prefix.wrap_data(self, x)
        graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        engine = self._batch_engine(graph, xs, ys)
        losses, stats = engine.eval_step(self._sources(xs, ys, sw, n), np.arange(n, dtype=np.int64))
        running = self._batch_means("test", reset_metrics)
        running.add(n, losses, self._loss_weights, self._penalty(), stats)
        return _result(running.logs(), return_dict)

    def _batch_engine(self, graph, xs, ys):
        """The engine for a batch of inputs `xs` and labels `ys` (None: predict) outside fit's loop
        (train_on_batch, test_on_batch, evaluate, predict): the model's engine for its shapes; for other
        shapes, a variant of the model's training engine that shares its weights and optimizer slots
        (models/shape_variants.py), so a loop over batches padded to their own lengths, or an evaluation
        at another length between two fits, keeps Adam's moments; else a new engine."""
        root, key = self._engine, self._engine_key
        if root is not None and key[0] == id(graph) and (ys is None or key[1] == self._label_specs(ys)):
            return root
        if root is None or (ys is not None and not ys) or not any(
                t is not None for t in root.tgraph.per_sample_losses):
            return self._engine_for(graph, ys)
        return self._variants(root, len(graph.inputs), ys is not None).engine_for(tuple(xs) + tuple(ys or ()) + (None,))

    def _variants(self, root, n_inputs: int, labels: bool = True) -> ShapeVariants:
        """The shape variants of the model's engine `root`, with labels (fit, evaluate) or without (predict)."""
        attr = "_shape_variants" if labels else "_predict_variants"
        variants = self.__dict__.get(attr)
        if variants is None or variants.root is not root:
            if variants is not None:
                variants.release()
            variants = ShapeVariants(self, root, n_inputs, labels)
            setattr(self, attr, variants)
        return variants

    def _batch_means(self, kind: str, reset: bool) -> RunningMeans:
        """The running means of the *_on_batch calls: fresh when `reset`, else the previous call's."""
        kept = getattr(self, "_on_batch_means", None)
        if reset or kept is None or kept[0] != kind or kept[1].metric_objects != \
                [list(m) for m in self._metric_objects]:
            kept = (kind, RunningMeans(self._loss_names, self._metric_objects))
            self._on_batch_means = kept
        return kept[1]

    def reset_metrics(self) -> None:
        """Reset the state of every compiled metric (and what `*_on_batch(reset_metrics=False)` kept)."""
        self._on_batch_means = None
        for ms in getattr(self, "_metric_objects", None) or []:
            for m in ms:
                m.reset_state()

    def predict_on_batch(self, x):
        from flexflow_keras.utils import tree

        return self.predict(x, batch_size=len(tree.flatten(x)[0]), verbose=0)


def _as_list(arg) -> list:
    if arg is None:
        return []
    if isinstance(arg, (list, tuple)):
        return list(arg)
    return [arg]


def _result(logs: dict, return_dict: bool):
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values


def _check_finite(arrays, what: str) -> None:
    for k, a in enumerate(arrays or []):
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = np.argwhere(~np.isfinite(a))[0]
            name = what if len(arrays) == 1 else f"{what}[{k}]"
            raise DataError(f"{name} contains NaN or infinity at index {tuple(int(i) for i in bad)} "
                            f"(value {a[tuple(bad)]}). Clean the data (e.g. np.nan_to_num) before fit().")
