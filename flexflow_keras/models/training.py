"""The training loop's `Trainer`, which `Model` inherits: `compile`, and the engine it builds.

This module owns what `compile` configures and the `execution.Engine` made from it: the losses, loss
weights and metrics per output, the training graph at the data's input shapes, and which engine a call
runs (the model's; a shape variant of it that shares its weights and optimizer slots,
models/shape_variants.py; or a new one that goes on from the trained optimizer slots). The calls that
drive the engine are mixins of `Trainer`, a module each:

- models/training_fit.py (`FitLoop`): `fit` and its epoch loop;
- models/training_inference.py (`Inference`): `evaluate` and `predict` over arrays;
- models/training_batches.py (`BatchCalls`): `train_on_batch`, `test_on_batch`, `predict_on_batch` and
  `reset_metrics`;
- models/training_data.py (`TrainingData`): the data as the arrays the engine reads, checked against the
  model; models/training_feeds.py: where batches come from (arrays, datasets, generators).

`LOOP_STEPS` is re-exported here from models/training_batches.py (its home) for the importers that name
it through this module.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from flexflow_keras.metrics.symbolic_updates import Recorded, metrics_of
from flexflow_keras.models import call_mode, custom_training, step_hooks
from flexflow_keras.models.metrics_hook import ComputeMetricsHook, loss_tracker
from flexflow_keras.models.shape_variants import ShapeVariants
from flexflow_keras.models.training_batches import LOOP_STEPS, BatchCalls
from flexflow_keras.models.training_data import TrainingData
from flexflow_keras.models.training_fit import FitLoop
from flexflow_keras.models.training_inference import Inference
from flexflow_keras.models.training_utils import NoLoss
from flexflow_keras.ops.graph import TensorSpec

__all__ = ["LOOP_STEPS", "Trainer"]


class Trainer(FitLoop, Inference, BatchCalls, TrainingData):
    """compile/fit/evaluate/predict for models (mixed into `Model`)."""

    loss = None  # set by compile(loss=...), as Keras 3's Trainer (a train_step may call self.loss(y, y_pred))

    # --- compile ----------------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True, **kwargs):
        """Configure the model for training (Keras 3 arguments; `run_eagerly`/`jit_compile` are accepted,
        every step runs through the runtime; with run_eagerly each output's logged loss is weighted by
        batch size, as Keras' eager steps log it, models/training_utils.RunningMeans).

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
        # as Keras 3: a compile without a loss keeps the loss (and its loss_weights) an earlier compile gave,
        # one without metrics and weighted_metrics keeps the earlier metrics (keras.io's subclassing guide
        # recompiles with compile(optimizer="adam") and still trains its mse next to the add_loss term)
        if loss is not None or "_loss_arg" not in self.__dict__:
            self._loss_arg = loss
            self._loss_weights_arg = loss_weights
        if loss is not None:
            self.loss = loss  # Keras 3's public attribute: the loss as compile was given it (None before)
        if metrics is not None or weighted_metrics is not None or "_metrics_arg" not in self.__dict__:
            self._metrics_arg = metrics
            self._weighted_metrics_arg = weighted_metrics
        self.run_eagerly = bool(run_eagerly)  # Keras' attribute; its eager steps weigh output losses by batch
        self.__dict__.pop("_ff_loss_tracker", None)  # each compile makes a fresh loss tracker, as Keras 3
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
        dict_outputs = isinstance(getattr(self, "_output_struct", None), dict)
        if isinstance(arg, dict):
            unknown = sorted(set(arg) - set(names))
            if unknown:
                raise ValueError(f"compile({what}=...) has keys {unknown} that are not outputs of model "
                                 f"'{self.name}'; outputs: {list(names)}.")
            missing = [n for n in names if n not in arg]
            if what == "loss" and missing and not dict_outputs:
                # Keras 3: a loss dict for a model whose outputs are a list (or one tensor) names every output
                raise ValueError(f"compile(loss=...) is a dict without the outputs {missing} of model "
                                 f"'{self.name}'; a dict of losses for a model with outputs {list(names)} needs "
                                 f"one entry per output. Give those outputs None for no loss, e.g. "
                                 f"loss={{{', '.join(repr(n) + (': None' if n in missing else ': ...') for n in names)}}}.")
            return [arg.get(n) for n in names]
        # a one-output model's loss=["mse"] / loss_weights=[0.5] are per-output lists too (Keras takes them)
        per_output = len(names) > 1 or (what in ("loss", "loss_weights") and len(names) == 1
                                        and isinstance(arg, (list, tuple)) and len(arg) == 1)
        # metrics: a list as long as the outputs is one entry per output (Keras 3, whose tf.keras refuses a
        # flat list of another length); a list of another length goes to every output (Keras 2)
        if isinstance(arg, (list, tuple)) and per_output and (what != "metrics" or len(arg) == len(names)):
            if dict_outputs and len(arg) == len(names):
                return _in_key_order(arg, names)
            if what == "loss" and len(arg) < len(names) and not dict_outputs:
                return list(arg) + [None] * (len(names) - len(arg))  # Keras 3: the outputs after it have no loss
            if len(arg) != len(names):
                raise ValueError(f"compile({what}=...) is a list of {len(arg)} entries but model '{self.name}' "
                                 f"has {len(names)} outputs {list(names)}.")
            return list(arg)
        return [arg] * len(names)

    def _loss_specs(self, graph, label_specs, weight_rank: int = 0):
        """(output names, a LossSpec per output that has a loss) of `graph` with labels of `label_specs`
        (None: predict, no losses); `weight_rank`: the rank of the sample weights a compute_loss override
        is handed (0: none, custom_training.weight_rank)."""
        from flexflow_keras import losses as losses_mod
        from flexflow_keras.execution import LossSpec

        out_names = self._output_names_for(graph)
        loss_args = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
        loss_args = custom_training.training_losses(self, graph, loss_args, label_specs is not None,  # i9-ops
                                                    weight_rank)
        weights_arg = getattr(self, "_loss_weights_arg", None)
        weights = self._per_output(weights_arg, out_names, "loss_weights")
        if isinstance(weights_arg, dict) and len(out_names) > 1:
            given = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
            missing = [n for n, a in zip(out_names, given, strict=True) if a is not None and n not in weights_arg]
            if missing:  # Keras 3 refuses it (a KeyError naming the output); a weight of 1.0 was taken
                raise ValueError(f"compile(loss_weights=...) is a dict without the outputs {missing} of model "
                                 f"'{self.name}', which have a loss; expected a weight for every output with a "
                                 f"loss {[n for n, a in zip(out_names, given, strict=True) if a is not None]}. "
                                 f"Add them (1.0 keeps a loss as it is).")
        specs = []
        for i in range(len(out_names)):
            if label_specs is not None and loss_args[i] is not None:
                w = 1.0 if weights[i] is None else float(weights[i])
                specs.append(LossSpec(i, losses_mod.get(loss_args[i]), w, label_specs[i]))
        if label_specs is not None and not specs:
            raise ValueError(f"Model '{self.name}' was compiled without a loss; pass loss= to compile() "
                             f"to train or evaluate it.")
        if label_specs is not None and len(out_names) > 1:
            # Keras 3 computes the metrics of an output without a loss too: a zero loss feeds it its labels
            metric_args = [self._per_output(getattr(self, f"_{what}_arg", None), out_names, what)
                           for what in ("metrics", "weighted_metrics")]
            with_loss = {spec.output_index for spec in specs}
            unlabelled = self.__dict__.get("_ff_unlabelled", frozenset())  # given no labels: no metrics either
            specs += [LossSpec(i, NoLoss(), 1.0, label_specs[i]) for i in range(len(out_names))
                      if i not in with_loss and out_names[i] not in unlabelled and any(_as_list(m[i]) for m in metric_args)]
            specs.sort(key=lambda spec: spec.output_index)
        return out_names, specs

    @staticmethod
    def _label_specs(ys):
        if ys is None:
            return None
        return tuple(TensorSpec((None,) + tuple(y.shape[1:]), str(y.dtype)) for y in ys)

    def _training_graph(self, graph, ys, weight_rank: int = 0):
        """The training graph of `graph` (the model at some input shapes) with labels like `ys`: what an
        engine runs, and what fit's step graph for batches of other shapes is (models/shape_variants.py)."""
        from flexflow_keras.execution import build_training_graph

        out_names, loss_specs = self._loss_specs(graph, self._label_specs(ys), weight_rank)
        return build_training_graph(graph.inputs, graph.outputs, loss_specs, out_names,
                                    self.__dict__.get("_ff_logit_outputs", ()))

    def _engine_for(self, graph, ys: Sequence[np.ndarray] | None):
        from flexflow_keras import metrics as metrics_mod
        from flexflow_keras.execution import Engine, build_training_graph
        from flexflow_keras.metrics.logits import reads_logits

        label_specs = self._label_specs(ys)
        rank = self.__dict__.get("_ff_weight_rank", 0) if ys is not None else 0
        key = (id(graph), label_specs, rank)
        if self._engine is not None and self._engine_key == key:
            return _current_weights(self._engine)
        carried = self._trained_slots()
        self._detach_engine()
        out_names, loss_specs = self._loss_specs(graph, label_specs, rank)
        metric_objects, self._loss_names, self._loss_weights = [], [], []
        metric_args = self._per_output(getattr(self, "_metrics_arg", None), out_names, "metrics")
        weighted_args = self._per_output(getattr(self, "_weighted_metrics_arg", None), out_names,
                                         "weighted_metrics")
        multi = len(out_names) > 1
        unnamed = _unnamed_outputs(self, len(out_names))  # a subclassed model's: Keras' names, not output_0_
        loss_ids = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss") if unnamed else None
        log_names = {}
        by_output = {spec.output_index: spec for spec in loss_specs}
        self.__dict__["_ff_metrics_only"] = frozenset(out_names[s.output_index] for s in loss_specs
                                                      if isinstance(s.loss, NoLoss))
        for i, name in enumerate(out_names):
            objs = []
            spec = by_output.get(i)
            if spec is not None:
                loss = spec.loss
                self._loss_names.append(name)
                if unnamed and not isinstance(loss, NoLoss):
                    log_names[name] = _loss_log_name(loss_ids[i], loss)
                self._loss_weights.append(spec.weight)
                y_pred_shape = graph.outputs[i].shape
                plain = _as_list(metric_args[i])
                for j, ident in enumerate(plain + _as_list(weighted_args[i])):
                    m = metrics_mod.resolve_metric(ident, loss, label_specs[i].shape, y_pred_shape)
                    # a metric object met again (a later compile, or one that keeps the earlier metrics) is
                    # named from its own name, not from the prefixed one an earlier engine gave it
                    m.name = m.__dict__.setdefault("_ff_base_name", m.name)
                    m._ff_weighted = j >= len(plain)  # Keras 3: only weighted_metrics see sample weights
                    m._ff_made_name = m.name  # the name evaluate's list is ordered by (keras_flat_names)
                    objs.append(m)
                    if unnamed:  # named below, across the outputs
                        continue
                    if m._ff_weighted and any(o.name == (f"{name}_{m.name}" if multi else m.name) for o in objs[:-1]):
                        m.name = f"weighted_{m.name}"
                    if multi:
                        m.name = f"{name}_{m.name}"
                    m.name = _unique(m.name, {o.name for o in objs[:-1]})
            metric_objects.append(objs)
        if unnamed:
            _name_unnamed_outputs_metrics(metric_objects)
        self.__dict__["_ff_loss_log_names"] = log_names  # RunningMeans.loss_logs, model_metrics
        # outputs whose metrics may compute a crossentropy read its logits, as in Keras (metrics/logits.py)
        # (a compute_metrics override is the user's code, which may call a crossentropy on any output)
        every = bool(loss_specs) and step_hooks.overrides(self, "compute_metrics")
        self._ff_logit_outputs = frozenset(i for i, objs in enumerate(metric_objects)
                                           if every or any(reads_logits(m) for m in objs))
        tgraph = build_training_graph(graph.inputs, graph.outputs, loss_specs, out_names, self._ff_logit_outputs)
        if loss_specs and step_hooks.overrides(self, "compute_metrics"):  # one metric object runs the override
            loss_tracker(self)  # first in self.metrics, as Keras' (an override may return its result)
            hook = ComputeMetricsHook(self, [metric_objects[s.output_index] for s in loss_specs])
            first = loss_specs[0].output_index
            metric_objects = [[hook] if i == first else [] for i in range(len(metric_objects))]
        if tgraph.recorded:  # metrics a compute_loss override updates (metrics/symbolic_updates.py)
            recorded = Recorded(metrics_of(tgraph.recorded))
            metric_objects[loss_specs[0].output_index].append(recorded)
            if step_hooks.overrides(self, "compute_metrics"):
                metric_objects[loss_specs[0].output_index][0].add_tracked(recorded._tracked())
        self._metric_objects = [metric_objects[s.output_index] for s in loss_specs]
        held = _held_elsewhere(self.weights)  # by another model's engine (these layers are shared)
        engine = Engine(tgraph, self.weights, self.trainable_weights, getattr(self, "optimizer", None),
                        metric_objects, getattr(self, "_strategy_arg", None))
        if held and call_mode.inference():  # a predict or evaluate engine reads them: the holder keeps them
            for v, (read, assign) in held.items():
                v._sync_hook = read
                if assign is None:
                    v.__dict__.pop("_on_assign", None)
                else:
                    v._on_assign = assign
        from flexflow_keras.saving.optimizer_state import restore_pending_slots

        restore_pending_slots(engine)  # slots of a model loaded from a .keras file
        if carried:
            engine.weights.write_slots({uid: a for uid, a in carried.items() if uid in engine.weights.slots})
        self._engine, self._engine_key = engine, key
        opt = getattr(self, "optimizer", None)
        if opt is not None and hasattr(opt, "_eager_slots"):  # its `variables` read this model's slots
            opt.__dict__["_ff_model"] = weakref.ref(self)
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

    def _batch_engine(self, graph, xs, ys):
        """The engine for a batch of inputs `xs` and labels `ys` (None: predict) outside fit's loop
        (train_on_batch, test_on_batch, evaluate, predict): the model's engine for its shapes; for other
        shapes, a variant of the model's training engine that shares its weights and optimizer slots
        (models/shape_variants.py), so a loop over batches padded to their own lengths, or an evaluation
        at another length between two fits, keeps Adam's moments; else a new engine."""
        root, key = self._engine, self._engine_key
        rank = self.__dict__.get("_ff_weight_rank", 0) if ys is not None else 0
        # an engine handing compute_loss weights takes a call without them (ones), not the other way round
        if root is not None and key[0] == id(graph) and (ys is None or (
                key[1] == self._label_specs(ys) and rank in (0, key[2]))):
            return _current_weights(root)
        if root is not None and ys is not None and rank != key[2]:
            return self._engine_for(graph, ys)
        if root is None or (ys is not None and not ys) or not any(
                t is not None for t in root.tgraph.per_sample_losses):
            return self._engine_for(graph, ys)
        # inside fit, the training=False graph of a call() branching on training (fit's validation, a
        # callback's predict) runs on a variant of fit's engine, which stays the model's (models/call_mode.py)
        inference = (call_mode.inference() and call_mode.fitting() and key[0] != id(graph)
                     and bool(self.__dict__.get("_inference_graphs")))
        return _current_weights(self._variants(root, len(graph.inputs), ys is not None).engine_for(
            tuple(xs) + tuple(ys or ()) + (None,), inference))

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


def _in_key_order(entries, names) -> list:
    """Per-output `entries` given as a list to a model whose outputs are a dict, ordered like `names` (the
    dict's keys): Keras 3 flattens a dict by sorted keys, so the list's i-th entry is the i-th sorted key's."""
    by_key = dict(zip(sorted(names), entries, strict=True))
    return [by_key[n] for n in names]


def _as_list(arg) -> list:
    if arg is None:
        return []
    if isinstance(arg, (list, tuple)):
        return list(arg)
    return [arg]


# --- variables shared between models ----------------------------------------------------------------------
# Models that share layers (an encoder and the autoencoder around it, an OCR model and the prediction model
# cut from it) share variables, and each model's engine has its own copy of their values. The engine that
# trains them holds them (its `attach`: reads and assignments go through it); an engine that only reads them
# (predict, evaluate) brings its copy up to date from the holder each time it is handed out.


def _held_elsewhere(variables) -> dict:
    """{variable: (read hook, assign hook)} of the variables another engine holds, their host values made
    current from it (a new engine copies the host values)."""
    held = {}
    for v in variables:
        hook = v._sync_hook
        if hook is not None:
            hook(v)  # the holder's latest values to the host
            held[v] = (hook, v.__dict__.get("_on_assign"))
    return held


def _current_weights(engine):
    """`engine`, its weight regions brought up to the values of the engine that holds its variables when that
    is another one (a model sharing these layers trained them since); a training call then holds them."""
    stale, held = False, False
    for v in engine.variables:
        if engine.holds(v):
            continue
        if v._sync_hook is not None:
            v._sync_hook(v)
            held = True
        engine.weights.push(v)
        stale = True
    if stale and (not held or not call_mode.inference()):
        engine.attach()
    return engine


def _unnamed_outputs(model, n_outputs: int) -> bool:
    """Whether Keras 3 gives `model`'s several outputs no names: a subclassed model has no output_names
    unless call() returns a dict, so its per-output losses log as "<loss>_loss" and its metrics under their
    own names ("mae", then "mae_1"), where a functional model's log as "<output>_loss" and "<output>_mae"."""
    from flexflow_keras.models.functional import Functional
    from flexflow_keras.models.sequential import Sequential

    if n_outputs < 2 or isinstance(model, Functional | Sequential):
        return False
    trace = getattr(model, "_last_trace", None)
    return not (trace and isinstance(trace[1], dict))


def _unique(name: str, taken: set) -> str:
    """`name`, or the first of name_1, name_2, ... not in `taken` (two lambda metrics log as lambda and
    lambda_1, as in Keras)."""
    base, k = name, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def _name_unnamed_outputs_metrics(metric_objects: list) -> None:
    """Name the metrics of a subclassed model's unnamed outputs as Keras 3's CompileMetrics.result does:
    every output's plain metrics first, then the weighted ones, unique across the outputs ("mae", "mae_1");
    a weighted metric whose name is taken becomes "weighted_<name>" (then "weighted_<name>_1")."""
    taken: set = set()
    for weighted in (False, True):
        for objs in metric_objects:
            for m in objs:
                if m._ff_weighted != weighted:
                    continue
                if weighted and m.name in taken:
                    m.name = f"weighted_{m.name}"
                m.name = _unique(m.name, taken)
                taken.add(m.name)


def _loss_log_name(identifier, loss) -> str:
    """The name Keras 3 logs an unnamed output's loss under (before "_loss"), as its compile_utils.get_loss
    names it: a loss function's string as written ("mse"), else the Loss object's name, else the
    function's (a class name string gives the object, so its name)."""
    if isinstance(identifier, str) and not identifier[:1].isupper():
        return identifier
    return str(getattr(loss, "name", None) or getattr(identifier, "__name__", None) or identifier)
