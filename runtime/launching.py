"""Turning a launch call into point-task nodes: argument checks, mapping, analysis, binding.

`prepare` checks a launch's arguments against the task's privileges once per launch and returns a
`LaunchSpec`. `Binder` (mixed into Runtime) builds each point: ask the mapper, check its answer, run
the dependence analysis per region field, bind each argument (a view of the home array on the fast
path, an instance with planned copies otherwise, an accumulator for a reducer that joins an open epoch:
see reductions.py), then submit. While a trace records, every binding is written down so a replay
can rebuild the point without analysis.
"""

from __future__ import annotations

import cython

from runtime.analysis import IN_PLACE, JOIN, FieldState, register, register_read
from runtime.errors import LaunchError
from runtime.futures import Future, FutureMap
from runtime.graph import TaskNode, resolve_futures, task_node
from runtime.instances import READ, READ_WRITE, WRITE_ONLY
from runtime.mapper import TaskInfo, validate_memory, validate_processor
from runtime.privileges import READ_ONLY, WRITE_DISCARD
from runtime.regions import Partition, Region, Subregion
from runtime.tasks import POINT, Fields, Task

_REGION_TYPES = (Region, Subregion)


class LaunchSpec:
    """One launch, checked: what to project per point and which plain arguments need resolving."""

    __slots__ = ("task", "info", "index", "domain", "points", "rsel", "plain", "futs", "point_pos", "kinds",
                 "tag")

    def __init__(self, task, info, index, domain, points, rsel, plain, futs, point_pos, kinds, tag):
        self.task = task
        self.info = info
        self.index = index
        self.domain = domain
        self.points = points
        self.rsel = rsel
        self.plain = plain
        self.futs = futs
        self.point_pos = point_pos
        self.kinds = kinds
        self.tag = tag


def task_info(cache: dict, task: Task, index: bool, domain, tag, machine) -> TaskInfo:
    """The TaskInfo for a launch shape, cached per runtime (mappers may keep state keyed on it)."""
    try:
        key = (task, task._version, index, domain, tag)
        info = cache.get(key)
    except TypeError:  # unhashable tag
        key, info = None, None
    if info is None:
        info = TaskInfo(task, task.name, tag, index, domain, frozenset(task.variants), task.privileges, machine)
        if key is not None:
            cache[key] = info
    return info


def prepare(task, index: bool, domain, points, args: tuple, tag, machine, cache: dict) -> LaunchSpec:
    """Check `args` against `task`'s privileges; raise LaunchError naming the argument and the fix."""
    if not isinstance(task, Task):
        raise LaunchError(f"launch expects a Task (a function decorated with @task), received {task!r}")
    nreg = task._nreg
    name = task.name
    if len(args) < nreg:
        raise LaunchError(f"task '{name}' declares {nreg} region privilege(s) {list(task.privileges)} but was "
                          f"launched with {len(args)} argument(s); pass one Region/Subregion"
                          f"{'/Partition' if index else ''} per privilege first.")
    npts = len(points)
    rsel = args[:nreg]
    for i, r in enumerate(rsel):
        t = type(r)
        if t is Region or t is Subregion:
            continue
        if isinstance(r, Partition):
            if not index:
                raise LaunchError(f"task '{name}' argument {i} ({task.privileges[i]}) is a Partition; a single "
                                  f"launch takes a Region or a Subregion (P[i]). Use index_launch to project "
                                  f"the partition over its colors.")
            cs = r.color_shape
            nd = len(domain)
            ok = cs == domain or (cs[:nd] == domain and cs[nd:].count(1) == len(cs) - nd)
            if not ok or len(r._subs) != npts:
                raise LaunchError(f"task '{name}' argument {i}: partition {r.name} has color shape {cs}, which "
                                  f"cannot be projected onto the launch domain {domain}; launch over "
                                  f"{cs} (P.color_shape) or partition with degrees matching the domain.")
            continue
        if isinstance(r, _REGION_TYPES):
            continue
        raise LaunchError(f"task '{name}' argument {i} has privilege {task.privileges[i]} and must be a Region, "
                          f"Subregion{' or Partition' if index else ''}; received {type(r).__name__} {r!r:.60}")
    plain = list(args)
    futs = None
    point_pos = None
    kinds = []
    for j in range(nreg, len(args)):
        a = args[j]
        t = type(a)
        if t is Future:
            futs = futs or []
            futs.append((j, a, False))
            kinds.append("F")
        elif t is FutureMap:
            if not index or len(a._nodes) != npts:
                raise LaunchError(f"task '{name}' argument {j} is a FutureMap over {a.domain}; it can only be "
                                  f"passed to an index launch over a domain of the same size, here "
                                  f"{domain if index else 'a single launch'}. Pass fm[c] for one value.")
            futs = futs or []
            futs.append((j, a, True))
            kinds.append("M")
        elif a is POINT:
            point_pos = point_pos or []
            point_pos.append(j)
            kinds.append("P")
        elif isinstance(a, (Region, Subregion, Partition)):
            raise LaunchError(f"task '{name}' argument {j} is {a!r} but the task declares only {nreg} "
                              f"privilege(s); a region argument needs a privilege in @task(privileges=...).")
        else:
            kinds.append("V")
    info = task_info(cache, task, index, domain, tag, machine)
    return LaunchSpec(task, info, index, domain, points, rsel, plain, futs, point_pos, tuple(kinds), tag)


class Binder:
    """Point construction, mixed into Runtime (uses its engine, mapper, physical, stats, trace state)."""

    def _map(self, spec: LaunchSpec, point, k: int, subs):
        task = spec.task
        if task._internal:
            return self._internal_proc(), self._sys_list(len(subs))
        mapper = self.mapper
        info = spec.info
        proc, mems = mapper.map_point(info, point, k, subs)
        if not self._trusted_mapper:
            validate_processor(mapper, info, point, proc)
            if len(mems) != len(subs):
                raise LaunchError(f"Mapper {type(mapper).__name__}.map_point returned {len(mems)} memories for "
                                  f"task '{task.name}' point {point}, which has {len(subs)} region arguments")
            for i, m in enumerate(mems):
                validate_memory(mapper, info, point, proc, i, subs[i], m)
        return proc, mems

    def _sys_list(self, n):
        return [self._sysmem] * n

    @cython.locals(node=TaskNode, fs=FieldState, i=cython.Py_ssize_t, k=cython.Py_ssize_t, nreg=cython.Py_ssize_t,
                   preds=list, copies=list, redinit=list, args=list, subs=list, nodes=list, fast_read=cython.bint)
    def _launch_points(self, spec: LaunchSpec, launch_id: int) -> list:
        task = spec.task
        privs = task.privileges
        nreg = task._nreg
        rec = self._recording
        engine = self.engine
        nodes = []
        writes = task._writes
        sysmem = self._sysmem
        fast_read = rec is None  # RO arguments may take register_read's path (no recording to write)
        rsel = spec.rsel
        projected = [(i, r._subs) for i, r in enumerate(rsel) if type(r) is Partition]
        for k, point in enumerate(spec.points):
            subs = list(rsel)
            for i, ps in projected:
                subs[i] = ps[k]
            proc, mems = self._map(spec, point, k, subs)
            node = task_node(task, point, proc, task.variants[proc.kind], launch_id)
            node.writes = writes
            if task._internal:
                node.recover = task._recover
            preds: list = []
            copies: list = []
            redinit: list = []
            binds = [] if rec is not None else None
            args = list(spec.plain)
            try:
                for i in range(nreg):
                    sub = subs[i]
                    region = sub.root
                    fs = region._fs0
                    if fs is not None and region._owner is self:  # one field, already adopted
                        priv = privs[i]
                        if (fast_read and priv.code == READ_ONLY and fs.epoch is None and mems[i] is sysmem
                                and not fs.multi and not region.exact_pieces):
                            # _bind_field's path for a read of the home array, without its branches
                            register_read(fs, sub, node, preds, False)
                            view = fs.views.get(sub)
                            args[i] = view if view is not None else self._physical.fast_view(fs, sub)
                            continue
                        args[i] = self._bind_field(fs, sub, priv, mems[i], node, preds, copies, redinit, binds)
                    else:
                        args[i] = self._bind_arg(sub, privs[i], mems[i], node, preds, copies, redinit, binds)
            except BaseException as e:
                engine.abort(node, e)
                raise
            fpreds = resolve_futures(spec.futs, k, node) if spec.futs is not None else None
            if spec.point_pos is not None:
                for j in spec.point_pos:
                    args[j] = point
            node.args = args
            if copies:
                node.copies = copies
            if redinit:
                node.redinit = redinit
            if rec is not None:
                rec.add_point(node, preds, binds)
            engine.submit(node, preds, fpreds)
            nodes.append(node)
        self.stats.analyzed_points += len(nodes)
        return nodes

    def _bind_arg(self, sub, priv, mem, node, preds, copies, redinit, binds):
        region = sub.root
        if region._owner is not self:
            self._adopt(region)
        fs = region._fs0
        if fs is not None:
            return self._bind_field(fs, sub, priv, mem, node, preds, copies, redinit, binds)
        names = priv.fields or region.field_names
        views = {}
        fbinds = [] if binds is not None else None
        for f in names:
            st = region._states.get(f)
            if st is None or f is None:
                raise LaunchError(f"task '{node.task.name}': privilege {priv} names field {f!r}, but region "
                                  f"'{region.name}' has fields {list(region.field_names)}")
            views[f] = self._bind_field(st, sub, priv, mem, node, preds, copies, redinit, fbinds)
        if binds is not None:
            binds.append(("fields", tuple(names), fbinds))
        return Fields(views)

    @cython.locals(role=cython.int, fs=FieldState)
    def _bind_field(self, fs: FieldState, sub, priv, mem, node, preds, copies, redinit, binds):
        rec = self._recording
        if rec is not None:
            rec.touch(fs)
            rec.access(node, fs, sub, priv)
        role = register(fs, sub, priv, node, preds, rec is not None, self._close_epoch)
        if priv.code != READ_ONLY:
            fs.last_proc = node.proc
        if role == JOIN:
            return self._join(fs, sub, priv, mem, node, preds, redinit, binds)
        if mem is self._sysmem and not fs.multi and not (sub.root.exact_pieces and not sub._contiguous):
            view = fs.views.get(sub)
            if view is None:
                view = self._physical.fast_view(fs, sub)
            if role == IN_PLACE:
                self._start_epoch(fs, node, mem, None)
            if binds is not None:
                binds.append(("fast", fs, sub, priv, mem, view, role))
            return view
        value, inst = self._bind_slow(fs, sub, priv, mem, node, role, preds, copies)
        if role == IN_PLACE:
            self._start_epoch(fs, node, mem, inst)
        if binds is not None:
            binds.append(("slow", fs, sub, priv, mem, role))
        return value

    def _bind_slow(self, fs, sub, priv, mem, node, role, preds, copies):
        """Bind through the instance manager; returns (view, instance)."""
        code = priv.code
        mode = READ if code == READ_ONLY else (WRITE_ONLY if code == WRITE_DISCARD else READ_WRITE)
        inst = self._physical.acquire(fs, sub, mem, node, mode, preds, copies)
        return inst.view(sub.box), inst
