"""Blocks: one op under one config, as the simulator sees it, and box arithmetic on pieces.

A `Block` holds the op's pieces at the simulated batch size (its tiles from the op's parallel rules, the
device and memory of each), the Python and kernel time of each piece's statistics, forward and backward
tasks (from the cost model, with the calibrated per-task Python cost and the slow-down of kernels that
run at once), and whether the pieces share elements of an input or a weight (then their gradients are
reductions). Blocks are cached by (op, config, mode), which is what makes re-simulating after one op's
change cheap.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.strategy import ParallelConfig, node_space, sample_dims
from runtime.geometry import box_is_block


def box_bytes(box, itemsize: int) -> int:
    return math.prod(max(0, h - lo) for lo, h in zip(*box, strict=True)) * itemsize


def overlap(a, b) -> int:
    v = 1
    for lo1, hi1, lo2, hi2 in zip(a[0], a[1], b[0], b[1], strict=True):
        d = min(hi1, hi2) - max(lo1, lo2)
        if d <= 0:
            return 0
        v *= d
    return v


def shared(boxes) -> bool:
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if overlap(boxes[i], boxes[j]):
                return True
    return False


class Block:
    """One op under one config at the simulated batch size: its pieces, boxes, devices and costs."""

    __slots__ = ("node", "cfg", "tiles", "devices", "mems", "stats_t", "fwd_t", "bwd_t", "n", "shared_in", "py_s", "py_f", "py_b",
                 "shared_w", "parts", "nargs_f", "nargs_b")

    def __init__(self, sim, node, cfg: ParallelConfig):
        shapes = sim.shapes[node.uid]
        units = par.row_units(node.outputs[0])  # a folded output is cut between samples
        for d in sample_dims(node_space(node)):
            extent = shapes.outputs[0][d] // units[d]
            if cfg.degrees[d] > extent >= 1:
                cfg = cfg.with_sample_degree(d, extent)
        self.node, self.cfg = node, cfg
        out_boxes = par.tile_boxes(shapes.outputs[0], cfg.degrees, units)
        tiles = []
        for color in itertools.product(*(range(c) for c in cfg.color_shape)):
            flat = 0
            for c, deg in zip(color[:len(cfg.degrees)], cfg.degrees, strict=True):
                flat = flat * deg + c
            part = color[len(cfg.degrees)] if cfg.reduce > 1 else 0
            tiles.append(node.op.tile(shapes, out_boxes[flat], part, cfg.reduce))
        self.tiles = tiles
        self.n = len(tiles)
        m = sim.machine
        self.devices = [d % m.n for d in cfg.devices]
        self.mems = [m.devices[d].memory for d in self.devices]
        self.parts = cfg.reduce
        costs, (th, concurrent) = sim.costs, sim.mode
        o = costs.overheads()
        n_in, n_w, n_out = len(node.inputs), len(node.weights), len(node.outputs)
        n_saved = len(tiles[0].saved)
        n_stats = len(tiles[0].stats)
        self.nargs_f = n_in + n_w + n_out + n_saved + n_stats
        self.nargs_b = self.nargs_f + n_out + n_in + n_w
        # the Python part of each task (the lock holder in this process) and its kernel part, slowed by
        # the other processors' kernels when the strategy keeps several busy
        self.py_s = costs.py_cost(n_in + n_w + n_stats)
        self.py_f = costs.py_cost(self.nargs_f)
        self.py_b = costs.py_cost(self.nargs_b)
        slow = costs.contention if concurrent else 1.0
        need = sim.needs(node)
        self.stats_t, self.fwd_t, self.bwd_t = [], [], []
        staging = m.kind == "CPU"
        for t, d in zip(tiles, self.devices, strict=True):
            c = costs.piece(node, t, th, m.devices[d], need)
            # on CPUs, a piece that is not one contiguous block of an activation is copied to scratch
            # and back by its task (execution/tasks.py); weights have instances of their own
            sf = costs.mem_pass(_strided_bytes(node, shapes, t), 2) if staging else 0.0
            self.stats_t.append(slow * max(0.0, c.stats - o.py_op) + sf if n_stats else 0.0)
            self.fwd_t.append(slow * max(0.0, c.fwd - o.py_op) + sf)
            self.bwd_t.append(slow * max(0.0, c.bwd - o.py_op) + 2 * sf)
        self.shared_in = [shared([t.inputs[k] for t in tiles]) for k in range(n_in)]
        self.shared_w = [shared([t.weights[j] for t in tiles]) for j in range(n_w)]


def _strided_bytes(node, shapes, tile) -> int:
    """Bytes of the inputs, outputs and saved buffers of `tile` that are not one contiguous block of
    their tensor (the task stages them through scratch)."""
    total = 0
    groups = ((tile.inputs, shapes.inputs, [t.dtype for t in node.inputs]),
              (tile.outputs, shapes.outputs, [t.dtype for t in node.outputs]),
              (tile.saved, shapes.saved, ["float32"] * len(tile.saved)))
    for boxes, full, dtypes in groups:
        for box, shape, dtype in zip(boxes, full, dtypes, strict=True):
            if not box_is_block(((0,) * len(shape), tuple(shape)), box):
                total += box_bytes(box, np.dtype(dtype).itemsize)
    return total


def union_box(boxes):
    lo = tuple(min(b[0][d] for b in boxes) for d in range(len(boxes[0][0])))
    hi = tuple(max(b[1][d] for b in boxes) for d in range(len(boxes[0][0])))
    return (lo, hi)
