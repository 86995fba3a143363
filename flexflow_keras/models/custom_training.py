"""What custom code adds to a model's training loss, and the Keras 3 conveniences around model inputs.

- ``layer.add_loss(t)`` in ``call()`` (or Keras 2's ``model.add_loss(t)``) records a symbolic scalar; the
  training loss of the model's first output becomes ``compiled loss + sum(added losses)``. A model
  compiled without a loss trains on its added losses alone (``fit(x)`` without labels, as Keras 2's VAE).
- A subclass overriding ``compute_loss(x, y, y_pred, sample_weight, training)`` gets it called on the
  symbolic inputs, labels and predictions; its scalar result is the training loss. When the fit or
  evaluation has sample weights (or class weights), ``sample_weight`` is a symbolic input of the step
  graph holding them (per sample, or per timestep), and the loss is taken as the override returns it,
  not weighted again; without weights it is None, as in Keras (`weight_rank`). Metrics the override
  updates with symbolic tensors are computed each step (metrics/symbolic_updates.py).
- A loss that returns a scalar (``K.mean(...)`` over the batch, as Keras 2's contrastive loss) is
  broadcast to one value per sample, so the batch mean the training loop takes is that scalar.
- `adjust_input_rank` applies Keras 3's rule: data one dim short of an input whose last dim is 1 gets
  that dim; data with an extra trailing 1 loses it.
- `EagerTensor` (ops/eager_tensor.py): what ``model(x)`` returns on arrays (an ndarray with ``.numpy()``).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import DataError, GraphError
from flexflow_keras.losses import Loss
from flexflow_keras.models import step_hooks
from flexflow_keras.ops import tape
from flexflow_keras.ops.eager_tensor import EagerTensor, as_eager  # noqa: F401 (re-exported)
from flexflow_keras.ops.graph import KerasTensor, OpGraph
from flexflow_keras.utils import tree


# --- add_loss ----------------------------------------------------------------------------------------------
def add_loss(layer, losses) -> None:
    """Record `losses` on `layer`: KerasTensors for training, numbers from eager calls, callables
    (Keras 2's zero-argument weight penalties) evaluated now."""
    for item in tree.flatten(losses):
        if callable(item) and not isinstance(item, KerasTensor):
            item = item()
        if isinstance(item, KerasTensor):
            if np.dtype(item.dtype).kind != "f":
                from flexflow_keras import ops

                item = ops.cast(item, "float32")
            layer.__dict__.setdefault("_symbolic_losses", []).append(item)
        elif item is not None:
            layer.__dict__.setdefault("_eager_losses", []).append(_eager_value(item))


def _eager_value(item):
    """An eagerly added loss: a float, or while a GradientTape records, the recorded sum (ops/tape.py)."""
    from flexflow_keras import ops

    if tape.recording() and isinstance(item, np.ndarray) and item.dtype.kind == "f":
        return item if item.ndim == 0 else ops.sum(item)
    return float(np.sum(np.asarray(item)))


def eager_mode(training) -> bool | None:
    """A model's eager call's `training` for `run_eager`: None (neither passed nor inherited) lets each
    layer take its own default, as Keras 3 (an augmentation Sequential called on images augments)."""
    return None if training is None else bool(training)


def run_eager(model, graph: OpGraph, arrays, training: bool | None) -> list:
    """`graph`'s outputs for `arrays` (a model called on arrays); the loss tensors its layers added
    (``self.add_loss(...)`` in a call()) are computed too, and become those layers' `losses`, as Keras.
    An output made by a softmax or sigmoid carries ``_keras_logits`` as the op left it (ops/base.py).
    `training` None: each layer's ops run in the mode Keras 3 resolves for its call (layers/eager.run_graph)."""
    from flexflow_keras.layers.eager import run_graph

    cache = model.__dict__.setdefault("_eager_loss_graphs", {})
    if id(graph) not in cache:
        by_layer = [(la, t) for la in _all_layers(model) for t in la.__dict__.get("_symbolic_losses", [])
                    if _computed_by(graph, t)]
        extra = [t for _, t in by_layer]
        full = OpGraph(graph.inputs, list(graph.outputs) + extra) if extra else graph
        if len(cache) > 8:
            cache.clear()
        # the graph held: its id stays its own
        cache[id(graph)] = (graph, full, [la for la, _ in by_layer])
    _, full, owners = cache[id(graph)]
    values = run_graph(full, arrays, training=training)
    n = len(graph.outputs)
    for la in set(owners):
        la.__dict__["_eager_losses"] = []
    for la, v in zip(owners, values[n:], strict=True):
        la.__dict__["_eager_losses"].append(_eager_value(v))
    return values[:n]


def _computed_by(graph: OpGraph, t: KerasTensor) -> bool:
    try:
        OpGraph(graph.inputs, [t])
    except GraphError:
        return False
    return True


def _all_layers(model) -> list:
    out, seen, stack = [], set(), [model]
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        out.append(layer)
        stack.extend(reversed(layer._sublayers()))
    return out


def symbolic_losses(model, graph: OpGraph) -> list[KerasTensor]:
    """The added loss tensors of `model` and its layers that `graph`'s inputs compute, each reduced to a
    scalar by a sum (Keras 3's rule for add_loss)."""
    from flexflow_keras import ops

    found, seen = [], set()
    for layer in _all_layers(model):
        for t in layer.__dict__.get("_symbolic_losses", []):
            if t.uid in seen:
                continue
            try:
                OpGraph(graph.inputs, [t])
            except GraphError:
                continue  # recorded by another trace or another model
            seen.add(t.uid)
            found.append(t if t.ndim == 0 else ops.sum(t))
    return found


_scope: list[OpGraph] = []  # the graph whose loss is being built (compute_loss overrides read `losses`)


def current_symbolic_losses(layer) -> list[KerasTensor] | None:
    """Inside a compute_loss call made while building a training loss: `layer`'s added loss tensors for
    that graph; otherwise None."""
    return symbolic_losses(layer, _scope[-1]) if _scope else None


class _Inputs:
    def __init__(self, inputs):
        self.inputs = tuple(inputs)


def default_compute_loss(model, x, y, y_pred, sample_weight=None) -> KerasTensor:
    """Keras 3's default `compute_loss`: the compiled loss of each output (weighted by `sample_weight`,
    reduced to a scalar: ``sum(loss * w) / elements``) plus the added losses that `x` computes."""
    from flexflow_keras import losses as losses_mod
    from flexflow_keras import ops
    from flexflow_keras.losses import _same_rank

    preds = tree.flatten(y_pred)
    ys = tree.flatten(y) if y is not None else []
    names = model._output_names_for(_Outputs(preds))
    args = model._per_output(getattr(model, "_loss_arg", None), names, "loss")
    terms = []
    for i, arg in enumerate(args):
        loss = losses_mod.get(arg)
        if loss is not None and i < len(ys):
            value = loss.per_sample(ys[i], preds[i])
            sw = sample_weight[i] if isinstance(sample_weight, (list, tuple)) else sample_weight
            if sw is not None:
                value = ops.multiply(*_same_rank(value, ops.cast(sw, value.dtype)))
            terms.append(ops.mean(value) if value.ndim else value)
    terms += symbolic_losses(model, _Inputs(tree.flatten(x)))
    if not terms:
        raise ValueError(f"Model '{model.name}': no loss to compute. Provide a `loss` argument in compile(), or "
                         f"add_loss() terms.")
    total = terms[0]
    for t in terms[1:]:
        total = ops.add(total, t)
    return total


class _Outputs:
    def __init__(self, outputs):
        self.outputs = tuple(outputs)


def eager_losses(layer) -> list[float]:
    """The values added by `layer` and its sublayers during their latest eager calls."""
    return [v for la in _all_layers(layer) for v in la.__dict__.get("_eager_losses", [])]


# --- the training loss -----------------------------------------------------------------------------------------
def _per_sample(value: KerasTensor, like: KerasTensor) -> KerasTensor:
    """`value` with a batch dim: a scalar (or batch-less tensor) becomes one copy per sample of `like`."""
    from flexflow_keras import ops

    if value.ndim and value.shape[0] is None:
        return value
    if value.ndim:
        value = ops.sum(value)
    ref = ops.stop_gradient(like)
    if ref.ndim > 1:
        ref = ops.mean(ref, axis=tuple(range(1, ref.ndim)))
    return ops.add(ops.multiply(ref, 0.0), value)


class GraphLoss(Loss):
    """The training loss of one output: a base loss (or a compute_loss override, or none) plus the
    model's added losses, always per sample."""

    def __init__(self, base: Loss | None, extras, model=None, model_inputs=(), hook: str | None = None,
                 weight_rank: int = 0):
        super().__init__(name=getattr(base, "name", "loss"))
        self.base, self.extras, self.model, self.model_inputs = base, list(extras), model, tuple(model_inputs)
        self.hook = hook
        self.label_kind = getattr(base, "label_kind", None)
        self.from_logits = getattr(base, "from_logits", False)
        # the rank of the sample weights the override is handed (0: none, sample_weight=None); the
        # training graph makes them an input (execution/training_graph.py)
        self.weight_rank = int(weight_rank) if model is not None or _overrides_call(base) else 0
        self.recorded_calls: list = []  # the symbolic metric updates of the latest trace

    def per_sample(self, y_true, y_pred, sample_weight=None):
        if self.model is not None:
            from flexflow_keras.metrics.symbolic_updates import recording

            x = self.model_inputs[0] if len(self.model_inputs) == 1 else list(self.model_inputs)
            _scope.append(_Inputs(self.model_inputs))
            try:
                with recording() as calls:
                    if self.hook is not None:
                        total = step_hooks.trace_step(self.model, self.hook, self.model_inputs, y_true, y_pred,
                                                      sample_weight)
                    else:
                        total = step_hooks.call_compute_loss(self.model, x, y_true, y_pred, sample_weight,
                                                             training=True)
            finally:
                _scope.pop()
            self.recorded_calls = list(calls)
            if not isinstance(total, KerasTensor):
                raise TypeError(f"compute_loss() of model '{self.model.name}' must return a tensor computed with "
                                f"keras.ops from its arguments, received {type(total).__name__}.")
            return _per_sample(total, y_pred)
        if self.base is None:
            out = None
        elif sample_weight is not None:  # a __call__ override weighs its samples itself, as Keras hands them
            out = _per_sample(self.base(y_true, y_pred, sample_weight=sample_weight), y_pred)
        else:
            out = _per_sample(self.base.per_sample(y_true, y_pred), y_pred)
        for t in self.extras:
            out = _per_sample(t, y_pred) if out is None else out + t
        return out

    def validate(self, y, y_pred_shape, output_name):
        if self.base is not None and hasattr(self.base, "validate"):
            self.base.validate(y, y_pred_shape, output_name)

    def get_config(self) -> dict:
        return {"name": self.name}


def training_losses(model, graph: OpGraph, losses: list, with_labels: bool = True, weight_rank: int = 0) -> list:
    """Per output, the loss object to train with (see the module docstring); `losses` are the compiled
    ones (objects or None). Unchanged when nothing custom applies. Step overrides are refused when
    labels are given (fit, evaluate); predict runs the model's graph as it is. `weight_rank`: the rank
    of the sample weights an override is handed (0: None)."""
    from flexflow_keras import losses as losses_mod

    if with_labels:
        step_hooks.check_hooks(model)
    losses = [losses_mod.get(a) for a in losses]
    hook = next((h for h in ("train_step", "test_step") if step_hooks.overrides(model, h)), None)
    if hook is not None or step_hooks.overrides(model, "compute_loss"):
        if len(graph.outputs) != 1:
            if not with_labels:  # predict: no loss is computed, the model's graph runs as it is
                return losses
            raise ValueError(f"Model '{model.name}' overrides {hook or 'compute_loss'}(); that is supported for "
                             f"models with one output, this one has {len(graph.outputs)}.")
        return [GraphLoss(losses[0], (), model, graph.inputs, hook, weight_rank)]
    extras = symbolic_losses(model, graph)
    out = list(losses)
    if extras:
        out[0] = GraphLoss(losses[0], extras)
    for i, loss in enumerate(out):
        if isinstance(loss, GraphLoss) and _overrides_call(loss.base):
            loss.weight_rank = weight_rank  # (with added losses)
        elif loss is not None and not isinstance(loss, GraphLoss) and type(loss).__module__ != "flexflow_keras.losses":
            # a user's loss class may reduce over the batch; one overriding __call__ gets its output's sample
            # weights, on every output that has such a loss (Keras' compiled loss calls each output's loss
            # with that output's weights)
            out[i] = GraphLoss(loss, (), weight_rank=weight_rank)
        elif loss is not None and type(loss).__name__ == "LossFunctionWrapper":
            out[i] = GraphLoss(loss, ())
    return out


def _overrides_call(loss) -> bool:
    """Whether `loss` is a Loss whose class overrides ``__call__`` (Keras 3's compiled loss calls
    ``loss(y_true, y_pred, sample_weight)``: such a loss weighs its samples itself)."""
    return isinstance(loss, Loss) and type(loss).__call__ is not Loss.__call__


def _call_override(model) -> bool:
    """Whether a compiled loss of `model` (of any output) overrides ``__call__``."""
    arg = getattr(model, "_loss_arg", None)
    if isinstance(arg, dict):
        arg = list(arg.values())
    return any(_overrides_call(a) for a in (arg if isinstance(arg, (list, tuple)) else [arg]))


def weight_rank(model, sample_weight) -> int:
    """How many dims the sample weights handed to `model`'s compute_loss (or traced train_step/test_step)
    override, or to the ``__call__`` of a compiled Loss that overrides it, have: 0 when it has none to get
    (no override, or no weights: ``sample_weight=None``), 1 per sample, 2 per timestep (for weights per
    output, those of the most dims: fewer are broadcast).

    Raises:
        DataError: (a ValueError) for weights per output (a list or dict) to a compute_loss or step
            override: that path has one output.
    """
    hooked = any(step_hooks.overrides(model, h) for h in ("compute_loss", "train_step", "test_step"))
    if sample_weight is None or not (hooked or _call_override(model)):
        return 0
    if isinstance(sample_weight, tuple) and not hooked:
        return max([max(1, int(np.ndim(w))) for w in sample_weight if w is not None] or [0])
    if isinstance(sample_weight, tuple):
        given = [w for w in sample_weight if w is not None]
        if len(sample_weight) != 1 or not given:
            raise DataError(f"Model '{model.name}' overrides compute_loss()/train_step() and received one sample "
                            f"weight per output ({len(sample_weight)}); expected one array of shape (n,) or (n, T). "
                            f"Pass the weights of its one output as a single array.")
        sample_weight = given[0]
    return max(1, int(np.ndim(sample_weight)))


def check_override_weights(model, sample_weight, rank: int) -> None:
    """Refuse a batch's weights that the step graph of `model`'s override cannot take: it was built for
    weights of `rank` dims (0: without weights, as the first batch of a dataset had none).

    Raises:
        DataError: (a ValueError) naming the model, the weights' shape and what to do.
    """
    got = weight_rank(model, sample_weight)
    if got <= rank:
        return  # per-sample weights for a graph of per-timestep ones are broadcast, as Keras' losses do
    arrays = sample_weight if isinstance(sample_weight, tuple) else (sample_weight,)
    if rank == 0 and all(w is None or np.all(np.asarray(w) == 1) for w in arrays):
        return  # (the weights a batch without any gets)
    shapes = [tuple(np.shape(w)) for w in arrays if w is not None]
    raise DataError(
        f"Model '{model.name}' overrides compute_loss()/train_step(): its step graph hands compute_loss "
        f"{'no sample weights (the first batch had none)' if rank == 0 else f'sample weights of {rank} dims'}, "
        f"and a batch came with sample weights of shape {shapes[0] if shapes else '?'}. Expected every batch "
        f"to carry weights of the same rank (or none). Yield (x, y, sample_weight) with the same shape of "
        f"weights in every batch, from the first one on.")


def labels_optional(model, graph: OpGraph, compiled_losses: list) -> bool:
    """Whether fit/evaluate may run without labels: no compiled loss, but added losses or compute_loss."""
    if any(a is not None for a in compiled_losses):
        return False
    return any(step_hooks.overrides(model, h) for h in ("compute_loss", "train_step", "test_step")) or bool(
        symbolic_losses(model, graph))


def placeholder_labels(n: int) -> np.ndarray:
    """Labels for a model trained on its added losses alone (read by no op)."""
    return np.zeros((n, 1), np.float32)


# --- inputs --------------------------------------------------------------------------------------------------
def _ops():
    from flexflow_keras import ops

    return ops


def adjust_input_rank(xs: list, inputs) -> list:
    """Keras 3's input rank rule (see the module docstring); other mismatches are left to the checks."""
    out = []
    for x, t in zip(xs, inputs, strict=False):
        if x is None or not hasattr(x, "ndim"):
            out.append(x)
            continue
        ref = tuple(t.shape)
        if x.ndim == len(ref) + 1 and x.shape[-1] == 1:
            x = _ops().squeeze(x, -1) if isinstance(x, KerasTensor) else x.reshape(x.shape[:-1])
        elif x.ndim == len(ref) - 1 and ref and ref[-1] == 1:
            x = _ops().expand_dims(x, -1) if isinstance(x, KerasTensor) else x.reshape(x.shape + (1,))
        out.append(x)
    return out + list(xs[len(out):])
