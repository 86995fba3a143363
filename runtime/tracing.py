"""Tracing: record a repeated sequence of launches once, then replay it without re-analysis.

`with rtm.trace("step"):` the first time records every launch (task, region arguments, tag, the kinds
of the plain arguments), each point's processor and bindings, and its dependences on earlier nodes of
the same trace (as positions). Later runs check each launch against the record as it is issued and,
when it matches, rebuild the point from the record: the mapping and the in-trace dependences are reused,
the plain arguments and futures are this run's, and only fields that live outside the home array go
through the instance manager again (copies depend on where the data is now).

Boundaries: a replay starts behind an entry barrier that waits for every pending user of the fields
the trace touches, and ends with an exit barrier that becomes those fields' only user, so whatever
follows is ordered after the whole trace. Reduction epochs are closed at both boundaries, so a
recording never joins an epoch opened outside it.

A launch that differs from the record (or a trace that ends early or runs long) is a mismatch: the
replayed prefix is sealed behind a barrier exactly like a trace end, the rest of the run is analysed
normally, the record is dropped (the next run records afresh), and `strict=True` raises TraceError.
Nothing is ever replayed against a different sequence.
"""

from __future__ import annotations

import logging

from runtime import analysis
from runtime.analysis import IN_PLACE
from runtime.errors import TraceError
from runtime.futures import Future, FutureMap
from runtime.geometry import box_slices
from runtime.graph import BarrierNode, FoldNode, TaskNode, resolve_futures
from runtime.privileges import RW
from runtime.regions import Partition, Region, Subregion
from runtime.tasks import Fields, _Point

log = logging.getLogger("runtime")

_SPECIAL = frozenset({Future, FutureMap, Region, Subregion, Partition, _Point})


class PointTemplate:
    __slots__ = ("point", "proc", "body", "binds", "preds", "writes", "recover", "views", "dyn", "prefolds",
                 "fixed", "put")

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
        self.points: list[PointTemplate] = []
        self.nreg = len(spec.rsel)
        self.nargs = self.nreg + len(spec.kinds)
        self.vpos = tuple(self.nreg + j for j, k in enumerate(spec.kinds) if k == "V")
        self.fpos = tuple((self.nreg + j, k == "M") for j, k in enumerate(spec.kinds) if k in "FM")
        self.ppos = tuple(self.nreg + j for j, k in enumerate(spec.kinds) if k == "P") or None

    def quick_match(self, task, index, domain, args, tag):
        """(futs, point_pos) when `args` is this launch again, else None (then ask `difference`)."""
        if task is not self.task or index is not self.index or len(args) != self.nargs or tag is not self.tag:
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

    def touch(self, fs) -> None:
        if fs not in self.touched:
            self.touched[fs] = fs.multi

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
        self.launches[-1].points.append(PointTemplate(
            node.point, node.proc, node.body, _freeze(binds), self._inside(preds, node), node.writes,
            node.recover, tuple(prefolds)))

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
        self.nodes = None
        self.valid = True


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


class Replay:
    """One replay of a record; `launch` returns the nodes, or None after a mismatch."""

    def __init__(self, rt, rec: TraceRecord, strict: bool):
        self.rt = rt
        self.rec = rec
        self.strict = strict
        self.pos = 0
        self.nodes: list = []
        self.targets: dict = {}     # (first reducer's position, id(fs)) -> its instance (slow path)
        self.accs: dict = {}        # accumulator id -> buffer (slow path, this replay only)
        self.open_accs: dict = {}   # accumulator id -> FoldTemplate, until its fold is recreated
        self.active = True
        pending: list = []
        analysis.pending_users(rec.touched, pending)
        self.entry = BarrierNode(f"trace '{rec.name}' entry")
        rt.engine.submit(self.entry, pending)

    def launch(self, task, index, domain, points, args, tag, launch_id: int):
        """Rebuild launch number `pos` from the record; None (after sealing) when it differs."""
        rec = self.rec
        k = self.pos
        lt = rec.launches[k] if k < len(rec.launches) else None
        quick = lt.quick_match(task, index, domain, args, tag) if lt is not None else None
        if quick is None:
            spec = self.rt._prepare(task, index, domain, points, args, tag)
            why = "the trace runs longer than recorded" if lt is None else lt.difference(spec)
            if why is not None:
                self.mismatch(f"launch {k}: {why}")
                return None
            quick = (spec.futs, spec.point_pos)
        futs, point_pos = quick
        self.pos = k + 1
        engine = self.rt.engine
        nodes = self.nodes
        entry = self.entry
        out = []
        plain = args[lt.nreg:]
        for i, pt in enumerate(lt.points):
            if pt.prefolds:
                for ft in pt.prefolds:
                    self._fold(ft)
            node = TaskNode(task, pt.point, pt.proc, pt.body, launch_id)
            node.writes = pt.writes
            node.recover = pt.recover
            node.tpos = len(nodes)
            nodes.append(node)
            fixed = pt.fixed
            if fixed is not None and point_pos is None and pt.put is not None:
                # the flat path: pre-resolved arguments, recorded dependences by position, known queue
                node.args = fixed + plain
                engine.submit_indexed(node, entry, nodes, pt.preds, pt.put,
                                      resolve_futures(futs, i, node) if futs is not None else None)
                out.append(node)
                continue
            preds = [entry]
            for j in pt.preds:
                preds.append(nodes[j])
            copies: list = []
            redinit: list = []
            views = pt.views
            args_i = views + list(args[len(views):])
            try:
                for a, b in pt.dyn:
                    args_i[a] = self._bind(b, node, preds, copies, redinit)
            except BaseException as e:
                engine.abort(node, e)
                raise
            fpreds = resolve_futures(futs, i, node) if futs is not None else None
            if point_pos is not None:
                for j in point_pos:
                    args_i[j] = pt.point
            node.args = args_i
            if copies:
                node.copies = copies
            if redinit:
                node.redinit = redinit
            engine.submit(node, preds, fpreds)
            out.append(node)
        return out

    def _bind(self, b, node, preds, copies, redinit):
        kind = b[0]
        rt = self.rt
        if kind == "fields":
            return Fields({name: self._bind(fb, node, preds, copies, redinit)
                           for name, fb in zip(b[1], b[2], strict=True)})
        if kind == "fast":
            return b[5]
        if kind == "join_fast":
            if b[6] is not None:
                redinit.append(b[6])
                self.open_accs[b[7]] = self.rec.fold_of.get(b[7])
            return b[5]
        if kind == "slow":
            _, fs, sub, priv, mem, role = b
            value, inst = rt._bind_slow(fs, sub, priv, mem, node, role, preds, copies)
            if role == IN_PLACE:
                self.targets[(node.tpos, id(fs))] = inst
            return value
        # join_slow: an accumulator of this replay (private buffer) or the epoch's target (in place)
        _, fs, sub, priv, mem, aid, creates, first, ep_sub = b
        if aid < 0:
            target = self.targets.get((first, id(fs))) or fs.instances[0]
            target.pins.append(node)
            return target.view(sub.box)
        if creates:
            buf, init, release = rt._physical.reduce_buffer(fs, ep_sub, mem, priv.redop, keep=True)
            self.accs[aid] = (buf, release, mem)
            redinit.append(init)
            self.open_accs[aid] = self.rec.fold_of.get(aid)
        buf = self.accs[aid][0]
        if sub is ep_sub or sub.box == ep_sub.box:
            return buf
        return buf[box_slices(sub.box, ep_sub.box[0])]

    def _fold(self, ft: FoldTemplate, preds=None) -> None:
        """Recreate a recorded fold after its recorded predecessors (after `preds` when given)."""
        fn = ft.fn
        if fn is None:
            buf, release, mem = self.accs.pop(ft.aid)
            target = self.targets.get((ft.first, id(ft.fs))) or ft.fs.instances[0]
            inner = self.rt._physical.fold_fn(ft.op, target, ft.sub, buf, mem.device)

            def fn():
                inner()
                release()
        nodes = self.nodes
        if preds is None:
            owner = nodes[ft.owner] if ft.owner is not None else None
        else:
            owner = next((p for p in reversed(preds) if isinstance(p, TaskNode)), None)
        fold = FoldNode(fn, ft.lock, owner)
        fold.tpos = len(nodes)
        nodes.append(fold)
        if self.open_accs:
            self.open_accs.pop(ft.aid, None)
        engine = self.rt.engine
        if preds is None:
            engine.submit_indexed(fold, self.entry, nodes, ft.preds, engine.dispatch)
        else:
            engine.submit(fold, preds + [self.entry])
        self.rt.stats.folds += 1

    def _seal(self, label: str, preds=None):
        """Make the nodes replayed so far (or `preds`, which every one of them precedes) the only user
        of every touched field; returns the barrier."""
        if not self.active:
            return None
        for ft in list(self.open_accs.values()):  # accumulators whose recorded fold lies ahead
            if ft is not None:
                self._fold(ft, list(self.nodes))
        rt = self.rt
        barrier = BarrierNode(f"trace '{self.rec.name}' {label}")
        rt.engine.submit(barrier, (self.nodes if preds is None else preds) + [self.entry])
        for fs, region in self.rec.resets:
            fs.users = [(barrier, region, RW)]
            fs.readers = []
            fs.epoch = None
        self.active = False
        return barrier

    def mismatch(self, why: str) -> None:
        rt = self.rt
        self._seal("replayed prefix")
        self.rec.valid = False
        rt._traces.pop(self.rec.name, None)
        rt.stats.trace_mismatches += 1
        msg = (f"trace '{self.rec.name}' differs from its recording at {why}; the replayed prefix was "
               f"sealed, the rest is analysed normally, and the next run records the trace again")
        if self.strict:
            raise TraceError(msg + ". (strict=True: make every run of the trace issue the same launches.)")
        log.warning(msg)

    def finish(self):
        """End a replay; returns the exit barrier, after every replayed node (None after a mismatch)."""
        rec = self.rec
        if self.pos != len(rec.launches):
            self.mismatch(f"its end: {self.pos} of {len(rec.launches)} recorded launches were issued")
            return None
        nodes = self.nodes
        for ft in rec.end_folds:
            self._fold(ft)
        preds = None
        if not self.open_accs and len(nodes) >= rec.n_recorded:
            # the recorded sinks and writers (see TraceRecord.seal) and whatever came after them
            preds = [nodes[j] for j in rec.exits]
            preds.extend(nodes[rec.n_recorded:])
        barrier = self._seal("exit", preds)
        self.rt.stats.replayed_traces += 1
        return barrier


class TraceScope:
    """The context manager returned by `Runtime.trace`."""

    def __init__(self, rt, name: str, wait: bool, strict: bool):
        self.rt = rt
        self.name = name
        self.wait = wait
        self.strict = strict
        self.nodes: list = []
        self.replayed = False
        self.exit = None  # a full replay's exit barrier (after all of `nodes`)

    def __enter__(self):
        self.rt._begin_trace(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.rt._end_trace(self, exc_type is not None)
        return False
