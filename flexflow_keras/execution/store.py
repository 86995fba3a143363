"""Regions for a model on the runtime.

Weight, gradient and optimizer-slot regions ask for exact pieces (`Region(exact_pieces=True)`): a piece
a strategy splits off along a non-leading dim (a Dense kernel's column block) lives in an instance of its
own, which the forward, backward and update of that piece use in place step after step (the 4096-wide
MLP with its Dense layers split by columns over 2 processors: 77.7 ms/step staging the strided blocks
through scratch copies, 64.3 ms/step with exact pieces, in one A/B run on the 2-core VM).

`WeightStore` holds, for every variable, a value region (and for trainable ones a gradient region and
the optimizer's slot regions); it lives as long as the compiled model. `BatchStore` holds the regions
of one batch size: each activation, its gradient, the saved and statistics buffers of each node, labels
and per-sample loss seeds, and the partitions the strategy's layouts cut them into (`arg_for`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from flexflow_keras.ops.graph import KerasTensor, OpNode, TensorSpec, Variable, batch_rows, node_rows
from flexflow_keras.ops.parallel import tile_shapes
from runtime import Partition, Region

# `WeightStore.pull_many` reads at most this many bytes of weights with one wait (their host copies all live
# until that wait ends); the wait it saves costs microseconds, next to the milliseconds 64 MB take to copy
PULL_BYTES = 64 << 20


def _concrete(spec: TensorSpec, batch: int) -> tuple[int, ...]:
    return tuple(batch if s is None else int(s) for s in spec.shape)


def is_batched(spec) -> bool:
    """Whether a tensor's leading dim is the batch (split by data parallelism) rather than a fixed size."""
    return len(spec.shape) > 0 and spec.shape[0] is None


class WeightStore:
    """Value, gradient and optimizer-slot regions of every variable, created once per compile."""

    def __init__(self, rtm, variables: list[Variable], trainable_uids: set[int], optimizer):
        self.rtm = rtm
        self.variables = list(variables)
        self.value: dict[int, Region] = {}
        self.grad: dict[int, Region] = {}
        self.slots: dict[int, list[Region]] = {}
        self.parts: dict[tuple, Region] = {}  # (uid, points[, "moment"]) -> gradient parts (grad_parts.py)
        self.moments: dict[int, Region] = {}  # uid -> per-lookup moment of a table's gradient (sparse_moments.py)
        self.trainable = [v for v in self.variables if v.uid in trainable_uids]
        for v in self.variables:
            r = Region(v.shape, np.dtype(v.dtype), name=f"w:{v.path}", exact_pieces=True)
            rtm.write(r, v._value)
            self.value[v.uid] = r
        for v in self.trainable:
            self.grad[v.uid] = Region(v.shape, np.dtype(v.dtype), name=f"g:{v.path}", exact_pieces=True)
            regions = []
            for slot_name, init in (optimizer.slot_specs(v.shape, v.dtype) if optimizer else []):
                s = Region(optimizer.slot_shape(slot_name, v.shape), np.dtype(v.dtype), name=f"{slot_name}:{v.path}",
                           exact_pieces=True)
                if init is None:  # the variable's own value (Schedule-Free AdamW's z)
                    rtm.write(s, v._value)
                else:
                    rtm.fill(s, float(init))
                regions.append(s)
            self.slots[v.uid] = regions

    def add_constant(self, v: Variable) -> None:
        """The value region of a variable only a graph at other input shapes holds (a constant a loss or
        layer makes when it is recorded again there): read by that graph's ops, never trained."""
        if v.uid not in self.value:
            r = Region(v.shape, np.dtype(v.dtype), name=f"w:{v.path}", exact_pieces=True)
            self.rtm.write(r, v._value)
            self.value[v.uid] = r

    def scratch_grad(self, v: Variable) -> Region:
        """A gradient buffer for a frozen variable that an op's backward still needs to compute."""
        r = self.grad.get(v.uid)
        if r is None:
            r = self.grad[v.uid] = Region(v.shape, np.dtype(v.dtype), name=f"g:{v.path}")
        return r

    def moment(self, v: Variable) -> Region:
        """The per-lookup moment region of a table's gradient (execution/sparse_moments.py), made on first use."""
        r = self.moments.get(v.uid)
        if r is None:
            r = self.moments[v.uid] = Region(v.shape, np.dtype(v.dtype), name=f"moment:{v.path}", exact_pieces=True)
        return r

    def grad_parts(self, v: Variable, n: int, moment: bool = False) -> Region:
        """The (n, *shape) region of a gradient (or of a table's per-lookup moment) written as one part per
        point (execution/grad_parts.py). Tasks see views of its one array: the summing tiles cut across the
        parts."""
        key = (v.uid, n, "moment") if moment else (v.uid, n)
        r = self.parts.get(key)
        if r is None:
            name = f"{'mp' if moment else 'gp'}{n}:{v.path}"
            r = self.parts[key] = Region((n,) + tuple(v.shape), np.dtype(v.dtype), name=name)
        return r

    def pull(self, v: Variable) -> None:
        """Copy a variable's value from its region into the host value."""
        self.pull_many([v])

    def pull_many(self, variables: Sequence[Variable]) -> None:
        """Copy several variables' values from their regions into the host values, with one wait per
        PULL_BYTES of them: every read of a `read_many` holds its host copy until the call returns, so one
        call for a whole model held a second copy of all its weights at once (one weight's before)."""
        batch, size = [], 0
        for v in variables:
            batch.append(v)
            size += v._value.nbytes
            if size >= PULL_BYTES:
                self._pull_together(batch)
                batch, size = [], 0
        if batch:
            self._pull_together(batch)

    def _pull_together(self, variables: list[Variable]) -> None:
        for v, arr in zip(variables, self.rtm.read_many([self.value[v.uid] for v in variables]), strict=True):
            v._value[...] = arr

    def push(self, v: Variable) -> None:
        """Copy a variable's host value into its region."""
        self.rtm.write(self.value[v.uid], v._value)

    def read_slots(self) -> dict[int, list[np.ndarray]]:
        arrays = iter(self.rtm.read_many([s for regs in self.slots.values() for s in regs]))
        return {uid: [next(arrays) for _ in regs] for uid, regs in self.slots.items()}

    def write_slots(self, saved: dict[int, list[np.ndarray]]) -> None:
        for uid, arrays in saved.items():
            for region, arr in zip(self.slots[uid], arrays, strict=True):
                self.rtm.write(region, arr)


@dataclass
class BatchStore:
    """Regions for one global batch size, and the partitions strategies cut them into.

    Regions are whole tensors; how each op splits them is a partition (`part`), cached by its boxes, so
    ops with the same layout share one partition and a tensor may have several at once.
    """

    rtm: object
    batch: int
    acts: dict[int, Region] = field(default_factory=dict)  # tensor uid -> activation
    grads: dict[int, Region] = field(default_factory=dict)  # tensor uid -> its gradient
    saved: dict[int, list[Region]] = field(default_factory=dict)  # node uid -> saved buffers
    stats: dict[int, list[Region]] = field(default_factory=dict)  # node uid -> training stats buffers
    parts: dict[tuple, Partition] = field(default_factory=dict)
    # gradient regions zeroed once when a step was built (outputs nobody differentiates), which no other
    # buffer may share; the mode of the program whose plan shares the buffers out (execution/buffer_reuse.py),
    # and the tables as they were before it
    filled_grads: set = field(default_factory=set)
    planned_by: str | None = None
    originals: tuple | None = None

    def region(self, shape: tuple[int, ...], dtype, name: str) -> Region:
        return Region(shape, np.dtype(dtype), name=name)

    def nbytes(self) -> int:
        """The logical size of every region of this store (activations, gradients, saved and stats), each
        counted once (buffers that are never live at once share a region: execution/buffer_reuse.py)."""
        regions = [*self.acts.values(), *self.grads.values()]
        for group in (*self.saved.values(), *self.stats.values()):
            regions += group
        unique = {r.uid: r for r in regions}.values()
        return sum(int(np.prod(r.shape, dtype=np.int64)) * np.dtype(r.dtype).itemsize for r in unique)

    def act(self, t: KerasTensor) -> Region:
        r = self.acts.get(t.uid)
        if r is None:
            r = self.acts[t.uid] = self.region(_concrete(t.spec, batch_rows(t, self.batch)), t.dtype, f"a:{t.name}")
        return r

    def grad(self, t: KerasTensor) -> Region:
        r = self.grads.get(t.uid)
        if r is None:
            r = self.grads[t.uid] = self.region(_concrete(t.spec, batch_rows(t, self.batch)), t.dtype, f"d:{t.name}")
        return r

    def node_saved(self, node: OpNode) -> list[Region]:
        if node.uid not in self.saved:
            specs = node.op.saved_specs([t.spec for t in node.inputs], [w.spec for w in node.weights])
            self.saved[node.uid] = [self.region(_concrete(s, node_rows(node, self.batch)), s.dtype, f"s{i}:{node.name}")
                                    for i, s in enumerate(specs)]
        return self.saved[node.uid]

    def node_stats(self, node: OpNode) -> list[Region]:
        if node.uid not in self.stats:
            specs = node.op.stats_specs([t.spec for t in node.inputs], [w.spec for w in node.weights], True)
            self.stats[node.uid] = [self.region(_concrete(s, node_rows(node, self.batch)), s.dtype, f"st{i}:{node.name}")
                                    for i, s in enumerate(specs)]
        return self.stats[node.uid]

    def shapes(self, node: OpNode, training: bool):
        """The concrete shapes of everything `node` touches at this batch size."""
        return tile_shapes(node, self.batch, training)


def arg_for(store_parts: dict, region: Region, boxes, colors, shape) -> Region | Partition:
    """What a launch over `colors` passes for `region` when point k touches `boxes[k]`: the region itself
    when every point touches all of it, else a partition by those boxes (cached in `store_parts`)."""
    whole = (tuple(0 for _ in region.shape), tuple(region.shape))
    if all(b == whole for b in boxes):
        return region
    key = (region.uid, tuple(boxes), shape)
    p = store_parts.get(key)
    if p is None:
        p = store_parts[key] = Partition.by_boxes(
            region, {c: tuple(slice(a, b) for a, b in zip(*box, strict=True)) for c, box in zip(colors, boxes,
                                                                                              strict=True)})
    return p


def overlapping(arg, n_points: int) -> bool:
    """Whether the points of a launch share elements of this argument (their writes must be reductions)."""
    if isinstance(arg, Partition):
        return not arg.disjoint
    return n_points > 1
