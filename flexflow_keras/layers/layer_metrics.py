"""The metrics a layer holds, as Keras 3 lists them (``Layer.metrics``, and the sublayers' part of
``Model.metrics``): a layer's own Metric attributes (also inside lists, tuples and dicts), in the order they
were set, then each sublayer's ``metrics``, recursively. fit and evaluate reset every one of them at the start
of each epoch (Keras' reset_metrics), so a metric a layer updates itself (keras.io's forward-forward layers'
loss means) restarts each epoch."""

from __future__ import annotations

from flexflow_keras.utils import tree


def own_metrics(obj, skip=()) -> list:
    """The Metric objects `obj` holds as attributes, first seen first, without those in `skip` (by id)."""
    from flexflow_keras.metrics.base import Metric

    ids = {id(m) for m in skip}
    found = []
    for key, value in vars(obj).items():
        if key in ("_ff_loss_tracker", "_ff_assigned_metrics"):
            continue
        items = tree.flatten(value) if isinstance(value, (list, tuple, dict)) else [value]
        for m in items:
            if isinstance(m, Metric) and id(m) not in ids:
                ids.add(id(m))
                found.append(m)
    return found


def layer_metrics(layer) -> list:
    """Keras 3's ``Layer.metrics``: the layer's own metrics, then each direct sublayer's ``metrics``."""
    out = own_metrics(layer)
    for sub in layer.__dict__.get("_layers", ()):
        out.extend(sub.metrics)
    return out


def flatten_layers(layer) -> list:
    """Every layer under `layer` (not itself), in the order Keras 3's ``_flatten_layers`` walks them: a layer,
    then its sublayers (put in front of the queue, so in reverse), each once."""
    from collections import deque

    out, seen, queue = [], set(), deque(layer.__dict__.get("_layers", ()))
    while queue:
        sub = queue.popleft()
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        out.append(sub)
        queue.extendleft(sub.__dict__.get("_layers", ()))
    return out


def sublayer_metrics(model) -> list:
    """The sublayers' part of Keras 3's ``Model.metrics``: every layer under `model` but a model (whose
    own compiled metrics a new trainer replaces; its layers are still walked) gives its ``metrics``, so a
    metric held two levels down is listed twice, as in Keras."""
    from flexflow_keras.models.model import Model

    return [m for sub in flatten_layers(model) if not isinstance(sub, Model) for m in sub.metrics]
