"""Where each op's pieces run and what they touch, for one strategy and one batch size.

`NodeLayout` turns an op's `ParallelConfig` into a launch: the domain (its degrees, then its partial-sum
count), one `Tile` per point from the op's parallel rules (ops/parallel.py), and one processor per point
(a placement tuple the runtime's mapper honours). A batch smaller than a config's sample degree (the last
batch of an epoch) runs on the first pieces of the same config. `arg` gives what a launch passes for a
region: the whole region when every point touches all of it, else a partition by the points' boxes.
Tiles are plain values, so a launch's description never holds a closure over live objects.
"""

from __future__ import annotations

import itertools

from flexflow_keras.execution.store import BatchStore, arg_for, overlapping
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.strategy import ParallelConfig, node_space, sample_dims


class NodeLayout:
    """One op node's launch under a config at one batch size.

    Attributes:
        config: the config in effect (its sample degree capped by the batch).
        domain: the launch's color shape; colors: its points in C order; tiles: a Tile per point;
        by_color: color -> Tile (what each point's body looks up); placement: a Processor per point.
    """

    def __init__(self, node, name: str, config: ParallelConfig, store: BatchStore, procs, training: bool):
        self.node = node
        self.name = name
        shapes = store.shapes(node, training)
        space = node_space(node)
        units = par.row_units(node.outputs[0])  # a folded output is cut between samples
        for d in sample_dims(space):
            extent = shapes.outputs[0][d] // units[d]
            if config.degrees[d] > extent >= 1:
                config = config.with_sample_degree(d, extent)
        self.config = config
        self.shapes = shapes
        self.domain = config.color_shape
        self.colors = list(itertools.product(*(range(c) for c in self.domain)))
        out_boxes = par.tile_boxes(shapes.outputs[0], config.degrees, units)
        nd = len(config.degrees)
        strides = [1] * nd
        for d in range(nd - 2, -1, -1):
            strides[d] = strides[d + 1] * config.degrees[d + 1]
        tiles = []
        for color in self.colors:
            flat = sum(c * s for c, s in zip(color[:nd], strides, strict=True))
            part = color[nd] if config.reduce > 1 else 0
            tiles.append(node.op.tile(shapes, out_boxes[flat], part, config.reduce))
        self.tiles = tiles
        self.by_color = dict(zip(self.colors, tiles, strict=True))
        self.placement = tuple(procs[d % len(procs)] for d in config.devices)
        self.store = store
        self.n = len(self.colors)
        self.sample_dim = next(iter(sample_dims(space)), None)

    @property
    def parts(self) -> int:
        return self.config.reduce

    def arg(self, region, kind: str, index: int):
        """What the launch passes for `region`, which is argument `index` of group `kind` ("inputs",
        "weights", "outputs", "saved", "stats") of every tile."""
        boxes = [getattr(t, kind)[index] for t in self.tiles]
        return arg_for(self.store.parts, region, boxes, self.colors, self.domain)

    def shared(self, arg) -> bool:
        """Whether several points touch the same elements of `arg` (their gradients are partial sums)."""
        return overlapping(arg, self.n)
