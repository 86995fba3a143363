"""The Runtime: the object a program launches tasks through.

It owns the machine's workers (an executor), the mapper, the instance manager, the dependence state
of every region it has touched, the trace records and the profiler. All issuing happens on one thread
(the program's); workers only run task bodies, copies and folds. See the package docstring for the
design note.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import weakref
from dataclasses import dataclass

import numpy as np

from runtime import gpu as _gpu
from runtime.analysis import FieldState
from runtime.errors import LaunchError, RuntimeSystemError, TaskError, TraceError
from runtime.futures import Future, FutureMap, domain_points
from runtime.graph import BarrierNode, Engine, _tls
from runtime.instances import Physical
from runtime.launching import Binder, prepare
from runtime.machine import Machine, MemKind, Processor, ProcKind, parse_legion_args
from runtime.mapper import DefaultMapper, Mapper
from runtime.privileges import RO, WD, Privilege
from runtime.profiling import Profiler
from runtime.reductions import Reductions
from runtime.regions import Region, Subregion
from runtime.tasks import Fields, Task
from runtime.tracing import Replay, TraceRecord, TraceScope
from runtime.workers import EXECUTORS, ThreadingPolicy

log = logging.getLogger("runtime")


@dataclass
class RuntimeStats:
    """Counters of what the runtime did (read them to check tracing, copies, reductions)."""

    launches: int = 0            # single launches, including fill/read/write
    index_launches: int = 0
    analyzed_points: int = 0     # point tasks that went through dependence analysis
    replayed_points: int = 0     # point tasks rebuilt from a trace record without analysis
    recorded_traces: int = 0
    replayed_traces: int = 0
    chained_replays: int = 0     # replays that started point by point after the previous one (tracing.py)
    trace_mismatches: int = 0
    copies: int = 0              # planned copies between instances
    copy_bytes: int = 0
    folds: int = 0               # reduction buffers folded into a region
    instances: int = 0           # instances allocated outside home arrays

    def snapshot(self) -> RuntimeStats:
        return dataclasses.replace(self)


def _fill_body(view, value):
    for v in (view.values() if isinstance(view, Fields) else (view,)):
        v[...] = value


def _write_body(view, array):
    if isinstance(view, Fields):
        for name, v in view.items():
            v[...] = array[name]
    else:
        view[...] = array


def _read_body(view):
    if isinstance(view, Fields):
        return {name: np.array(v) for name, v in view.items()}
    return np.array(view)


class Runtime(Binder, Reductions):
    """Launch tasks on a machine: dependences from privileges, placement by a mapper, data movement.

    Args:
        machine: the Machine (default `Machine()`: one CPU, one UTIL processor).
        executor: "threaded" (a worker per processor) or "sequential" (everything on the caller's
            thread, in issue order).
        mapper: a Mapper (default DefaultMapper()).
        profile: record a task timeline (default: the machine's `-lg:prof`).
        profile_path: write the timeline here at shutdown (default: `-lg:prof_logfile`, else nowhere).

    Example:
        >>> with Runtime(Machine(cpus=2), executor="threaded") as rtm:
        ...     R = Region((8,), np.float64); rtm.fill(R, 1.0)
        ...     total = rtm.launch(sum_task, R).get()
    """

    def __init__(self, machine: Machine | None = None, executor: str = "threaded", mapper: Mapper | None = None,
                 profile: bool | None = None, profile_path: str | None = None):
        if machine is None:
            machine = Machine()
        if not isinstance(machine, Machine):
            raise TypeError(f"Runtime expects a Machine (Machine.from_args([...]) or Machine(cpus=...)), "
                            f"received {machine!r}")
        if executor not in EXECUTORS:
            raise ValueError(f"Runtime executor must be one of {sorted(EXECUTORS)}, received {executor!r}")
        if mapper is None:
            mapper = DefaultMapper()
        if not isinstance(mapper, Mapper):
            raise TypeError(f"Runtime mapper must be a runtime.Mapper, received {mapper!r}")
        self.machine = machine
        self.mapper = mapper
        self.stats = RuntimeStats()
        self.engine = Engine()
        self._physical = Physical(machine, self.stats)
        self._sysmem = self._physical.sysmem
        if isinstance(mapper, DefaultMapper):
            mapper.bind(machine, self)
        elif hasattr(mapper, "bind"):
            mapper.bind(machine)
        # the stock answers need no checking; anything a subclass overrides is validated
        self._trusted_mapper = (isinstance(mapper, DefaultMapper) and mapper._fast
                                and type(mapper).map_point is DefaultMapper.map_point)
        self._cpu = machine.processors(ProcKind.CPU)
        self._util = machine.processors(ProcKind.UTIL)
        self._rr_internal = 0
        self._traces: dict[str, TraceRecord] = {}
        self._orphan_prefixes: list[str] = []  # forget_traces_later: dropped at the next trace's start
        self._trace: TraceScope | None = None
        self._recording: TraceRecord | None = None
        self._replay: Replay | None = None
        self._open_epochs: set = set()
        self._next_launch = 0
        self._internal_tasks: dict = {}
        self._infos: dict = {}
        self._closed = False
        self._issuing = False
        self.profiler: Profiler | None = None
        self._profile_path = profile_path or machine.profile_logfile
        self.policy = ThreadingPolicy(len(self._cpu))
        self.policy.apply()
        self.executor = EXECUTORS[executor](self.engine, machine, self.policy)
        self.engine.executor = self.executor
        if profile if profile is not None else machine.profile:
            self.start_profiling()
        log.debug("runtime started: %s, %s executor", machine.describe(), executor)

    @classmethod
    def from_args(cls, argv, executor: str = "threaded", mapper: Mapper | None = None) -> Runtime:
        """A runtime from Legion flags (`-ll:*` for the machine, `-lg:prof`, `-lg:prof_logfile`)."""
        settings, _ = parse_legion_args(argv)
        return cls(Machine(**settings), executor=executor, mapper=mapper)

    # -- launches -----------------------------------------------------------------------------
    def launch(self, task: Task, *args, tag=None) -> Future:
        """Run one task. Region arguments first (one per privilege), then plain values or Futures.

        Args:
            task: a Task.
            args: Region/Subregion per privilege, then any values (Futures are resolved first).
            tag: handed to the mapper as `task_info.tag` (DefaultMapper honours a Processor).

        Returns a Future for the body's return value.
        """
        nodes = self._issue(task, False, (), ((),), args, tag)
        self.stats.launches += 1
        return Future(nodes[0], self.engine)

    def index_launch(self, task: Task, domain, *args, tag=None) -> FutureMap:
        """Run one point task per color of `domain`.

        Args:
            task: a Task.
            domain: the launch domain, an int or a color shape such as `P.color_shape`.
            args: per privilege a Partition (projected: point c gets P[c]; a (D, 1, ...) partition
                projects onto a (D,) domain) or a Region/Subregion (passed whole to every point);
                then plain values, Futures, FutureMaps (projected by point) or `POINT`.
            tag: handed to the mapper as `task_info.tag`.

        Returns a FutureMap with one Future per point.
        """
        domain, points = domain_points(domain)
        if not points:
            raise LaunchError(f"index_launch of '{getattr(task, 'name', task)}' over an empty domain {domain}")
        nodes = self._issue(task, True, domain, points, args, tag)
        self.stats.index_launches += 1
        return FutureMap(nodes, self.engine, domain, points)

    def _issue(self, task, index, domain, points, args, tag):
        if self._closed:
            raise RuntimeSystemError("this Runtime has been shut down; create a new one to launch tasks")
        if self._issuing or getattr(_tls, "worker", None) is not None:  # in_worker(), inlined
            raise RuntimeSystemError(
                f"a task body tried to launch '{getattr(task, 'name', task)}' (or fill/read/write): only the "
                f"program's thread launches. Return a value (a Future) and launch from the program instead.")
        self._issuing = True
        try:
            lid = self._next_launch
            self._next_launch = lid + 1
            rp = self._replay
            if rp is not None:  # a replay: the launch is rebuilt from the record
                nodes = rp.launch(task, index, domain, points, args, tag, lid)
                if nodes is not None:
                    self.stats.replayed_points += len(nodes)
                    self._trace.nodes.extend(nodes)
                    return nodes
                self._replay = None
            return self._issue_now(task, index, domain, points, args, tag, lid)
        finally:
            self._issuing = False

    def _issue_now(self, task, index, domain, points, args, tag, lid):
        """Analyse and issue a launch (recording it when a trace records)."""
        scope = self._trace
        spec = self._prepare(task, index, domain, points, args, tag)
        rec = self._recording
        if rec is not None:
            rec.begin_launch(spec)
        nodes = self._launch_points(spec, lid)
        if scope is not None:
            scope.nodes.extend(nodes)
        return nodes

    def _clear_launch_caches(self) -> None:
        self._infos.clear()
        if isinstance(self.mapper, DefaultMapper):
            self.mapper._procs_cache.clear()

    def _prepare(self, task, index, domain, points, args, tag):
        if len(self._infos) > 4096:  # tags unique per launch would grow it without bound
            self._clear_launch_caches()
        return prepare(task, index, domain, points, args, tag, self.machine, self._infos)

    def _internal_proc(self):
        if self._util:
            return self._util[0]
        i = self._rr_internal
        self._rr_internal = i + 1
        return self._cpu[i % len(self._cpu)]

    def _internal(self, kind: str, priv: Privilege) -> Task:
        key = (kind, priv)
        t = self._internal_tasks.get(key)
        if t is None:
            body = {"fill": _fill_body, "write": _write_body, "read": _read_body}[kind]
            t = Task(body, [priv], name=kind, kinds=(ProcKind.CPU, ProcKind.UTIL))
            t._internal = True
            t._recover = kind != "read"
            self._internal_tasks[key] = t
        return t

    def _adopt(self, region: Region) -> None:
        prev = region._owner
        if prev is not None and not prev._closed:
            raise LaunchError(f"region '{region.name}' is in use by another Runtime that is still running; "
                              f"a region belongs to one Runtime at a time (shut the other down first).")
        old = region._states
        states = {f: FieldState(region, f) for f in region.field_dtypes}
        if old is not None:
            for f, st in states.items():
                o = old.get(f)
                if o is not None and o.home is not None:
                    if o.multi and not all(i.memory.kind is MemKind.SYSTEM for i in o.instances
                                           if i.valid):
                        log.warning("region %s: data last valid outside system memory in a shut-down "
                                    "runtime is not carried over", st.label)
                        continue
                    pool = self._physical.pools[self._sysmem.uid]
                    pool.charge(o.home.nbytes, st.label, "its home instance")
                    weakref.finalize(region, pool.release, o.home.nbytes)
                    st.home = o.home
        region._states = states
        region._fs0 = states.get(None)
        region._owner = self

    # -- data ---------------------------------------------------------------------------------
    def _target(self, target, field, who: str):
        if not isinstance(target, (Region, Subregion)):
            raise LaunchError(f"rtm.{who} expects a Region or Subregion, received {target!r}")
        root = target.root
        if field is not None:
            if root.field_names is None or field not in root.field_names:
                raise LaunchError(f"rtm.{who}({target.name}): field {field!r} is not one of the region's "
                                  f"fields {list(root.field_names or [])}")
            return (field,)
        return ()

    def fill(self, target, value, field: str | None = None) -> None:
        """Set every element of `target` (Region/Subregion; one field or all) to `value`, in order."""
        fields = self._target(target, field, "fill")
        self.launch(self._internal("fill", WD(*fields) if fields else WD), target, value)

    def write(self, target, array, field: str | None = None) -> None:
        """Copy a host array into `target` (in issue order; the array is copied now).

        Args:
            target: Region or Subregion.
            array: broadcastable to the target's shape; for a fielded region without `field`, a
                mapping field -> array.
            field: one field of a fielded region.
        """
        fields = self._target(target, field, "write")
        root = target.root
        if root.field_names is not None and not fields:
            data = {f: self._host_copy(target, array[f], root.field_dtypes[f], f"write field {f!r}")
                    for f in root.field_names}
        else:
            dtype = root.field_dtypes[fields[0] if fields else None]
            data = self._host_copy(target, array, dtype, "write")
        self.launch(self._internal("write", WD(*fields) if fields else WD), target, data)

    @staticmethod
    def _host_copy(target, array, dtype, who):
        arr = np.array(array, dtype=dtype, copy=True)
        try:
            shape = np.broadcast_shapes(arr.shape, target.shape)
        except ValueError:
            shape = None
        if shape != tuple(target.shape):
            raise LaunchError(f"rtm.{who}({target.name}): expected an array of shape {tuple(target.shape)} "
                              f"(or broadcastable to it), received shape {arr.shape}")
        return arr

    def read(self, target, field: str | None = None):
        """A host copy of `target` after every earlier writer (blocks). Fielded regions without
        `field` give a dict field -> array."""
        return self.read_many([target], field)[0]

    def read_many(self, targets, field: str | None = None) -> list:
        """Host copies of several regions (or subregions), as `read` gives each: every read is issued
        before the host waits for the first, so one wait covers them all (a wait may hand work to a
        parked worker and back, tens of microseconds on a VM and milliseconds on a loaded machine: an
        engine reading a model's weights one by one paid it per weight)."""
        checked = [(target, self._target(target, field, "read")) for target in targets]  # before any launch
        issued = [(fields, self.launch(self._internal("read", RO(*fields) if fields else RO), target))
                  for target, fields in checked]
        out = []
        try:
            for fields, fut in issued:
                value = fut.get()
                # the task record stays the region's last reader until the next write: without this it would
                # keep the host copy alive (after fit, a second copy of every weight and optimizer slot read)
                fut._node.value = None
                out.append(value[fields[0]] if fields and isinstance(value, dict) else value)
        except TaskError:
            # a failed read raises, and the reads issued after it run all the same: none keeps its copy
            for _fields, fut in issued:
                fut.wait()
                fut._node.value = None
            raise
        return out

    # -- synchronisation ----------------------------------------------------------------------
    def fence(self) -> None:
        """Wait for everything issued so far; raise the first failure nobody has been told about."""
        self.engine.fence()
        node = self.engine.take_failure()
        if node is not None:
            raise node.error.clone() from node.error.__cause__

    def shutdown(self) -> None:
        """Wait for all work, stop and join every worker, restore thread limits, write the profile."""
        if self._closed:
            return
        try:
            if self._trace is None:
                self._close_epochs(self._open_epochs)  # fold what reducers left in private buffers
            self.engine.fence()
        finally:
            self._closed = True
            self.executor.shutdown()
            self.policy.restore()
            for node in self.engine.unreported_failures():
                log.error("unreported task failure at shutdown: %s", node.error)
            if self.profiler is not None and self._profile_path:
                path = self.write_profile(self._profile_path)
                log.info("runtime profile written to %s", path)

    def cancel(self, timeout: float = 2.0) -> bool:
        """Stop at once (Ctrl-C): tasks not yet started are dropped, workers stop after the task they
        are running, waiting at most `timeout` seconds; the runtime is shut down. Returns whether
        everything stopped in time (a task body still running is left to the process exit)."""
        if self._closed:
            return True
        deadline = time.monotonic() + timeout
        self.engine.cancel()
        drained = self.engine.fence(timeout)
        self._closed = True
        stopped = self.executor.shutdown(max(0.0, deadline - time.monotonic()))
        self.policy.restore()
        return drained and stopped

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.fence()
            finally:
                self.shutdown()
        else:
            self.shutdown()
        return False

    # -- tracing ------------------------------------------------------------------------------
    def trace(self, name: str, *, wait: bool = True, strict: bool = False) -> TraceScope:
        """A context manager recording (first run) or replaying (later runs) a sequence of launches.

        Args:
            name: identifies the trace; each name has its own record.
            wait: at the end, wait for the trace's tasks and raise the first failure among them
                (False: return at once; failures surface at the next wait or fence).
            strict: raise TraceError when a run differs from the record (default: log a warning,
                analyse the rest normally and record again next time).
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"rtm.trace expects a non-empty str name, received {name!r}")
        return TraceScope(self, name, wait, strict)

    def forget_trace(self, name: str) -> bool:
        """Drop the record of trace `name`, so the regions only it refers to can be freed (a program
        that will not run again), and the reduction buffers replays keep for reuse (the traces that
        remain allocate theirs again on their next replay). Returns whether there was one."""
        if self._trace is not None and self._trace.name == name:
            raise TraceError(f"rtm.forget_trace('{name}') inside that trace; call it after the trace ends.")
        found = self._traces.pop(name, None) is not None
        if found:
            self._physical.drop_spares()
        return found

    def forget_traces_later(self, prefix: str) -> None:
        """Drop the records of every trace whose name starts with `prefix` when the next trace starts (or
        at `forget_orphan_traces`), and the launch caches that key on tasks: for a finalizer whose owner
        is gone (a collected model's engine). A record holds the regions, tasks and arguments of its
        launches, and a runtime lives as long as the process, so records nobody will replay would pile
        up, each model's making the next ones slower; the collector may run the finalizer
        on any thread, in the middle of a trace, so it only leaves the prefix here (a list append is
        atomic)."""
        self._orphan_prefixes.append(prefix)

    def forget_orphan_traces(self) -> int:
        """Drop the records `forget_traces_later` asked for (outside a trace); returns how many."""
        if not self._orphan_prefixes or self._trace is not None:
            return 0
        prefixes = tuple(self._orphan_prefixes)
        del self._orphan_prefixes[:len(prefixes)]
        names = [name for name in self._traces if name.startswith(prefixes)]
        for name in names:
            del self._traces[name]
        self._clear_launch_caches()  # its keys hold the gone owners' tasks (and what their bodies hold)
        if names:
            self._physical.drop_spares()
        return len(names)

    def _begin_trace(self, scope: TraceScope) -> None:
        if self._closed:
            raise RuntimeSystemError("this Runtime has been shut down")
        if self._orphan_prefixes:
            self.forget_orphan_traces()
        if self._trace is not None:
            raise TraceError(f"trace '{scope.name}' started inside trace '{self._trace.name}'; traces do not "
                             f"nest. Close the outer trace first.")
        self._close_epochs(self._open_epochs)
        self._trace = scope
        rec = self._traces.get(scope.name)
        if rec is not None and rec.valid and not rec.still_valid(self._physical.multi_gen):
            rec = None  # a field it binds as a home view has moved to other memories: record again
        if rec is not None and rec.valid:
            self._replay = Replay(self, rec, scope.strict)
            scope.replayed = True
        else:
            self._recording = TraceRecord(scope.name)
            self.stats.recorded_traces += 1

    def _end_trace(self, scope: TraceScope, body_failed: bool) -> None:
        try:
            rp, rec = self._replay, self._recording
            if rp is not None:
                if body_failed:
                    rp._seal("aborted run")
                else:
                    scope.exit = rp.finish()
            elif rec is not None:
                self._close_epochs([fs for fs in rec.touched if fs.epoch is not None])
                if not body_failed:
                    rec.seal(self.executor.putter)
                    self._traces[scope.name] = rec
        finally:
            self._trace = self._recording = self._replay = None
        if scope.wait and not body_failed:
            self._raise_first_failure(scope.nodes, scope.exit)

    def _raise_first_failure(self, nodes, gate=None) -> None:
        """Wait for `nodes` (for `gate`, when given: a barrier after all of them), then raise the first
        failure among them."""
        engine = self.engine
        if gate is None:
            gate = BarrierNode("trace end")
            engine.submit(gate, nodes)
        engine.wait(gate)
        for n in nodes:
            if n.error is not None:
                engine.mark_reported(n)
                raise n.error.clone() from n.error.__cause__

    # -- profiling ----------------------------------------------------------------------------
    def start_profiling(self) -> None:
        """Record every task from now on (what -lg:prof does from the start)."""
        if self.profiler is None:
            self.profiler = Profiler()
        self.engine.profiler = self.profiler

    def stop_profiling(self) -> None:
        """Stop recording (what was recorded is kept)."""
        self.engine.profiler = None

    def profile_events(self) -> list[dict]:
        """The Chrome trace events recorded so far (waits for running work)."""
        if self.profiler is None:
            return []
        self.engine.fence()
        return self.profiler.events(self.machine)

    def write_profile(self, path: str | None = None) -> str:
        """Write the recorded timeline as Chrome trace / Perfetto JSON; returns the path."""
        if self.profiler is None:
            raise RuntimeSystemError("no profile was recorded: pass -lg:prof, Runtime(profile=True), or call "
                                     "rtm.start_profiling() first")
        self.engine.fence()
        return self.profiler.write(path or self._profile_path or "runtime_profile.json", self.machine)

    # -- introspection ------------------------------------------------------------------------
    def last_writer(self, region) -> Processor | None:
        """The processor of the latest launch that wrote (any field of) `region`'s root, if any."""
        root = region.root
        if root._owner is not self:
            return None
        for fs in root._states.values():
            if fs.last_proc is not None:
                return fs.last_proc
        return None

    def allocate(self, kind: MemKind, shape, dtype, label: str, shared: bool = False):
        """(array, release): a buffer of `shape` in this machine's first memory of `kind`, charged to that
        memory's capacity (-ll:zsize for ZERO_COPY) until `release()` is called or the array is dropped.
        Zero-copy buffers are mapped host memory on a GPU machine. The caller owns the data: no task
        sees it through a region. `shared` asks for a zero-copy buffer that processes forked later also
        write (`runtime.gpu.is_process_shared` tells whether it was granted: not on a GPU machine).

        Raises:
            OutOfMemoryError: naming `label`, the memory, the bytes and the flag to raise.
        """
        mem = self.machine.memories(kind)[0]
        pool = self._physical.pools[mem.uid]
        shape = tuple(int(d) for d in shape)
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        pool.charge(nbytes, label, f"a {kind.value} buffer {shape}", self._physical._evict)
        if kind is MemKind.ZERO_COPY:
            array = _gpu.zero_copy_array(shape, dtype, self._physical.has_gpus, shared)
        elif kind is MemKind.SYSTEM:
            array = np.zeros(shape, dtype)
        else:
            array = _gpu.device_array(mem.device, shape, dtype)
        return array, weakref.finalize(array, pool.release, nbytes)

    def memory_usage(self) -> dict[str, tuple[int, int]]:
        """memory name -> (bytes in use, capacity)."""
        return {p.memory.name: (p.used, p.memory.capacity) for p in self._physical.pools.values()}

    @property
    def executor_name(self) -> str:
        return self.executor.name

    def __repr__(self) -> str:
        return f"Runtime({self.machine.describe()}, executor={self.executor.name!r})"


__all__ = ["Runtime", "RuntimeStats", "TaskError"]
