"""Trace records: what a recorded run of `rtm.trace(name)` launched, frozen into a flat schedule.

Owns the templates a replay rebuilds points from (`LaunchTemplate` per launch, with its quick match
against a new launch; `PointTemplate` per point: processor and queue, constant argument views,
dependences as positions; `FoldTemplate` per reduction fold) and `TraceRecord`, which collects them while
a trace records and, when sealed, resolves what does not change between replays (each point's queue,
the positions an exit barrier waits for). The replay itself is in tracing.py.
"""

from __future__ import annotations

from runtime.futures import Future, FutureMap
from runtime.graph import TaskNode
from runtime.privileges import READ_ONLY
from runtime.regions import Partition, Region, Subregion, overlaps
from runtime.tasks import Fields, _Point

_SPECIAL = frozenset({Future, FutureMap, Region, Subregion, Partition, _Point})


class PointTemplate:
    __slots__ = ("point", "proc", "body", "binds", "preds", "writes", "recover", "views", "dyn", "prefolds",
                 "fixed", "put", "cross", "pos")

    def __init__(self, point, proc, body, binds, preds, writes, recover, prefolds):
        self.point = point
        self.proc = proc
        self.body = body
        self.binds = binds
        self.preds = preds
        self.writes = writes
        self.recover = recover
        self.prefolds = prefolds  # folds of epochs this point ended, recreated just before it
        # views of home arrays and reduction buffers kept from the recording are reused as they are;
        # only the rest (`dyn`: accumulators to initialise, instances outside SYSTEM memory) is bound
        # again on replay
        self.views = [_constant(b) for b in binds]
        self.dyn = tuple((i, b) for i, (b, v) in enumerate(zip(binds, self.views, strict=True)) if v is None)
        # the flat schedule: with nothing to bind again, a replayed point's arguments are this tuple
        # followed by the run's plain arguments, and it goes straight to `put` (its processor's queue)
        self.fixed = None if self.dyn else tuple(self.views)
        self.put = None
        self.cross = ()  # positions in the previous replay this point waits for (TraceRecord.seal)
        self.pos = -1    # its own trace position


def _constant(b):
    kind = b[0]
    if kind == "fast":
        return b[5]
    if kind == "join_fast" and b[6] is None:
        return b[5]
    if kind == "fields":
        vals = [_constant(fb) for fb in b[2]]
        if all(v is not None for v in vals):
            return Fields(dict(zip(b[1], vals, strict=True)))
    return None


class FoldTemplate:
    """A fold recorded where an epoch ended: which accumulator, after which nodes."""

    __slots__ = ("aid", "fn", "lock", "preds", "fs", "sub", "op", "first", "owner")

    def __init__(self, aid, fn, lock, preds, fs, sub, op, first, owner):
        self.aid = aid
        self.fn = fn          # the persistent fold (fast path), or None: rebuilt per replay
        self.lock = lock
        self.preds = preds
        self.owner = owner    # position of the task node the fold is labelled after (the last of `preds`)
        self.fs = fs
        self.sub = sub
        self.op = op
        self.first = first    # trace position of the epoch's first reducer


class LaunchTemplate:
    __slots__ = ("task", "index", "domain", "rsel", "kinds", "tag", "points", "nargs", "nreg", "vpos", "fpos",
                 "ppos")

    def __init__(self, spec):
        self.task = spec.task
        self.index = spec.index
        self.domain = spec.domain
        self.rsel = spec.rsel
        self.kinds = spec.kinds
        self.tag = spec.tag
        self.points = []  # PointTemplate per point
        self.nreg = len(spec.rsel)
        self.nargs = self.nreg + len(spec.kinds)
        self.vpos = tuple(self.nreg + j for j, k in enumerate(spec.kinds) if k == "V")
        self.fpos = tuple((self.nreg + j, k == "M") for j, k in enumerate(spec.kinds) if k in "FM")
        self.ppos = tuple(self.nreg + j for j, k in enumerate(spec.kinds) if k == "P") or None

    def quick_match(self, task, index, domain, args, tag):
        """(futs, point_pos) when `args` is this launch again, else None (then ask `difference`)."""
        if task is not self.task or index is not self.index or len(args) != self.nargs:
            return None
        if tag is not self.tag:
            # a placement tag (a tuple of processors) is often rebuilt per run: equal is the same launch
            # (what `difference` decides too); anything else goes the long way
            if type(tag) is not tuple or type(self.tag) is not tuple:
                return None
            try:
                if tag != self.tag:
                    return None
            except Exception:  # noqa: BLE001 - an element's __eq__ may do anything
                return None
        if domain != self.domain:
            return None
        # one C-level comparison: it stops at the first pair that is not the same object, and region-likes
        # (Region, Subregion, Partition) have no __eq__, so only identical arguments compare equal
        try:
            if args[:self.nreg] != self.rsel:
                return None
        except (ValueError, TypeError):  # e.g. an ndarray where a region was recorded: ambiguous truth
            return None
        for j in self.vpos:
            if type(args[j]) in _SPECIAL:
                return None
        futs = None
        if self.fpos:
            futs = []
            for j, is_map in self.fpos:
                a = args[j]
                if type(a) is not (FutureMap if is_map else Future):
                    return None
                if is_map and len(a._nodes) != len(self.points):
                    return None
                futs.append((j, a, is_map))
        return futs, self.ppos

    def difference(self, spec) -> str | None:
        """Why `spec` is not this launch (None when it is)."""
        if spec.task is not self.task:
            return f"task '{spec.task.name}' instead of '{self.task.name}'"
        if spec.index != self.index or spec.domain != self.domain:
            return f"domain {spec.domain if spec.index else 'single'} instead of " \
                   f"{self.domain if self.index else 'single'}"
        rs, mine = spec.rsel, self.rsel
        if len(rs) != len(mine) or any(a is not b for a, b in zip(rs, mine, strict=True)):
            return (f"region arguments {[getattr(r, 'name', r) for r in rs]} instead of "
                    f"{[getattr(r, 'name', r) for r in mine]}")
        if spec.kinds != self.kinds:
            return f"plain argument kinds {spec.kinds} instead of {self.kinds}"
        tag = spec.tag
        if tag is not self.tag:
            try:
                same = bool(tag == self.tag)
            except Exception:  # noqa: BLE001 - a tag's __eq__ may do anything
                same = False
            if not same:
                return f"tag {tag!r} instead of {self.tag!r}"
        return None


class TraceRecord:
    """The recorded launches of one trace name."""

    def __init__(self, name: str):
        self.name = name
        self.launches: list[LaunchTemplate] = []
        self.nodes: list | None = []
        self.touched: dict = {}       # FieldState -> whether it had left SYSTEM memory when first touched
        self.valid = False
        self.n_accs = 0
        self.pending_folds: list = []
        self.end_folds: list = []
        self.fold_of: dict = {}       # accumulator id -> its FoldTemplate
        self.exits: tuple = ()        # positions the exit barrier waits for (see `seal`)
        self.n_recorded = 0           # nodes recorded before the end folds
        self.checked_gen = None       # the instance manager's multi_gen when still_valid last passed
        self.resets: tuple = ()       # (FieldState, region) per touched field: what a replay's seal resets
        self.accesses: list = []      # (node, FieldState, region-like, privilege) of every bound argument
        self.chainable = False        # every point's cross dependences are known (see `seal`)
        self.last = None              # (nodes, entry, exit) of the last replay that ran to its end

    def touch(self, fs) -> None:
        if fs not in self.touched:
            self.touched[fs] = fs.multi

    def access(self, node, fs, sub, priv) -> None:
        self.accesses.append((node, fs, sub, priv))

    def still_valid(self, multi_gen: int | None = None) -> bool:
        """A field that left SYSTEM memory since it was first touched invalidates the fast bindings.
        `multi_gen` (the instance manager's count of fields that left it): unchanged since the last
        check that passed, nothing can have moved."""
        if multi_gen is not None and multi_gen == self.checked_gen:
            return True
        for fs, was in self.touched.items():
            if fs.multi != was:
                return False
        self.checked_gen = multi_gen
        return True

    def new_accumulator(self) -> int:
        self.n_accs += 1
        return self.n_accs - 1

    def begin_launch(self, spec) -> None:
        self.launches.append(LaunchTemplate(spec))

    def _inside(self, preds, node=None) -> tuple:
        """Trace positions of the nodes in `preds` that belong to this recording."""
        nodes = self.nodes
        n = len(nodes)
        return tuple(sorted({p.tpos for p in preds if p is not node and 0 <= p.tpos < n and nodes[p.tpos] is p}))

    def add_fold(self, fold, preds, acc, fs, ep) -> None:
        fold.tpos = len(self.nodes)
        self.nodes.append(fold)
        first = ep.first.tpos
        inside = self._inside(preds)
        nodes = self.nodes
        owner = next((j for j in reversed(inside) if isinstance(nodes[j], TaskNode)), None)
        ft = FoldTemplate(acc.aid, acc.fold if acc.fast else None, ep.lock, inside, fs, ep.sub, ep.op, first,
                          owner)
        self.pending_folds.append(ft)
        self.fold_of[acc.aid] = ft

    def add_point(self, node, preds, binds) -> None:
        node.tpos = len(self.nodes)
        self.nodes.append(node)
        prefolds, self.pending_folds = self.pending_folds, []
        pt = PointTemplate(node.point, node.proc, node.body, _freeze(binds), self._inside(preds, node), node.writes,
                           node.recover, tuple(prefolds))
        pt.pos = node.tpos
        self.launches[-1].points.append(pt)

    def seal(self, putter=None) -> None:
        """Freeze the record into a flat schedule: every point's queue resolved (`putter(proc)`, the
        executor's), and what an exit barrier waits for: the sinks of the recorded graph (every node
        precedes one) and every node that writes (a failed writer poisons the barrier, and with it
        whatever later reads the trace's fields, as if it had waited for all of them). A replay thereby
        skips the read-only tasks that others follow."""
        self.end_folds, self.pending_folds = self.pending_folds, []
        n = len(self.nodes)
        skip = bytearray(n)  # 1: a read-only task some other recorded node waits for
        pos = 0
        for lt in self.launches:
            for pt in lt.points:
                pos += len(pt.prefolds)  # a point's prefolds were recorded just before it
                if not pt.writes:
                    skip[pos] = 2
                pos += 1
                if putter is not None:
                    pt.put = putter(pt.proc)
        waited = bytearray(n)
        for lt in self.launches:
            for pt in lt.points:
                for j in pt.preds:
                    waited[j] = 1
                for ft in pt.prefolds:
                    for j in ft.preds:
                        waited[j] = 1
        for ft in self.end_folds:
            for j in ft.preds:
                waited[j] = 1
        self.exits = tuple(j for j in range(n) if not (waited[j] and skip[j]))
        self.resets = tuple((fs, fs.region) for fs in self.touched)
        self.n_recorded = n
        self._cross()
        self.nodes = None
        self.accesses = []
        self.valid = True

    def _cross(self) -> None:
        """What each point waits for when this trace replays right after itself: the nodes of the
        previous replay that the dependence analysis would have found, from the fields' users as the
        recording left them (conservatively: every overlapping writer, reducer and fold, and for a
        writing access every overlapping reader). A replay then starts point by point as those finish,
        instead of behind one barrier after the whole previous run (tracing.py). Only for records
        whose every binding is a view of SYSTEM memory (the instance manager orders the others)."""
        nodes = self.nodes
        n = len(nodes)

        def pos(node):
            j = node.tpos
            return j if 0 <= j < n and nodes[j] is node else None

        for lt in self.launches:
            for pt in lt.points:
                if not all(_chains(b) for b in pt.binds):
                    return
        users = {fs: [(pos(u), sub) for u, sub, _ in fs.users] for fs in self.touched}
        readers = {fs: [(pos(u), sub) for u, sub in fs.readers] for fs in self.touched}
        cross: dict = {}
        for node, fs, sub, priv in self.accesses:
            j = pos(node)
            if j is None:
                return
            got = cross.setdefault(j, set())
            lists = (users[fs],) if priv.code == READ_ONLY else (users[fs], readers[fs])
            for entries in lists:
                for k, s in entries:
                    if k is not None and overlaps(s, sub):
                        got.add(k)
        for lt in self.launches:
            for pt in lt.points:
                pt.cross = tuple(sorted(cross.get(pt.pos, ())))
        self.chainable = True


def _chains(b) -> bool:
    """Whether a binding is a view of SYSTEM memory (or a field group of such views)."""
    if b[0] == "fields":
        return all(_chains(fb) for fb in b[2])
    return b[0] in ("fast", "join_fast")


def _freeze(binds):
    """Replace node references in bindings by trace positions."""
    out = []
    for b in binds:
        kind = b[0]
        if kind == "fields":
            out.append(("fields", b[1], _freeze(b[2])))
        elif kind == "join_slow":
            out.append(b[:7] + (b[7].tpos,) + b[8:])
        else:
            out.append(b)
    return out
