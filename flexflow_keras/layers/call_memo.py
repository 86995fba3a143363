"""Symbolic layer calls remembered while a model records its graph, and handed back while a custom
``train_step`` is traced.

A Keras 2 style ``train_step`` often computes its prediction through a wrapped model
(``y_pred = self.model(x, training=True)``) rather than ``self(x)``. Traced on the graph's own inputs,
that call would record a second copy of the forward pass, with its own dropout masks, beside the one
the metrics read. `recording()` (around `Model._trace`) remembers each symbolic call by layer and input
tensors; `replaying(memo)` (around the train_step trace) makes the same call on the same tensors return
the outputs recorded then, so the loss and the metrics read one forward pass, as in Keras.
"""

from __future__ import annotations

import contextlib

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree

_recorders: list[dict] = []
_replays: list[dict] = []


def _key(layer, inputs, rest):
    leaves = tree.flatten([inputs, list(rest)])
    if not leaves or not all(isinstance(t, KerasTensor) for t in leaves):
        return None
    return id(layer), tuple(t.uid for t in leaves)


@contextlib.contextmanager
def recording():
    """Remember the symbolic layer calls made inside; yields the memo (key -> (layer, outputs))."""
    memo: dict = {}
    _recorders.append(memo)
    try:
        yield memo
    finally:
        _recorders.remove(memo)


@contextlib.contextmanager
def replaying(memo: dict):
    """Inside, a symbolic call recorded in `memo` returns its recorded outputs."""
    _replays.append(memo)
    try:
        yield
    finally:
        _replays.remove(memo)


def lookup(layer, inputs, rest):
    """The outputs recorded for this call while replaying, else None."""
    if not _replays:
        return None
    key = _key(layer, inputs, rest)
    if key is None:
        return None
    for memo in reversed(_replays):
        hit = memo.get(key)
        if hit is not None and hit[0] is layer:
            return hit[1]
    return None


def record(layer, inputs, rest, outputs) -> None:
    """Remember a symbolic call while recording (the layer is kept too, so its id stays its own)."""
    if not _recorders:
        return
    key = _key(layer, inputs, rest)
    if key is not None:
        for memo in _recorders:
            memo[key] = (layer, outputs)
