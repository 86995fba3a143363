"""Regions for a model on the runtime.

`WeightStore` holds, for every variable, a value region (and for trainable ones a gradient region and
the optimizer's slot regions); it lives as long as the compiled model. `BatchStore` holds the regions
of one batch size: each activation, its gradient, the saved and statistics buffers of each node, labels,
per-sample loss seeds and the sample-index region, with their equal partitions along the batch dim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from flexflow_keras.ops.graph import KerasTensor, OpNode, TensorSpec, Variable
from runtime import Partition, Region


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
        self.trainable = [v for v in self.variables if v.uid in trainable_uids]
        for v in self.variables:
            r = Region(v.shape, np.dtype(v.dtype), name=f"w:{v.path}")
            rtm.write(r, v._value)
            self.value[v.uid] = r
        for v in self.trainable:
            self.grad[v.uid] = Region(v.shape, np.dtype(v.dtype), name=f"g:{v.path}")
            regions = []
            for slot_name, init in (optimizer.slot_specs(v.shape, v.dtype) if optimizer else []):
                s = Region(v.shape, np.dtype(v.dtype), name=f"{slot_name}:{v.path}")
                rtm.fill(s, float(init))
                regions.append(s)
            self.slots[v.uid] = regions

    def scratch_grad(self, v: Variable) -> Region:
        """A gradient buffer for a frozen variable that an op's backward still needs to compute."""
        r = self.grad.get(v.uid)
        if r is None:
            r = self.grad[v.uid] = Region(v.shape, np.dtype(v.dtype), name=f"g:{v.path}")
        return r

    def pull(self, v: Variable) -> None:
        """Copy a variable's value from its region into the host value."""
        v._value[...] = self.rtm.read(self.value[v.uid])

    def push(self, v: Variable) -> None:
        """Copy a variable's host value into its region."""
        self.rtm.write(self.value[v.uid], v._value)

    def read_slots(self) -> dict[int, list[np.ndarray]]:
        return {uid: [self.rtm.read(s) for s in regs] for uid, regs in self.slots.items()}

    def write_slots(self, saved: dict[int, list[np.ndarray]]) -> None:
        for uid, arrays in saved.items():
            for region, arr in zip(self.slots[uid], arrays, strict=True):
                self.rtm.write(region, arr)


@dataclass
class Piece:
    """A region and what a sharded launch passes for it: its partition along the batch dim, or the whole
    region for tensors without a batch dim (constants, reductions over the batch)."""

    region: Region
    part: Partition | Region


@dataclass
class BatchStore:
    """Regions for one global batch size and data-parallel degree."""

    rtm: object
    batch: int
    degree: int
    acts: dict[int, Piece] = field(default_factory=dict)  # tensor uid -> activation
    grads: dict[int, Piece] = field(default_factory=dict)  # tensor uid -> its gradient
    saved: dict[int, list[Piece]] = field(default_factory=dict)  # node uid -> saved buffers
    stats: dict[int, list[Region]] = field(default_factory=dict)  # node uid -> training stats buffers
    seeds: dict[int, Piece] = field(default_factory=dict)  # per-sample-loss tensor uid -> d(loss)/d(it)
    sample_index: Piece | None = None

    def piece(self, shape: tuple[int, ...], dtype, name: str, batched: bool = True) -> Piece:
        region = Region(shape, np.dtype(dtype), name=name)
        if not batched or not shape:
            return Piece(region, region)
        degrees = (self.degree,) + (1,) * (len(shape) - 1)
        return Piece(region, Partition.equal(region, degrees))

    def act(self, t: KerasTensor) -> Piece:
        p = self.acts.get(t.uid)
        if p is None:
            p = self.piece(_concrete(t.spec, self.batch), t.dtype, f"a:{t.name}", is_batched(t.spec))
            self.acts[t.uid] = p
        return p

    def grad(self, t: KerasTensor) -> Piece:
        p = self.grads.get(t.uid)
        if p is None:
            p = self.piece(_concrete(t.spec, self.batch), t.dtype, f"d:{t.name}", is_batched(t.spec))
            self.grads[t.uid] = p
        return p

    def node_saved(self, node: OpNode) -> list[Piece]:
        if node.uid not in self.saved:
            specs = node.op.saved_specs([t.spec for t in node.inputs], [w.spec for w in node.weights])
            self.saved[node.uid] = [self.piece(_concrete(s, self.batch), s.dtype, f"s{i}:{node.name}",
                                               is_batched(s)) for i, s in enumerate(specs)]
        return self.saved[node.uid]

    def node_stats(self, node: OpNode) -> list[Region]:
        if node.uid not in self.stats:
            specs = node.op.stats_specs([t.spec for t in node.inputs], [w.spec for w in node.weights], True)
            self.stats[node.uid] = [Region(_concrete(s, self.batch), np.dtype(s.dtype), name=f"st{i}:{node.name}")
                                    for i, s in enumerate(specs)]
        return self.stats[node.uid]

    def index(self) -> Piece:
        if self.sample_index is None:
            self.sample_index = self.piece((self.batch,), np.int64, "sample_index")
            self.rtm.write(self.sample_index.region, np.arange(self.batch, dtype=np.int64))
        return self.sample_index
