"""Strategies whose processors span MPI ranks (nodes): every op runs where the strategy places it, and a
piece of data crosses nodes only when a task on another node reads it.

Under MPI a strategy normally describes one node, and every node runs it on its shard of the batch
(execution/distributed.py). A strategy given in code or imported from a file whose device indices reach
past one node's processors (device d is processor d % P of node d // P, P processors per node) is
executed across the nodes as given, the way control replication runs it:

- every rank runs the same launch sequence over the same whole batch and has an instance of every
  region; a launch whose points all sit on this node runs as usual, otherwise this rank launches only its
  own points (one launch per point, on its processor);
- launches that are not placed by the strategy (the loader, fills, the metric partial sums, the state
  copies) and the optimizer updates run on every rank on its own processors (the same inputs give the
  same numbers), so weights never need to travel;
- which rank holds the current values of which box of a region is tracked here (`Coherence`), the same
  on every rank, since it follows the launch sequence alone. A point's write leaves its box current on
  its node only; before a task reads a box on a node where it is not current, the box's pieces travel
  there from a node that holds them, as MPI point-to-point messages (`Isend`/`Irecv` of exactly those
  pieces). A launch every rank runs first brings what it reads to every rank; its writes are then
  current everywhere. Values the host reads (predictions) are brought to every rank before the read;
- a reduction target summed by points on one node stays there; one summed by points on several nodes is
  summed over the ranks with an allreduce (ranks other than 0 start it from zero, rank 0 from the
  current value, so the value it held before is counted once) and is then current everywhere.

The messages run on the issuing thread, in launch order on every rank, after reading the region through
the runtime (`rtm.read`, which waits for this rank's writers) and before writing it back (`rtm.write`,
which later readers wait for): nothing moves behind the runtime's back, and no worker ever blocks on
another rank. The price is that a launch that needs a remote piece is a synchronisation point of the
step for the two ranks involved.
"""

from __future__ import annotations

import logging

import numpy as np

from runtime import Partition, Processor, comm
from runtime.geometry import box_intersect, box_subtract
from runtime.privileges import READ_ONLY, REDUCE, WRITE_DISCARD
from runtime.regions import Subregion
from runtime.tasks import POINT

log = logging.getLogger("flexflow_keras")

TAG = 11  # the tag of piece messages on the world's control communicator


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


class Coherence:
    """Per region, disjoint boxes and the ranks holding their current values; a region without an entry
    is current on every rank. Every rank keeps the same table (it changes only with the launch sequence)."""

    def __init__(self, size: int):
        self.everyone = frozenset(range(size))
        self.table: dict[int, list] = {}  # region uid -> [(box, frozenset of ranks)]

    def wrote(self, root, box, ranks) -> None:
        """`box` of `root` now holds new values, current on `ranks` only."""
        ranks = frozenset(ranks)
        if ranks == self.everyone and box == root.box:
            self.table.pop(root.uid, None)
            return
        entries = self.table.get(root.uid) or [(root.box, self.everyone)]
        out = []
        for ebox, owners in entries:
            if box_intersect(ebox, box) is None:
                out.append((ebox, owners))
            else:
                out.extend((b, owners) for b in box_subtract(ebox, box))
        out.append((box, ranks))
        self.table[root.uid] = out

    def need(self, root, box, ranks) -> list:
        """Make `box` of `root` current on every rank of `ranks`: the (source, destination, box) messages
        that do it, in a fixed order; the table records their arrival."""
        entries = self.table.get(root.uid)
        if entries is None:
            return []
        moves, out = [], []
        for ebox, owners in entries:
            part = box_intersect(ebox, box)
            missing = sorted(r for r in ranks if r not in owners) if part is not None else []
            if not missing:
                out.append((ebox, owners))
                continue
            src = min(owners)
            moves.extend((src, dst, part) for dst in missing)
            out.append((part, owners | frozenset(missing)))
            out.extend((b, owners) for b in box_subtract(ebox, part))
        if all(owners == self.everyone for _, owners in out):
            self.table.pop(root.uid, None)
        else:
            self.table[root.uid] = out
        return moves


def _root(arg):
    return arg.root if isinstance(arg, (Partition, Subregion)) else arg


def _boxes(arg) -> list:
    """The boxes a launch argument covers (every subregion of a partition)."""
    if isinstance(arg, Partition):
        return [s.box for s in arg.subregions]
    return [arg.box]


class Spanning:
    """Launches of one engine whose strategy spans nodes (see the module docstring)."""

    def __init__(self, rtm, world, local_procs: list):
        self.rtm = rtm
        self.world = world
        self.local_procs = list(local_procs)
        self.coherence = Coherence(world.size)
        self.sent = self.received = 0  # bytes this rank sent and received in piece messages
        self.messages = 0
        self.moved: dict[str, int] = {}  # region name -> bytes this rank sent or received of it

    def here(self, proc):
        """`proc` when it is on this node, else the local processor of the same index."""
        if isinstance(proc, RemoteProcessor):
            return self.local_procs[proc.index % len(self.local_procs)]
        return proc

    # --- launches the strategy places -------------------------------------------------------------------
    def launch(self, task, lay, regions, plain) -> None:
        """An op's index launch (region arguments, then plain arguments with POINT) across the nodes."""
        rank, rtm, coh = self.world.rank, self.rtm, self.coherence
        nodes = [node_of(p, rank) for p in lay.placement]
        privs = task.privileges
        summed: dict[int, object] = {}  # region uid -> a reduction target the points of several nodes add to
        for r, p in zip(regions, privs, strict=True):
            root = _root(r)
            if root.uid in summed:
                continue  # a second argument reducing into the same region (self-attention's mha(x, x))
            if p.code == REDUCE and len(set(nodes)) > 1:
                self._bring(root, coh.need(root, root.box, [0]))  # rank 0 adds to the current value
                if rank != 0:
                    rtm.fill(root, 0.0)
                summed[root.uid] = root
            elif p.code != WRITE_DISCARD:  # read, read-write, or a reduction on one node: bring its boxes
                moves = []
                for color, n in zip(lay.colors, nodes, strict=True):
                    moves.extend(coh.need(root, self._box(r, color), [n]))
                self._bring(root, moves)
        if all(n == rank for n in nodes):
            rtm.index_launch(task, lay.domain, *regions, *plain, tag=lay.placement)
        else:
            for color, proc, n in zip(lay.colors, lay.placement, nodes, strict=True):
                if n == rank:
                    args = [r[color] if isinstance(r, Partition) else r for r in regions]
                    rtm.launch(task, *args, *[color if a is POINT else a for a in plain], tag=proc)
        for root in summed.values():  # once, however many arguments add to it
            self._sum(root)
            coh.wrote(root, root.box, coh.everyone)
        for r, p in zip(regions, privs, strict=True):
            root = _root(r)
            if p.code != READ_ONLY and root.uid not in summed:
                for color, n in zip(lay.colors, nodes, strict=True):
                    coh.wrote(root, self._box(r, color), [n])

    @staticmethod
    def _box(arg, color):
        return arg[color].box if isinstance(arg, Partition) else arg.box

    # --- launches every rank runs, and host reads ---------------------------------------------------------
    def before_everywhere(self, task, args) -> None:
        """Before a launch every rank runs in full: what it reads is brought to every rank."""
        coh = self.coherence
        for a, p in zip(args, task.privileges, strict=False):
            if p.code != WRITE_DISCARD:
                root = _root(a)
                for box in _boxes(a):
                    self._bring(root, coh.need(root, box, coh.everyone))

    def after_everywhere(self, task, args) -> None:
        """After it: what it wrote is current on every rank."""
        for a, p in zip(args, task.privileges, strict=False):
            if p.code != READ_ONLY:
                self.filled(a)

    def filled(self, arg) -> None:
        """`arg` (a region, subregion or partition) was written on every rank alike (a fill every rank ran)."""
        root, coh = _root(arg), self.coherence
        for box in _boxes(arg):
            coh.wrote(root, box, coh.everyone)

    def settle(self, region) -> None:
        """Before the host reads `region`: its current values on every rank."""
        root = _root(region)
        self._bring(root, self.coherence.need(root, root.box, self.coherence.everyone))

    # --- moving pieces ----------------------------------------------------------------------------------
    def _bring(self, root, moves) -> None:
        """Send and receive this rank's part of `moves` ((source, destination, box), the same list on
        every rank, so the messages between two ranks match in order)."""
        rank = self.world.rank
        mine = [m for m in moves if rank in (m[0], m[1])]
        if not mine:
            return
        ctl = self.world.control
        arr = np.array(self.rtm.read(root), copy=True)
        changed = False
        for src, dst, box in mine:
            where = tuple(slice(a, b) for a, b in zip(*box, strict=True))
            piece = np.array(arr[where], order="C", copy=True)  # (a 0-d region stays 0-d)
            if rank == src:
                comm.wait(ctl.Isend(piece, dest=dst, tag=TAG))
                self.sent += piece.nbytes
            else:
                comm.wait(ctl.Irecv(piece, source=src, tag=TAG))
                arr[where] = piece
                self.received += piece.nbytes
                changed = True
            self.messages += 1
            self.moved[root.name] = self.moved.get(root.name, 0) + piece.nbytes
        if changed:
            self.rtm.write(root, arr)

    def _sum(self, root) -> None:
        MPI = self.world.MPI
        arr = np.array(self.rtm.read(root), copy=True)
        comm.wait(self.world.control.Iallreduce(MPI.IN_PLACE, arr, op=MPI.SUM))
        self.rtm.write(root, arr)
