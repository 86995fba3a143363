"""The operation graph: nodes with dependence counters, and the engine that runs them in order.

Policy: a node becomes ready when every predecessor has completed; ready task nodes go to their
processor's worker, the runtime's small nodes (reduction folds, trace barriers) run inline on whichever
thread made them ready. State: each node's pending count and successor list, guarded by one engine lock
(held for a few list operations per node). Invariants: a node runs at most once and only after all its
predecessors; a node whose predecessor failed (and wrote data it reads, or produced a future it uses)
does not run but completes with a TaskError naming the root failure, so waiting never hangs.
"""

from __future__ import annotations

import logging
import threading
import time

from runtime.errors import RuntimeSystemError, TaskError
from runtime.streams import merge as merge_marks

log = logging.getLogger("runtime")

_tls = threading.local()


def in_worker() -> bool:
    """True on a runtime worker thread (task bodies must not block on futures there)."""
    return getattr(_tls, "worker", None) is not None


class Node:
    """Base of every graph node. `execute()` does the work; the engine does the bookkeeping."""

    __slots__ = ("npending", "succs", "done", "error", "value", "waiters", "poison", "tpos", "writes",
                 "recover", "gpu_event", "gpu_waits")
    inline = True

    def __init__(self):
        self.npending = 0
        self.succs = []
        self.done = False
        self.error = None
        self.value = None
        self.waiters = None
        self.poison = None
        self.tpos = -1
        self.writes = True
        self.recover = False
        self.gpu_event = None  # recorded on its stream when a GPU task's body has been enqueued
        self.gpu_waits = None  # events of GPU predecessors this node must wait for

    def execute(self):
        return None

    def events_out(self):
        """The events a successor must wait for: this node's own, else those it waited for (a barrier or
        a fold passes its GPU predecessors' on)."""
        return [self.gpu_event] if self.gpu_event is not None else self.gpu_waits

    def label(self) -> tuple[str, tuple]:
        return (type(self).__name__, ())


class TaskNode(Node):
    """One point task: copies in, identity-fills reduction buffers, runs the body on its processor."""

    __slots__ = ("task", "point", "proc", "body", "args", "futs", "copies", "redinit", "device", "launch")
    inline = False

    def __init__(self, task, point, proc, body, launch):
        # Node.__init__ inlined: this runs once per point task on the hot path
        self.npending = 0
        self.succs = []
        self.done = False
        self.error = None
        self.value = None
        self.waiters = None
        self.poison = None
        self.tpos = -1
        self.writes = True
        self.recover = False
        self.gpu_event = None
        self.gpu_waits = None
        self.task = task
        self.point = point
        self.proc = proc
        self.body = body
        self.launch = launch
        self.args = None
        self.futs = None
        self.copies = None
        self.redinit = None
        self.device = proc.device

    def execute(self):
        if self.device is None:
            if self.gpu_waits:
                from runtime import streams

                streams.host_wait(self.gpu_waits)  # a CPU task reads what GPU predecessors wrote
            self._prepare()
        args = self.args
        if self.futs is not None:
            args = list(args)
            for pos, src in self.futs:
                args[pos] = src.value
        self.args = None
        if self.device is None:
            return self.body(*args)
        on_stream, gpu, streams = _gpu_modules()
        with gpu.on_device(self.device):
            stream = gpu.processor_stream(self.proc)
            if self.gpu_waits:
                streams.device_wait(self.gpu_waits, stream)  # on the device: the host does not block
            with on_stream(stream):
                if self.copies is not None or self.redinit is not None:
                    with gpu.task_copies(self.device, stream):  # after the waits, before the kernels
                        self._prepare()
                value = self.body(*args)
            self.gpu_event = streams.record(stream)
        return value

    def _prepare(self):
        """The copies into this task's instances, then the initial values of its reduction buffers (both
        dropped from the node first: a copy holds its instance, which a finished node kept by its worker
        must not keep charged to its memory)."""
        copies, redinit = self.copies, self.redinit
        self.copies = self.redinit = None
        if copies is not None:
            for c in copies:
                c()
        if redinit is not None:
            for init in redinit:
                init()

    def label(self):
        return (self.task.name, self.point)


class InlineTaskNode(TaskNode):
    """A point of an `inline` task on a CPU processor: it runs on the thread that makes it ready (the
    launching thread, or the one completing its last predecessor), never queued (see `runtime.task`)."""

    __slots__ = ()
    inline = True


def task_node(task, point, proc, body, launch) -> TaskNode:
    """The node of one point of `task` on `proc` (inline where the task is and the processor a CPU)."""
    if task.inline and proc.device is None:
        return InlineTaskNode(task, point, proc, body, launch)
    return TaskNode(task, point, proc, body, launch)


class FoldNode(Node):
    """Folds a private reduction buffer into its epoch's target, under the epoch's lock."""

    __slots__ = ("fn", "lock", "owner")

    def __init__(self, fn, lock, owner: TaskNode):
        Node.__init__(self)
        self.fn = fn
        self.lock = lock
        self.owner = owner

    def execute(self):
        if self.gpu_waits:
            from runtime import streams

            streams.host_wait(self.gpu_waits)
        with self.lock:
            self.fn()
        self.fn = None

    def label(self):
        name, point = self.owner.label()
        return (f"{name} (reduction fold)", point)


class BarrierNode(Node):
    """Completes when its predecessors do (a trace's entry and exit)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        Node.__init__(self)
        self.name = name

    def label(self):
        return (self.name, ())


_GPU_MODULES = None


def _gpu_modules():
    """(on_stream, runtime.gpu, runtime.streams), imported at the first GPU task (a CPU-only run never
    imports the CUDA side) and kept: a GPU task's host time is what issue 11 counts."""
    global _GPU_MODULES
    if _GPU_MODULES is None:
        from kernels.gpu.launch import on_stream
        from runtime import gpu, streams

        _GPU_MODULES = (on_stream, gpu, streams)
    return _GPU_MODULES


def _failure_kind(node: Node) -> tuple:
    err = node.error
    return node.label()[0], type(err.__cause__ if err is not None and err.__cause__ is not None else err)


def root_failure(node: Node) -> Node:
    while node.poison is not None:
        node = node.poison
    return node


class Engine:
    """Submits nodes with their predecessors, runs ready ones, completes them, reports failures."""

    def __init__(self):
        self.lock = threading.Lock()
        self.outstanding = 0
        self.executor = None
        self.profiler = None
        self.reported_kinds: set = set()  # (task, exception type) of failures reported
        self.failures: list[Node] = []   # root failures nobody has been told about yet
        self._idle_waiters: list = []
        self.cancelled = False           # set by Ctrl-C / `cancel()`: nodes complete without running

    # -- submission ---------------------------------------------------------------------------
    def submit(self, node: Node, preds, fpreds=None) -> None:
        """Add `node` after `preds` (data dependences) and `fpreds` (futures it consumes)."""
        n = 0
        with self.lock:
            self.outstanding += 1
            for p in preds:
                if p is node:
                    continue
                if p.done:
                    if p.error is not None or p.gpu_event is not None or p.gpu_waits:
                        _after_done(node, p)
                else:
                    p.succs.append(node)
                    n += 1
            if fpreds is not None:
                n += _after_futures(node, fpreds)
            node.npending = n
        if n == 0:
            self.dispatch(node)

    def submit_indexed(self, node: Node, first: Node, nodes: list, idx, put, fpreds=None, prev=None,
                       cross=()) -> None:
        """`submit(node, [first] + [nodes[j] for j in idx] + [prev[j] for j in cross], fpreds)` without
        building the list, then `put(node)` when it is ready at once (a trace replay: `idx` are recorded
        positions, `put` the pre-resolved queue of the node's processor, `prev` the previous replay's
        nodes and `cross` the positions among them it waits for)."""
        n = 0
        with self.lock:
            self.outstanding += 1
            if first.done:
                if first.error is not None or first.gpu_event is not None or first.gpu_waits:
                    _after_done(node, first)
            else:
                first.succs.append(node)
                n = 1
            for among, positions in ((nodes, idx), (prev, cross)):
                for j in positions:
                    p = among[j]
                    if p.done:
                        if p.error is not None or p.gpu_event is not None or p.gpu_waits:
                            _after_done(node, p)
                    else:
                        p.succs.append(node)
                        n += 1
            if fpreds is not None:
                n += _after_futures(node, fpreds)
            node.npending = n
        if n == 0:
            if node.poison is None and not self.cancelled:
                put(node)
            else:
                self.run(node)

    def abort(self, node: Node, exc: BaseException) -> None:
        """Complete a node whose launch raised while it was being built (e.g. out of memory), so that
        whatever the analysis already ordered after it fails instead of waiting forever."""
        with self.lock:
            self.outstanding += 1
        for r in self.complete(node, None, self._task_error(node, exc)):
            self.dispatch(r)
        self.mark_reported(node)  # the caller of the launch gets `exc` itself

    def dispatch(self, node: Node) -> None:
        if node.inline or node.poison is not None or self.cancelled:
            self.run(node)
        else:
            self.executor.enqueue(node)

    # -- running ------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop running work: every node not yet started completes at once with a 'cancelled' error
        (so waiters wake and workers drain their queues); nodes already running finish."""
        self.cancelled = True

    def run(self, node: Node) -> None:
        """Run `node` (and any inline nodes it makes ready) on the calling thread.

        A KeyboardInterrupt raised in a body (Ctrl-C while the program's thread runs it: the sequential
        executor) cancels the engine, completes what it made ready, and is raised again at the end."""
        stack = None
        interrupt = None
        while True:
            if self.cancelled:
                value, err = None, self._cancelled_error(node)
            elif node.poison is not None:
                value, err = None, self._dependent_error(node)
            else:
                prof = self.profiler
                t0 = time.perf_counter_ns() if prof is not None else 0
                try:
                    value, err = node.execute(), None
                except KeyboardInterrupt as e:
                    self.cancelled = True
                    value, err, interrupt = None, self._cancelled_error(node), e
                except BaseException as e:  # noqa: BLE001 - any failure must reach the waiter, not kill a worker
                    value, err = None, self._task_error(node, e)
                if prof is not None:
                    prof.record(node, t0, time.perf_counter_ns())
            ready = self.complete(node, value, err)
            if ready:
                cancelled = self.cancelled  # cancelled nodes complete here: workers may have stopped
                for r in ready:
                    if r.inline or r.poison is not None or cancelled:
                        if stack is None:
                            stack = [r]
                        else:
                            stack.append(r)
                    else:
                        self.executor.enqueue(r)
            if not stack:
                if interrupt is not None:
                    raise interrupt
                return
            node = stack.pop()

    def complete(self, node: Node, value, err) -> list[Node]:
        idle = None
        with self.lock:
            node.value = value
            node.error = err
            node.done = True
            succs = node.succs
            node.succs = None
            ready = []
            if err is not None:
                if node.poison is None and not self.cancelled:
                    self.failures.append(node)
                for s in succs:
                    if s.poison is None and not s.recover and (node.writes or _consumes(s, node)):
                        s.poison = node
            ev = node.gpu_event
            events = [ev] if ev is not None else node.gpu_waits
            if events:
                for s in succs:
                    s.gpu_waits = merge_marks(s.gpu_waits, events)
            for s in succs:
                s.npending -= 1
                if s.npending == 0:
                    ready.append(s)
            self.outstanding -= 1
            if self.outstanding == 0 and self._idle_waiters:
                idle, self._idle_waiters = self._idle_waiters, []
            waiters = node.waiters
        if waiters is not None:
            for w in waiters:
                w.release()
        if idle is not None:
            for w in idle:
                w.release()
        return ready

    # -- waiting ------------------------------------------------------------------------------
    def wait(self, node: Node) -> None:
        """Block until `node` completes (and its GPU work has finished: the host reads its results). The
        threaded executor's `help` first runs ready points of idle processors on this thread."""
        if node.done:
            self._read_barrier(node)
            return
        if in_worker():
            name, point = node.label()
            raise RuntimeSystemError(
                f"A task body waited on the future of task '{name}' point {point}, which has not "
                f"completed: that can deadlock a worker. Pass the Future as a launch argument instead "
                f"(the runtime resolves it before the body runs).")
        with self.lock:
            done = node.done
            if not done:
                gate = threading.Lock()
                gate.acquire()
                if node.waiters is None:
                    node.waiters = [gate]
                else:
                    node.waiters.append(gate)
        if not done:
            self.executor.help(gate)  # run ready points of idle processors first (workers.py)
            gate.acquire()
        self._read_barrier(node)

    @staticmethod
    def _read_barrier(node: Node) -> None:
        # the host reads what `node` produced: its GPU work must have finished
        events = node.events_out()
        if events:
            from runtime import streams

            streams.host_wait(events)

    def fence(self, timeout: float | None = None) -> bool:
        """Block until every submitted node has completed (at most `timeout` seconds when given);
        returns whether they have."""
        with self.lock:
            if self.outstanding == 0:
                gate = None
            else:
                gate = threading.Lock()
                gate.acquire()
                self._idle_waiters.append(gate)
        if gate is not None:
            if timeout is None:
                self.executor.help(gate)
                gate.acquire()
            elif not gate.acquire(timeout=max(timeout, 0.0)):
                return False
        _synchronize_gpu_streams()  # completed GPU tasks may still be running on their streams
        return True

    def take_failure(self) -> Node | None:
        """The oldest root failure nobody was told about (and forget it)."""
        with self.lock:
            return self.failures.pop(0) if self.failures else None

    def mark_reported(self, node: Node) -> None:
        root = root_failure(node)
        with self.lock:
            if root in self.failures:
                self.failures.remove(root)
            self.reported_kinds.add(_failure_kind(root))

    def unreported_failures(self) -> list[Node]:
        """Root failures nobody was told about, less those that repeat a reported one: the same task
        failing with the same exception type at another point (the other shards of one launch)."""
        with self.lock:
            return [n for n in self.failures if _failure_kind(n) not in self.reported_kinds]

    # -- errors -------------------------------------------------------------------------------
    @staticmethod
    def _task_error(node: Node, exc: BaseException) -> TaskError:
        name, point = node.label()
        proc = getattr(node, "proc", None)
        where = f" on {proc.name}" if proc is not None else ""
        err = TaskError(f"task '{name}' point {point}{where} failed: {type(exc).__name__}: {exc}",
                        task=name, point=point, processor=proc.name if proc is not None else None,
                        failed_task=name, failed_point=point)
        err.__cause__ = exc
        return err

    @staticmethod
    def _cancelled_error(node: Node) -> TaskError:
        name, point = node.label()
        return TaskError(f"task '{name}' point {point} was cancelled (the run was interrupted)", task=name,
                         point=point, processor=None, failed_task=name, failed_point=point)

    @staticmethod
    def _dependent_error(node: Node) -> TaskError:
        root = root_failure(node)
        name, point = node.label()
        rname, rpoint = root.label()
        cause = root.error.__cause__ if isinstance(root.error, TaskError) else root.error
        err = TaskError(f"task '{name}' point {point} was not run because task '{rname}' point {rpoint}, "
                        f"which it depends on, failed: {type(cause).__name__}: {cause}",
                        task=name, point=point, processor=None, failed_task=rname, failed_point=rpoint)
        err.__cause__ = cause
        return err


def resolve_futures(futs, k: int, node: TaskNode) -> list:
    """Point `k`'s future arguments: set `node.futs` and return the nodes it must wait for."""
    fpreds = []
    out = []
    for pos, src, is_map in futs:
        n = src._nodes[k] if is_map else src._node
        fpreds.append(n)
        out.append((pos, n))
    node.futs = out
    return fpreds


def _consumes(succ: Node, pred: Node) -> bool:
    futs = getattr(succ, "futs", None)
    return futs is not None and any(src is pred for _, src in futs)


def _after_futures(node: Node, fpreds) -> int:
    # under the engine's lock: `node` consumes the futures of `fpreds`; a failed one poisons it. Returns
    # how many are still pending
    n = 0
    for p in fpreds:
        if p.done:
            if p.error is not None and node.poison is None:
                node.poison = p
        else:
            p.succs.append(node)
            n += 1
    return n


def _after_done(node: Node, pred: Node) -> None:
    # `pred` completed before `node` was submitted: a failed writer poisons it, GPU work is waited for
    if pred.error is not None and pred.writes and node.poison is None and not node.recover:
        node.poison = pred
    _inherit_events(node, pred)


def _inherit_events(node: Node, pred: Node) -> None:
    # a predecessor that completed before `node` was submitted may still be running on its stream
    events = pred.events_out()
    if events:
        node.gpu_waits = merge_marks(node.gpu_waits, events)


def _synchronize_gpu_streams() -> None:
    import sys

    gpu = sys.modules.get("runtime.gpu")
    if gpu is not None:
        gpu.synchronize_streams()
