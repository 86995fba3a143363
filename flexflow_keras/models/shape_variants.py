"""fit's step graphs for batches of other shapes: a dataset padded per batch to its longest sequence
(`padded_batch` without shapes, `TextVectorization` without `output_sequence_length`, a generator of
varying lengths) trains one step graph per shape, as tf.keras traces one function per shape.

The first batch's shapes train on fit's engine. A batch of other shapes gets a variant of it
(`Engine.variant`): the model's graph at those shapes, with the same weights, optimizer slots, metrics and
strategy, and its own activation regions and recorded step. At most `KEEP` variants keep their regions;
the least recently used one lets them go (a new length records its step again, as a first step does).
Where the model cannot take the new shape (a fixed `Input` length), the error is the model's own.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

import numpy as np

log = logging.getLogger("flexflow_keras")

# variants that keep their activation regions and recorded steps (an epoch of bucketed lengths reuses them)
KEEP = 8
# the last element of a variant's key on the model's training=False graph (`engine_for`)
INFERENCE = "training=False"


class ShapeVariants:
    """The engines of a model's batches by shape: `root` (the model's engine) for its own shapes, variants
    of it for others. `n_inputs`: how many of a batch's sources are model inputs; with `labels` the labels
    follow (training and evaluation), without them the sources are the inputs only (predict). The sample
    weights come last either way."""

    def __init__(self, model, engine, n_inputs: int, labels: bool = True):
        self.model, self.root, self.n_inputs, self.labels = model, engine, n_inputs, labels
        tg = engine.tgraph
        self.root_key = tuple((tuple(t.shape[1:]), t.dtype) for t in tg.model_inputs) + (tuple(
            (tuple(t.shape[1:]), t.dtype) for t in tg.labels if t is not None) if labels else ())
        # the label sources a step reads: those of the outputs with a loss (Keras' `loss=[..., None]`)
        self.read = tuple(range(n_inputs)) + (tuple(n_inputs + i for i, t in enumerate(tg.labels) if t is not None)
                                              if labels else ())
        self.variants: OrderedDict[tuple, object] = OrderedDict()
        self.tgraphs: dict[tuple, object] = {}  # kept past an eviction: a remade variant reuses its constants
        self.made = 0

    def _key(self, sources) -> tuple:
        """Per source: its per-sample shape and the dtype its graph tensor gets (inputs: floats are
        float32, as `_graph_for` makes them; labels: their own)."""
        out = []
        for k in self.read:
            a = sources[k]
            dtype = np.asarray(a).dtype if not hasattr(a, "dtype") else np.dtype(a.dtype)
            name = "float32" if k < self.n_inputs and dtype.kind == "f" else str(dtype)
            out.append((tuple(np.shape(a)[1:]), name))
        return tuple(out)

    def engine_for(self, sources, inference: bool = False):
        """The engine for a batch of these `sources` (the root's for its own shapes). `inference`: inside
        fit, the model's training=False graph (models/call_mode.py), which `_graph_for` then gives."""
        key = self._key(sources) + ((INFERENCE,) if inference else ())
        if key == self.root_key:
            return self.root
        v = self.variants.get(key)
        if v is None:
            v = self._make(key, sources)
        else:
            self.variants.move_to_end(key)
        v.adopt_root_strategy()
        return v

    def _make(self, key: tuple, sources):
        model = self.model
        xs = list(sources[:self.n_inputs])
        ys = list(sources[self.n_inputs:-1]) if self.labels else None
        tgraph = self.tgraphs.get(key)
        if tgraph is None:
            rank = next((len(t.shape) for t in self.root.tgraph.sample_weights if t is not None), 0)
            tgraph = self.tgraphs[key] = model._training_graph(model._graph_for(xs), ys, rank if self.labels else 0)
        v = self.root.variant(tgraph)
        if key[-1] is INFERENCE:
            log.debug("fit's validation or a callback's predict runs the model's training=False graph on a "
                      "variant of fit's engine (per-sample shapes %s)", [k[0] for k in key[:-1]])
            self.variants[key] = v
            return v
        self.made += 1
        if self.made == 1:
            if self.root.trial is not None:  # a short fit's degree trial times fit's own steps only
                self.root.trial.cancel("its batches come in several shapes")
            log.info("a batch of per-sample shapes %s, after %s: it runs on a step graph of its own (one per "
                     "shape, sharing the weights, as tf.keras traces one per shape); a dataset padded to one "
                     "length records one step", [k[0] for k in key], [k[0] for k in self.root_key])
        else:
            log.debug("a step graph for per-sample shapes %s (%d so far)", [k[0] for k in key], self.made)
        self.variants[key] = v
        while len(self.variants) > KEEP:
            _, old = self.variants.popitem(last=False)
            old.release()
        return v

    def release(self) -> None:
        """Let every variant's regions and recorded steps go (the end of fit)."""
        for v in self.variants.values():
            v.release()
        self.variants.clear()
