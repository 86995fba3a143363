"""Gradients of large replicated weights written as one part per processor, then summed in tiles.

Data parallelism replicates a weight on every processor of its op, so the points' weight gradients are
partial sums. As a `Reduce("+")` they cost, per step, a zero fill of the gradient (on the utility
processor), an identity fill of each other processor's private accumulator, a read-modify-write of both
by the backward kernels (they accumulate), and a fold of each accumulator into the gradient: nine passes
over the weight's bytes for two processors. For a weight of a few MB (the MNIST CNN's 9216 x 128 Dense,
4.7 MB) those passes miss the caches and ran at memory speed, about 1 ms of the 2-core step.

Here, where every point of the op touches the whole weight and each runs on its own CPU processor, each
point overwrites its own part of a (points, *shape) region (`WD`: no fill, no accumulator, no read), and
one task per tile of the weight's first axis, on the op's processors, writes the gradient as the sum of
the parts: five passes, and the summing split across the processors. The parts are added in point
order, so the result is bit for bit the reduction's (0 + g0, then + g1, ...). An element-wise optimizer
then updates the weight in the same tiles on the same processors (execution/updates.py), so neither
processor is left with the whole update of the largest weight.

An op split into partial sums of its contraction (a config's `reduce`) keeps the reduction: its pieces
need not each write every weight gradient (one piece adds the bias). Small weights keep it (their passes stay in cache; PARTS_MIN_ELEMENTS), and so do strategies
across MPI ranks (their sums are sequenced with the ranks' own; execution/distributed.py) and GPU
placements (the reduction folds on the devices there).
"""

from __future__ import annotations

import math

from flexflow_keras.execution import tasks as T
from flexflow_keras.execution.store import arg_for
from flexflow_keras.ops import parallel as par
from runtime.machine import ProcKind

PARTS_MIN_ELEMENTS = 1 << 16  # 256 KB of float32: below it the reduction's passes stay in L2


def eligible(prog, lay, arg, mode, w) -> bool:
    """Whether `w`'s gradient, written (mode "write") by the points of `lay` as `arg`, is written in parts."""
    return (mode == "write" and lay.n > 1 and lay.parts == 1 and arg is prog.engine.weights.grad.get(w.uid)
            and len(w.shape) > 0 and math.prod(w.shape) >= PARTS_MIN_ELEMENTS
            and len(set(lay.placement)) == lay.n
            and all(p.kind is ProcKind.CPU for p in lay.placement)
            and prog.engine.spanning is None and not prog.across_ranks)


def part_arg(prog, lay, w, moment: bool = False):
    """The backward launch's argument: point k writes part k of the parts region (its piece (1, *shape),
    which the backward task views as the weight's shape); `moment`: the parts of the table's per-lookup
    moment (execution/sparse_moments.py), summed the same way."""
    parts = prog.engine.weights.grad_parts(w, lay.n, moment)
    shape = tuple(w.shape)
    boxes = [((k,) + (0,) * len(shape), (k + 1,) + shape) for k in range(lay.n)]
    return arg_for(prog.store.parts, parts, boxes, lay.colors, lay.domain)


def sum_launch(prog, lay, w, moment: bool = False):
    """(task, domain, args, processors) of the launch that writes `w`'s gradient (or its moment) as the sum of
    its parts: one point per tile of the first axis (at most one per processor of `lay`)."""
    e = prog.engine
    parts = e.weights.grad_parts(w, lay.n, moment)
    shape = tuple(w.shape)
    tiles = min(lay.n, shape[0])
    boxes = par.tile_boxes(shape, (tiles,) + (1,) * (len(shape) - 1))
    colors = [(k,) for k in range(tiles)]
    part_boxes = [((0,) + lo, (lay.n,) + hi) for lo, hi in boxes]
    target = e.weights.moment(w) if moment else e.weights.grad[w.uid]
    args = (arg_for(prog.store.parts, parts, part_boxes, colors, (tiles,)),
            arg_for(prog.store.parts, target, boxes, colors, (tiles,)))
    task = e.cached(("parts_sum",), T.parts_sum_task)
    procs = tuple(lay.placement[k] for k in range(tiles))
    prog.part_tiles[w.uid] = (boxes, procs)
    return task, (tiles,), args, procs
