"""Strategies whose processors span MPI ranks (nodes): every op runs where the strategy places it.

Under MPI a strategy normally describes one node, and every node runs it on its shard of the batch
(execution/distributed.py). A strategy given in code or imported from a file whose device indices reach
past one node's processors (device d is processor d % P of node d // P, P processors per node) is
executed across the nodes as given, the way control replication runs it:

- every rank runs the same launch sequence over the same whole batch and holds every region; the
  invariant is that after each launch every rank's copy of every region is the same;
- a launch whose points all sit on this node runs as usual; otherwise this rank launches only its own
  points (one launch per point, on its processor); either way, afterwards every region the launch wrote
  is made whole on every rank: each written piece (the box a point wrote) is broadcast from the rank that wrote
  it, and a reduction target is summed over the ranks (ranks other than 0 start it from zero, so the
  value it held before is counted once);
- launches that are not placed by the strategy (the loader, the metric partial sums) and the optimizer
  updates run on every rank on its own processors (the same inputs give the same numbers), so weights
  never need to travel.

The broadcasts and sums run on the issuing thread, in launch order on every rank, after reading the
region through the runtime (`rtm.read`, which waits for this rank's writers) and before writing it back
(`rtm.write`, which later readers wait for): nothing moves behind the runtime's back, and no worker ever
blocks on another rank. The price is that a cross-node launch is a synchronisation point of the step.
"""

from __future__ import annotations

import logging

import numpy as np

from runtime import Partition, Processor, comm
from runtime.privileges import READ_ONLY, REDUCE
from runtime.tasks import POINT

log = logging.getLogger("flexflow_keras")


class RemoteProcessor(Processor):
    """A processor of another node: strategies place pieces on it; this rank never launches on it."""

    __slots__ = ("node",)

    def __init__(self, kind, index: int, node: int, uid: int):
        super().__init__(kind, index, uid)
        self.node = node
        self.name = f"node{node}.{kind.value}{index}"

    def __eq__(self, other):
        return isinstance(other, RemoteProcessor) and (other.node, other.index) == (self.node, self.index)

    def __hash__(self):
        return hash(("remote", self.node, self.index))


def node_of(proc, rank: int) -> int:
    return proc.node if isinstance(proc, RemoteProcessor) else rank


def global_processors(local: list, world) -> list:
    """Every node's processors in global device order: this node's own, placeholders for the others."""
    out: list = []
    for n in range(world.size):
        for i, p in enumerate(local):
            out.append(p if n == world.rank else RemoteProcessor(p.kind, i, n, -1 - len(out)))
    return out


def spans_nodes(strategy, n_local: int) -> bool:
    """Whether `strategy` places a piece past this node's `n_local` processors."""
    return any(d >= n_local for _, c in strategy.configs for d in c.devices)


class Spanning:
    """Launches of one engine whose strategy spans nodes (see the module docstring)."""

    def __init__(self, rtm, world, local_procs: list):
        self.rtm = rtm
        self.world = world
        self.local_procs = list(local_procs)

    def here(self, proc):
        """`proc` when it is on this node, else the local processor of the same index."""
        if isinstance(proc, RemoteProcessor):
            return self.local_procs[proc.index % len(self.local_procs)]
        return proc

    def launch(self, task, lay, regions, plain) -> None:
        """An op's index launch (region arguments, then plain arguments with POINT) across the nodes."""
        rank, rtm = self.world.rank, self.rtm
        nodes = [node_of(p, rank) for p in lay.placement]
        privs = task.privileges
        if rank != 0:
            for r, p in zip(regions, privs, strict=True):
                if p.code == REDUCE:
                    rtm.fill(_root(r), 0.0)  # counted once: rank 0 keeps what the target held
        if all(n == rank for n in nodes):
            rtm.index_launch(task, lay.domain, *regions, *plain, tag=lay.placement)
        else:
            for color, proc, n in zip(lay.colors, lay.placement, nodes, strict=True):
                if n == rank:
                    args = [r[color] if isinstance(r, Partition) else r for r in regions]
                    rtm.launch(task, *args, *[color if a is POINT else a for a in plain], tag=proc)
        for r, p in zip(regions, privs, strict=True):
            if p.code != READ_ONLY:
                self._make_whole(r, lay.colors, nodes, p.code == REDUCE)

    def _make_whole(self, arg, colors, nodes, reduce: bool) -> None:
        MPI = self.world.MPI
        ctl = self.world.control
        root = _root(arg)
        arr = np.array(self.rtm.read(root), copy=True)
        if reduce:
            comm.wait(ctl.Iallreduce(MPI.IN_PLACE, arr, op=MPI.SUM))
        else:
            seen = set()
            for color, n in zip(colors, nodes, strict=True):
                box = arg[color].box if isinstance(arg, Partition) else root.box
                if box in seen:
                    continue
                seen.add(box)
                where = tuple(slice(a, b) for a, b in zip(*box, strict=True))
                piece = np.ascontiguousarray(arr[where])
                comm.wait(ctl.Ibcast(piece, root=n))
                arr[where] = piece
        self.rtm.write(root, arr)


def _root(arg):
    return arg.parent if isinstance(arg, Partition) else arg
