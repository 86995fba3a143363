"""Tracing: record a repeated sequence of launches once, then replay it without re-analysis.

`with rtm.trace("step"):` the first time records every launch (task, region arguments, tag, the kinds
of the plain arguments), each point's processor and bindings, and its dependences on earlier nodes of
the same trace (as positions). Later runs check each launch against the record as it is issued and,
when it matches, rebuild the point from the record: the mapping and the in-trace dependences are reused,
the plain arguments and futures are this run's, and only fields that live outside the home array go
through the instance manager again (copies depend on where the data is now).

A sealed record is a flat, pre-resolved schedule: per point its processor's queue (resolved once from
the executor), its region arguments when they are constant views (most are: home arrays and persistent
reduction buffers), and its dependences as integer positions. Replaying such a point is: make the node,
concatenate the constant views with this run's plain arguments, count its unfinished predecessors by
position under the engine lock, and put it on its queue when none is left (`Engine.submit_indexed`).
Only points with something to bind again (accumulators to initialise, instances outside SYSTEM memory)
take the general path. The records and their templates are in trace_record.py; this module replays
them and owns the `rtm.trace` scope.

Boundaries: a replay starts behind an entry barrier that waits for every pending user of the fields
the trace touches, and ends with an exit barrier that becomes those fields' only user, so whatever
follows is ordered after the whole trace (it waits for the recorded sinks, which every node precedes,
and for every writer, so a failed writer still keeps later readers of its data from running; a replay
that ends early waits for all its nodes). Reduction epochs are closed at both boundaries, so a
recording never joins an epoch opened outside it.

Chained replays: a replay that follows the previous replay of the same record with nothing in between
(every touched field's one user is still that replay's exit barrier) skips the entry barrier: each
point waits for the nodes of the previous replay that the analysis would have ordered it after
(positions computed when the record was sealed, `TraceRecord._cross`) and for that replay's entry, so
a training step's first layer starts as soon as its weights are updated rather than after the last
update of the step before. Records that bind instances outside SYSTEM memory are never chained.

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
from runtime.geometry import box_slices
from runtime.graph import BarrierNode, FoldNode, TaskNode, resolve_futures, task_node
from runtime.privileges import RW
from runtime.tasks import Fields
from runtime.trace_record import FoldTemplate, LaunchTemplate, PointTemplate, TraceRecord

__all__ = ["FoldTemplate", "LaunchTemplate", "PointTemplate", "Replay", "TraceRecord", "TraceScope"]

log = logging.getLogger("runtime")


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
        last, rec.last = rec.last, None
        self.prev = None  # the previous replay's nodes, when this one is chained to it
        self.prev_exit = None  # and its exit barrier, which every barrier of this replay waits for
        if last is not None and _follows(rec, last[2]):
            # right after the previous replay of this record, with nothing between: each point waits for
            # the nodes of that replay it depends on (its recorded `cross` positions) and for that
            # replay's entry, instead of for one barrier after every pending user of every field
            self.prev, self.entry, self.prev_exit = last[0], last[1], last[2]
            rt.stats.chained_replays += 1
            return
        pending: list = []
        analysis.pending_users(rec.touched, pending)
        self.entry = BarrierNode(f"trace '{rec.name}' entry")
        rt.engine.submit(self.entry, pending)

    def launch(self, task, index, domain, points, args, tag, launch_id):
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
            node = task_node(task, pt.point, pt.proc, pt.body, launch_id)
            node.writes = pt.writes
            node.recover = pt.recover
            node.tpos = len(nodes)
            nodes.append(node)
            fixed = pt.fixed
            if fixed is not None and pt.put is not None:
                # the flat path: pre-resolved arguments, recorded dependences by position, known queue
                if point_pos is None:
                    node.args = fixed + plain
                else:
                    args_i = list(fixed)
                    args_i += plain
                    for j in point_pos:
                        args_i[j] = pt.point
                    node.args = args_i
                put = engine.dispatch if node.inline else pt.put  # an inline point runs where it is ready
                engine.submit_indexed(node, entry, nodes, pt.preds, put,
                                      resolve_futures(futs, i, node) if futs is not None else None,
                                      self.prev, pt.cross if self.prev is not None else ())
                out.append(node)
                continue
            preds = [entry]
            for j in pt.preds:
                preds.append(nodes[j])
            if self.prev is not None:
                for j in pt.cross:
                    preds.append(self.prev[j])
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
            target.pin(node)
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
        after = (self.nodes if preds is None else preds) + [self.entry]
        if self.prev_exit is not None:
            # a chained replay's points wait only for what they depend on, so the fields' next users
            # must also wait for the previous replay's nodes (a read-only task this replay never
            # followed, or anything after the point where an aborted or mismatched replay stopped)
            after.append(self.prev_exit)
        rt.engine.submit(barrier, after)
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
        if rec.chainable and barrier is not None and len(nodes) >= rec.n_recorded:
            rec.last = (nodes, self.entry, barrier)
        return barrier


def _follows(rec, exit_barrier) -> bool:
    """Whether the fields `rec` touches are as the replay that ended with `exit_barrier` left them: that
    barrier their one user, no reader since, no reduction open (nothing ran on them in between)."""
    for fs in rec.touched:
        users = fs.users
        if len(users) != 1 or users[0][0] is not exit_barrier or fs.readers or fs.epoch is not None:
            return False
    return True


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
