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
from runtime.analysis import JOIN
from runtime.errors import TraceError
from runtime.futures import Future, FutureMap
from runtime.graph import BarrierNode, FoldNode, TaskNode, resolve_futures
from runtime.privileges import RW
from runtime.regions import Partition, Region, Subregion
from runtime.tasks import Fields, _Point

log = logging.getLogger("runtime")

_SPECIAL = frozenset({Future, FutureMap, Region, Subregion, Partition, _Point})


class PointTemplate:
    __slots__ = ("point", "proc", "body", "binds", "preds", "writes", "recover", "views", "gen")

    def __init__(self, point, proc, body, binds, preds, writes, recover, gen):
        self.point = point
        self.proc = proc
        self.body = body
        self.binds = binds
        self.preds = preds
        self.writes = writes
        self.recover = recover
        # every argument a view of a home array: replay reuses them while no field has left SYSTEM
        # memory since (`gen` is the runtime's count of fields that did)
        views = [_constant(b) for b in binds]
        self.views = views if all(v is not None for v in views) else None
        self.gen = gen


def _constant(b):
    if b[0] == "fast":
        return b[5]
    if b[0] == "fields":
        vals = [_constant(fb) for fb in b[2]]
        if all(v is not None for v in vals):
            return Fields(dict(zip(b[1], vals, strict=True)))
    return None


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
        rsel = self.rsel
        for i in range(self.nreg):
            if args[i] is not rsel[i]:
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
        self.touched: dict = {}
        self.valid = False

    def touch(self, fs) -> None:
        if fs not in self.touched:
            self.touched[fs] = None

    def begin_launch(self, spec) -> None:
        self.launches.append(LaunchTemplate(spec))

    def add_point(self, rt, spec, node, preds, binds, folds) -> None:
        nodes = self.nodes
        node.tpos = len(nodes)
        nodes.append(node)
        for fold, _ in folds:
            fold.tpos = len(nodes)
            nodes.append(fold)
        n = len(nodes)
        inside = sorted({p.tpos for p in preds if p is not node and 0 <= p.tpos < n and nodes[p.tpos] is p})
        self.launches[-1].points.append(PointTemplate(
            node.point, node.proc, node.body, _freeze(binds), tuple(inside), node.writes, node.recover,
            rt._physical.multi_gen))

    def seal(self) -> None:
        self.nodes = None
        self.valid = True


def _freeze(binds):
    """Replace node references in bindings by trace positions."""
    out = []
    for b in binds:
        kind = b[0]
        if kind == "fields":
            out.append(("fields", b[1], _freeze(b[2])))
        elif kind == "join_fast":
            out.append(b[:7] + (b[7].tpos,) + b[8:])
        elif kind == "slow" and b[5] == JOIN:
            out.append(b[:6] + (b[6].tpos,) + b[7:])
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
        self.targets: dict = {}
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
        rt = self.rt
        engine = rt.engine
        phys = rt._physical
        nodes = self.nodes
        entry = self.entry
        out = []
        for i, pt in enumerate(lt.points):
            node = TaskNode(task, pt.point, pt.proc, pt.body, launch_id)
            node.writes = pt.writes
            node.recover = pt.recover
            node.tpos = len(nodes)
            nodes.append(node)
            preds = [entry]
            for j in pt.preds:
                preds.append(nodes[j])
            folds: list = []
            copies: list = []
            redinit: list = []
            if pt.views is not None and pt.gen == phys.multi_gen:
                args_i = pt.views + list(args[len(pt.views):])
            else:
                args_i = list(args)
                for a, b in enumerate(pt.binds):
                    args_i[a] = self._bind(b, node, preds, folds, copies, redinit)
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
            for fold, fp in folds:
                fold.tpos = len(nodes)
                nodes.append(fold)
                engine.submit(fold, fp)
            out.append(node)
        return out

    def _bind(self, b, node, preds, folds, copies, redinit):
        kind = b[0]
        if kind == "fast":
            fs = b[1]
            if not fs.multi:
                return b[5]
            value, _ = self.rt._bind_slow(fs, b[2], b[3], b[4], node, b[6], preds, copies, redinit,
                                          None, None, False, self.targets)
            return value
        if kind == "fields":
            return Fields({name: self._bind(fb, node, preds, folds, copies, redinit)
                           for name, fb in zip(b[1], b[2], strict=True)})
        if kind == "join_fast":
            _, fs, sub, priv, mem, buf, fn, first, lock, init = b
            if not fs.multi:
                redinit.append(init)
                folds.append((FoldNode(fn, lock, node), [node, self.nodes[first]]))
                return buf
            return self._join_slow(fs, sub, priv, mem, node, first, lock, preds, copies, redinit, folds)
        _, fs, sub, priv, mem, role, first, lock = b
        if role == JOIN:
            return self._join_slow(fs, sub, priv, mem, node, first, lock, preds, copies, redinit, folds)
        value, _ = self.rt._bind_slow(fs, sub, priv, mem, node, role, preds, copies, redinit, None, None,
                                      False, self.targets)
        return value

    def _join_slow(self, fs, sub, priv, mem, node, first, lock, preds, copies, redinit, folds):
        target = self.targets.get((first, id(fs)))
        value, fold = self.rt._bind_slow(fs, sub, priv, mem, node, JOIN, preds, copies, redinit, target, lock,
                                         False, self.targets)
        folds.append((fold, [node, self.nodes[first]]))
        return value

    def _seal(self, label: str) -> None:
        """Make the nodes replayed so far the only user of every touched field."""
        if not self.active:
            return
        rt = self.rt
        barrier = BarrierNode(f"trace '{self.rec.name}' {label}")
        rt.engine.submit(barrier, self.nodes + [self.entry])
        for fs in self.rec.touched:
            fs.users = [(barrier, fs.region, RW)]
            fs.readers = []
            fs.epoch = None
        self.active = False

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

    def finish(self) -> None:
        if self.pos != len(self.rec.launches):
            self.mismatch(f"its end: {self.pos} of {len(self.rec.launches)} recorded launches were issued")
            return
        self._seal("exit")
        self.rt.stats.replayed_traces += 1


class TraceScope:
    """The context manager returned by `Runtime.trace`."""

    def __init__(self, rt, name: str, wait: bool, strict: bool):
        self.rt = rt
        self.name = name
        self.wait = wait
        self.strict = strict
        self.nodes: list = []
        self.replayed = False

    def __enter__(self):
        self.rt._begin_trace(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.rt._end_trace(self, exc_type is not None)
        return False
