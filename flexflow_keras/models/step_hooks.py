"""Keras 3's training-step overrides (``train_step``, ``test_step``, ``compute_metrics``) on a framework
that runs each step as one traced graph.

A ``train_step`` written as the keras.io guides write it (unpack ``data``, ``y_pred = self(x,
training=True)``, ``loss = self.compute_loss(...)``, then the gradient of that loss over
``self.trainable_variables`` applied by ``self.optimizer``) is traced on symbolic data up to its
``compute_loss`` call (Keras 2's ``self.compiled_loss(y, y_pred)`` is that call too, and a prediction
through a wrapped model, ``self.model(x)``, is the forward pass the graph recorded; `layers.call_memo`): that loss is what the graph trains, with the compiled optimizer over every
trainable weight, which is what the rest of such a step does. The Python after ``compute_loss`` (the
``tf.GradientTape`` gradient, the optimizer call, metric trackers) is not run; logs show the loss and the
compiled metrics. A step that does anything else with its gradients (two optimizers, clipping, a
variable subset), or never calls ``compute_loss``, runs eagerly instead (models/eager_fit.py), and
`eager_reason` says why.
A ``test_step`` that calls ``compute_loss`` evaluates like the default one; a ``compute_metrics`` override
runs on each shard's NumPy batch (`models/metrics_hook.py`).
"""

from __future__ import annotations

import inspect
import logging
import re
import weakref

from flexflow_keras.errors import GraphError
from flexflow_keras.layers import call_memo
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree

log = logging.getLogger("flexflow_keras")

_FIX = ("Put the custom loss in a compute_loss(self, x, y, y_pred, sample_weight, training) override (or add_loss() "
        "in a layer) and pass metrics to compile(metrics=[...]); a train_step is supported when it computes "
        "self.compute_loss(...) and applies its gradient over self.trainable_variables with self.optimizer.")


def _takes_training(fn) -> bool:
    """Whether a compute_loss takes `training`: Keras 3.3 added the argument, and overrides written before
    it (keras.io's masked language model) have the four-argument signature, which Keras' own trainer
    calls without it. As Keras, only a parameter named `training` counts (a ``**kwargs`` is not given it).
    Read once per function."""
    func = getattr(fn, "__func__", fn)
    try:
        return _TAKES_TRAINING[func]
    except (KeyError, TypeError):
        pass
    try:
        takes = "training" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes = True
    try:
        _TAKES_TRAINING[func] = takes
    except TypeError:  # an unhashable callable: asked again next time
        pass
    return takes


_TAKES_TRAINING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def call_compute_loss(model, x, y, y_pred, sample_weight=None, training=True):
    """``model.compute_loss(...)``, with `training` only where the method takes it (`_takes_training`)."""
    if _takes_training(model.compute_loss):
        return model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training)
    return model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)


# How a step computes its loss: Keras 3's compute_loss, or Keras 2's compiled_loss (a Keras 3 shim for it)
# Keras' own loss entry points, called on the model (`self.compute_loss(`, `super().compute_loss(`): a helper
# of the script's own (`self._compute_loss(data)`, keras.io's siamese network) is not one of them
_LOSS_CALLS = re.compile(r"(?<![\w])(?:self|super\(\)|model)\s*\.\s*(?:compute_loss|compiled_loss)\s*\(")


def overrides(model, name: str) -> bool:
    """Whether `model`'s class overrides `Model.<name>`."""
    from flexflow_keras.models.model import Model

    return getattr(type(model), name, None) is not getattr(Model, name, None)


def _source(model, hook: str) -> str:
    try:
        return inspect.getsource(getattr(type(model), hook))
    except (OSError, TypeError):
        return ""


def _indexes_batch_by_key(model, hook: str, src: str) -> bool:
    """Whether the step subscripts its batch argument with a string (``batch["source"]``, keras.io's
    transformer_asr): its batch is a dict it takes apart itself, so it calls the model on inputs it builds
    (``self([source, target[:, :-1]])``) rather than on the data's x, which a trace needs (`trace_step`
    hands it an ``(x, y)`` tuple and reads the model's graph on x)."""
    try:
        params = list(inspect.signature(getattr(model, hook)).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and re.search(rf"(?<![\w.]){re.escape(params[0])}\s*\[\s*[rbuRBU]?['\"]", src) is not None


def eager_reason(model, hook: str = "train_step") -> str | None:
    """Why `model`'s `hook` override cannot be traced into the step graph (fit then runs it eagerly,
    models/eager_fit.py), or None when it is traced or not overridden.

    Raises:
        GraphError: for a step that no flexflow_keras path runs (PyTorch/JAX autodiff).
    """
    if not overrides(model, hook):
        return None
    src = _source(model, hook)
    if f"super().{hook}" in src:
        return None
    if getattr(model, "run_eagerly", False):
        return "was compiled with run_eagerly=True"
    if ".backward()" in src or "jax." in src:
        raise GraphError(f"Model '{model.name}' overrides {hook}() with PyTorch/JAX autodiff; flexflow_keras runs "
                         f"TensorFlow's GradientTape, or traces a step that calls self.compute_loss(). {_FIX}")
    if not _LOSS_CALLS.search(src):
        return "does not call self.compute_loss()"
    if _indexes_batch_by_key(model, hook, src):
        return "takes what it predicts on from its batch by key (batch[\"...\"]) and builds its own labels"
    if hook != "train_step":
        return None
    if src.count(".gradient(") + src.count("grad(") > 1 or src.count("apply_gradients(") + src.count(
            "optimizer.apply(") > 1:
        return "computes or applies more than one gradient"
    if any(c in src for c in ("clip_by", "clipnorm", "clip_grad")):
        return "transforms the gradients"
    return None


def loss_tracked_per_batch(model, hook: str) -> bool:
    """Whether `model`'s traced `hook` override updates a loss tracker with its compute_loss result and no
    weight (``loss = self.compute_loss(...)`` then ``metric.update_state(loss)``, keras.io's "customizing
    fit" guide): Keras' Mean then averages the batch values, a short last batch counting as a full one,
    where the default step weighs each by its batch size. The rest of such a step is not run (module
    docstring), so the logged loss follows this reading of its source."""
    if not overrides(model, hook):
        return False
    src = _source(model, hook)
    if f"super().{hook}" in src or eager_reason(model, hook) is not None:
        return False
    names = re.findall(r"(\w+)\s*=\s*(?:self|super\(\)|model)\s*\.\s*(?:compute_loss|compiled_loss)\s*\(", src)
    return any(re.search(rf"\.update_state\(\s*{re.escape(n)}\s*\)", src) for n in names)


def unfit_data_reason(model, error: Exception) -> str | None:
    """Why fit runs `model`'s train_step eagerly after its batch's x failed to fit the model's inputs
    (`error`, a ShapeError): a step that calls the model on pieces of its batch (keras.io's metric_learning:
    ``anchors, positives = data[0], data[1]``, then ``self(anchors)`` and ``self(positives)``) cannot be
    traced on the data's x, and Keras runs it as written. None without a train_step override."""
    if not overrides(model, "train_step"):
        return None
    return f"calls the model on inputs it takes out of its batch (the batch does not fit the model's inputs: {error})"


def assign_reason(model, error, hook: str) -> str | None:
    """Why `model`'s `hook` (train_step / test_step) runs eagerly after recording its call() stopped on a
    variable assigned a computed value (`error`, an ops/assign_in_call.AssignInCallError: keras.io's mixture
    of experts counts expert use so), which Keras runs as written. None without an override of `hook`
    (Keras' own step is only traced here)."""
    if not overrides(model, hook):
        return None
    return (f"calls a layer whose call() assigns a variable a computed value ({error.where}), which a traced "
            f"step cannot hold")


def check_hooks(model) -> None:
    """Refuse a test_step that cannot be traced next to a traced train_step (validation in the step graph)."""
    why = eager_reason(model, "test_step")
    if why is not None:
        raise GraphError(f"Model '{model.name}' overrides test_step() without calling self.compute_loss(); "
                         f"flexflow_keras evaluates the compiled loss and metrics in the step graph next to a "
                         f"traced train_step. {_FIX}")


class _LossCaptured(Exception):
    """Raised from compute_loss during a train_step trace, carrying the loss (ends the trace there)."""

    def __init__(self, loss):
        super().__init__("train_step trace reached compute_loss")
        self.loss = loss


def trace_step(model, hook: str, inputs, y_true, y_pred, sample_weight=None):
    """Run ``model.<hook>((x, y))`` (``(x, y, sample_weight)`` when the step graph has sample weights) on
    symbolic tensors up to its compute_loss call; returns that loss.

    While tracing, calling the model on its own graph inputs gives the graph's prediction `y_pred` (no
    second copy of the forward graph), and `compute_loss` hands its result back by ending the trace.
    """
    original_call, original_loss = model.call, model.compute_loss
    ids = [t.uid for t in inputs]

    def call(x, *args, **kwargs):
        if [getattr(t, "uid", None) for t in tree.flatten(x)] == ids:
            return y_pred
        return original_call(x, *args, **kwargs)

    takes_training = _takes_training(original_loss)

    def capture(*args, **kwargs):
        if not takes_training:
            kwargs.pop("training", None)
        args, kwargs = _as_prediction(args, y_pred), {k: _as_prediction(v, y_pred) for k, v in kwargs.items()}
        raise _LossCaptured(original_loss(*args, **kwargs))

    x = inputs[0] if len(inputs) == 1 else list(inputs)
    memo = model.__dict__.get("_call_memos", {}).get(tuple(ids), {})
    model.__dict__["call"], model.__dict__["compute_loss"] = call, capture
    try:
        with call_memo.replaying(memo):  # `self.model(x)` on the graph inputs: the recorded forward pass
            getattr(model, hook)((x, y_true) if sample_weight is None else (x, y_true, sample_weight))
    except _LossCaptured as found:
        loss = found.loss
    except Exception as e:  # noqa: BLE001 - any failure of user code while tracing is reported with the hook
        raise GraphError(f"Model '{model.name}': tracing its {hook}() on symbolic data failed before it called "
                         f"compute_loss(): {type(e).__name__}: {e}. {_FIX}") from e
    else:
        raise GraphError(f"Model '{model.name}': its {hook}() returned without calling self.compute_loss(). {_FIX}")
    finally:
        model.__dict__.pop("call", None)
        model.__dict__.pop("compute_loss", None)
    if not isinstance(loss, KerasTensor):
        raise GraphError(f"Model '{model.name}': compute_loss() in {hook}() returned {type(loss).__name__}, not a "
                         f"tensor computed with keras.ops.")
    log.info("model '%s': %s() is traced up to compute_loss(); %s", model.name, hook,
             "that loss trains with the compiled optimizer over every trainable weight" if hook == "train_step"
             else "that loss is what evaluation reports")
    return loss


def _as_prediction(value, y_pred):
    """`value` with the copy of `y_pred` that ``self(x)`` gave in the trace (Layer.__call__ copies a tensor
    its call returns unchanged) replaced by `y_pred` itself: in Keras ``self(x)`` is the output, whose
    softmax or sigmoid a crossentropy in compute_loss reads the logits of (ops/loss_functions.activation_logits);
    the copy hid them, so a saturated sigmoid's loss was the clipped probabilities' (11.8 for tf.keras' 60.4)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_as_prediction(v, y_pred) for v in value)
    node = getattr(value, "node", None) if isinstance(value, KerasTensor) else None
    op = getattr(node, "op", None)
    if (op is not None and op.type_name == "unary" and getattr(op, "fn", None) == "identity"
            and len(node.inputs) == 1 and node.inputs[0] is y_pred):
        return y_pred
    return value


def default_step(model, data, training: bool):
    """The symbolic body of the default train_step/test_step (what ``super().train_step(data)`` runs in a
    trace): predictions and compute_loss."""
    x, y = (data[0], data[1]) if isinstance(data, (tuple, list)) and len(data) >= 2 else (data, None)
    sw = data[2] if isinstance(data, (tuple, list)) and len(data) >= 3 else None
    y_pred = model(x, training=training)
    loss = call_compute_loss(model, x, y, y_pred, sw, training=training)
    return {"loss": loss}
