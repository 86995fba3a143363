"""Executors: where ready task nodes run. One worker thread per processor, or everything inline.

`ThreadedExecutor`: a thread per processor, each draining its own queue; bodies that release the GIL
(NumPy BLAS, Numba `nogil`, CUDA) really run in parallel. A point of a task with negative priority
(an optimizer update) waits while other ready points are queued on its processor, so work on the
critical path goes first (Legion's mappers set task priorities for the same reason); waiting ones run
newest first: updates are issued in backward order, so the first layer's, which the next step (started
as soon as its inputs are ready, see tracing.py) needs first, goes first. `SequentialExecutor`: every ready node runs
on the issuing thread as soon as it is ready, which is issue order, for debugging and deterministic
tests. Both honour the same engine, so every test can run against both.

Threading policy (`ThreadingPolicy`): with P CPU processors on C cores, each worker may use
max(1, C // P) threads inside a kernel, so BLAS and Numba never oversubscribe the cores (the engine
narrows BLAS further to the cores other processes leave free, `refresh_free`): OpenBLAS/MKL
and OpenMP pools are capped with threadpoolctl, Numba's pool with `numba.set_num_threads` on each
worker (or NUMBA_NUM_THREADS if Numba is not imported yet), and OpenMP threads are asked to sleep
rather than spin while idle (OMP_WAIT_POLICY=PASSIVE, unless the user set it). The limits are
restored at shutdown.

Every processor's thread computes with denormal numbers flushed to zero (`runtime.fpenv`), as
TensorFlow's and PyTorch's CPU pools do: denormals are 20-100x slower on x86 and training makes them.

A thread that waits (`Engine.wait`, `Engine.fence`) on the threaded executor first runs ready points of
CPU and utility processors whose workers are idle (`help`), as the sequential executor would, and blocks
only when none is left: the hand-off to a parked worker and back costs a thread wake-up each way (tens of
us on a VM, more than the small tasks a waited trace or one reduction runs). Each processor still runs
one point at a time (its lock is held by whichever thread runs it), under the worker's settings (denormals
flushed, restored when the wait ends; Numba's thread count, kept until the runtime shuts down, see
`_enter_help`), and a point the host took is one its
worker would have run next. Machines with GPU processors do not help: a task there may need the worker's
device binding. FF_HOST_HELPS=0 turns it off (for comparisons: benchmarks/runtime_overhead.py --no-help).
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import threading
import time
from collections import deque
from queue import Empty, SimpleQueue

from runtime import comm, fpenv, gpu, graph
from runtime.cpuload import CpuLoad
from runtime.machine import ProcKind

log = logging.getLogger("runtime")

_STOP = object()  # a worker's queue sentinel: stop after draining
_WAKE = object()  # a worker's queue token: look at the deferred points (a waiting thread left some)


def _deferred_kind(node) -> bool:
    """Whether `node` waits until its processor's queue is empty (negative priority: an update)."""
    task = getattr(node, "task", None)
    return task is not None and task.priority < 0


def _load_numba_blas() -> None:
    """Load the BLAS that Numba kernels call (np.dot inside @njit goes through SciPy's cython_blas, a
    second OpenBLAS beside NumPy's) before the limits are set: threadpoolctl limits the libraries loaded
    at that moment, and Numba loads SciPy's on its first compilation, which would otherwise leave that
    BLAS at one thread per core after the limits (measured: 2 threads under a limit of 1)."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401 - loaded for its BLAS library, as Numba loads it
    except ImportError:  # no SciPy: Numba's kernels call no BLAS of their own
        pass


_numba_on_thread = threading.local()  # a helping thread's Numba thread count: .limit set, .before its own


def _restore_numba_on_thread() -> None:
    """Give the calling thread back the Numba thread count it had before it first helped, unless its own
    code set another one since (that one stays)."""
    before = getattr(_numba_on_thread, "before", None)
    if before is None:
        return
    limit = _numba_on_thread.limit
    _numba_on_thread.before = _numba_on_thread.limit = None
    nb = sys.modules.get("numba")
    try:
        if nb is not None and nb.get_num_threads() == limit != before:
            nb.set_num_threads(before)
    except (AttributeError, ValueError, RuntimeError) as e:
        log.debug("could not restore Numba's thread count: %s", e)


class ThreadingPolicy:
    """Caps the threads each kernel may use so the workers share the cores without oversubscribing."""

    def __init__(self, n_cpu_procs: int, cores: int | None = None):
        self.cores = cores or comm.host_cores()  # shared out among MPI ranks on this host
        self.threads_per_worker = max(1, self.cores // max(1, n_cpu_procs))
        self._limiter = None
        self.load = CpuLoad(self.cores)
        self.free = self.cores  # cores other processes leave free, at the last `refresh_free`

    def refresh_free(self) -> int:
        """Read how many cores other processes leave free (see runtime/cpuload.py) and keep it."""
        self.free = self.load.free_cores()
        return self.free

    def apply(self) -> None:
        """Process-wide limits, set when a runtime starts."""
        k = self.threads_per_worker
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        os.environ.setdefault("KMP_BLOCKTIME", "0")
        if "numba" not in sys.modules:
            os.environ.setdefault("NUMBA_NUM_THREADS", str(k))
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # optional: without it BLAS keeps its own default
            log.debug("threadpoolctl is not installed; BLAS thread count left as is")
            return
        _load_numba_blas()
        self._limiter = threadpool_limits(limits=k)
        log.debug("threading policy: %d core(s), %d thread(s) per kernel", self.cores, k)

    def apply_in_worker(self) -> None:
        """Per-thread limits, set on each CPU worker as it starts."""
        nb = sys.modules.get("numba")
        if nb is None:
            return
        try:
            limit = min(self.threads_per_worker, nb.config.NUMBA_NUM_THREADS)
            nb.set_num_threads(limit)
        except (AttributeError, ValueError, RuntimeError) as e:
            log.debug("could not set Numba's thread count on a worker: %s", e)

    def restore(self) -> None:
        if self._limiter is not None:
            self._limiter.restore_original_limits()
            self._limiter = None


class ThreadedExecutor:
    """One worker thread per processor."""

    name = "threaded"

    def __init__(self, engine, machine, policy: ThreadingPolicy):
        self.engine = engine
        self.policy = policy
        procs = machine.processors()
        self._queues = [SimpleQueue() for _ in procs]
        self._put = [q.put for q in self._queues]
        self._locks = [threading.Lock() for _ in procs]  # held while a point of the processor runs
        self._deferred = [deque() for _ in procs]  # its ready points of negative priority (under its lock)
        self._busy = [False] * len(procs)  # its worker holds a point it took (the host leaves it alone)
        # the processors whose ready points a waiting thread may run (none where GPUs are: see above)
        gpus = any(p.kind is ProcKind.GPU for p in procs)
        off = gpus or os.environ.get("FF_HOST_HELPS", "1").strip().lower() in ("0", "false", "off", "no")
        self._helped = [] if off else [p.uid for p in procs if p.kind in (ProcKind.CPU, ProcKind.UTIL)]
        self._threads = []
        self._started = threading.Barrier(len(procs) + 1)
        for p, q in zip(procs, self._queues, strict=True):
            t = threading.Thread(target=self._loop, args=(p, q), name=f"runtime-{p.name}", daemon=True)
            self._threads.append(t)
            t.start()
        self._started.wait()

    def enqueue(self, node) -> None:
        self._put[node.proc.uid](node)

    def putter(self, proc):
        """The callable that enqueues a ready node on `proc` (trace replays resolve it once): it must do
        exactly what `enqueue` does for a node of `proc`."""
        return self._put[proc.uid]

    def _loop(self, proc, q) -> None:
        graph._tls.worker = proc
        try:
            fpenv.flush_denormals()  # every processor's thread, as TensorFlow's pools (see runtime.fpenv)
            if proc.kind is ProcKind.CPU:
                self.policy.apply_in_worker()
            elif proc.kind is ProcKind.GPU:
                gpu.select_device(proc.device)
        except Exception as e:  # noqa: BLE001 - setup problems must not stop the worker from serving
            log.warning("worker %s setup: %s: %s", proc.name, type(e).__name__, e)
        finally:
            self._started.wait()
        run = self.engine.run
        get, get_nowait = q.get, q.get_nowait
        uid = proc.uid
        lock = self._locks[uid]
        busy = self._busy
        deferred: deque = self._deferred[uid]  # run when the queue is empty (see the module docstring)
        while True:
            if deferred:
                try:
                    node = get_nowait()
                except Empty:
                    with lock:
                        if deferred:
                            self._run(run, proc, deferred.pop())  # newest first
                    continue
            else:
                node = get()
            if node is _WAKE:
                continue
            if node is _STOP:
                with lock:
                    while deferred:
                        self._run(run, proc, deferred.popleft())
                return
            busy[uid] = True
            with lock:
                if _deferred_kind(node):
                    deferred.append(node)
                else:
                    self._run(run, proc, node)
            busy[uid] = False
            node = None  # not kept while waiting: its task's body holds its model (optimizer, ops, regions)

    @staticmethod
    def _run(run, proc, node) -> None:
        try:
            run(node)
        except BaseException:  # noqa: BLE001 - an engine bug must be visible, and the worker must live
            log.exception("runtime worker %s: internal error while running %r", proc.name, node)

    # -- a waiting thread runs ready points ------------------------------------------------------
    def help(self, gate) -> None:
        """Run ready points of idle CPU and utility processors on the calling thread until `gate` (a
        held lock that the awaited completion releases) opens or none is left; then the caller blocks
        on the gate as before.

        Bodies run as on a worker: the denormal flags of a worker (restored after) and its Numba thread
        count (kept, see `_enter_help`), in a context of their own (NumPy's error state, any context variable of the caller's,
        is not theirs), `in_worker()` true. A KeyboardInterrupt in such a body fails that point and
        what depends on it as cancelled and is raised; the rest of the work goes on, as when Ctrl-C
        lands in the blocking wait (the command line's hook then cancels everything). A point taken
        but not yet started when the interrupt arrives goes back to its worker."""
        helped = self._helped
        if not helped or graph.in_worker():
            return
        saved = context = taken = None
        engine = self.engine
        was_cancelled = engine.cancelled
        try:
            while gate.locked():
                for uid in helped:
                    if self._busy[uid] or (self._queues[uid].empty() and not self._deferred[uid]):
                        continue
                    lock = self._locks[uid]
                    if not lock.acquire(False):
                        continue
                    try:
                        if saved is None:
                            saved = self._enter_help()
                            context = contextvars.Context()
                        taken = self._take(uid)
                        if taken is not None:
                            context.run(self._help_run, taken)
                            taken = None
                            break
                    finally:
                        lock.release()
                else:
                    return  # nothing ready on an idle processor
        except KeyboardInterrupt:
            if taken is not None and not taken.done and getattr(taken, "args", None) is not None:
                self._put[taken.proc.uid](taken)  # never started (execute() drops its args first)
            if not was_cancelled:
                engine.cancelled = False  # set by Engine.run for the interrupted body: the rest goes on
            raise
        finally:
            if saved is not None:
                self._leave_help(saved)
            for uid in helped:  # points this thread deferred: their parked worker must see them
                if self._deferred[uid]:
                    self._put[uid](_WAKE)

    def _take(self, uid: int):
        """The point the worker of processor `uid` would run next (its lock held), or None."""
        q, deferred = self._queues[uid], self._deferred[uid]
        while True:
            try:
                node = q.get_nowait()
            except Empty:
                return deferred.pop() if deferred else None
            if node is _WAKE:
                continue
            if node is _STOP:  # shutting down: the worker drains
                q.put(node)
                return None
            if not _deferred_kind(node):
                return node
            deferred.append(node)

    def _help_run(self, node) -> None:
        tls = graph._tls
        before = getattr(tls, "worker", None)
        tls.worker = node.proc  # a body that waits on a future fails as on a worker
        try:
            self.engine.run(node)
        finally:
            tls.worker = before

    def _enter_help(self):
        """Give the calling thread a worker's settings; returns what to restore.

        Numba's thread count is set once per thread and runtime-wide limit, and kept (`_numba_on_thread`):
        each `numba.set_num_threads` is a ctypes call that releases the GIL, and getting it back while a
        worker runs Python code costs up to the interpreter's switch interval. Set and restored around
        every help, it cost a GAN loop alternating train_on_batch calls (4 CPU processors on 2 cores)
        33 calls and 4-9 ms per iteration. The thread that shuts the runtime down gets its own count back
        (`shutdown`) unless its code set another one since; a helping thread other than that one keeps the
        limit (a thread's Numba count is its own to set), and a thread whose code sets another count while
        the runtime lives runs the tasks it then helps with under that count. None of our kernels is
        Numba-parallel, so only a user's own parallel Numba code on a thread that helped sees the workers'
        limit meanwhile, as BLAS sees the process-wide one."""
        nb = sys.modules.get("numba")
        if nb is not None:
            limit = min(self.policy.threads_per_worker, nb.config.NUMBA_NUM_THREADS)
            seen = getattr(_numba_on_thread, "limit", None)
            if seen != limit:
                try:
                    before = nb.get_num_threads()
                    if before != limit:
                        nb.set_num_threads(limit)
                    if seen is None:
                        _numba_on_thread.before = before
                    _numba_on_thread.limit = limit
                except (AttributeError, ValueError, RuntimeError) as e:
                    log.debug("could not set Numba's thread count on a helping thread: %s", e)
        return (fpenv.flush_denormals(),)

    @staticmethod
    def _leave_help(saved) -> None:
        fpenv.restore(saved[0])

    def shutdown(self, timeout: float | None = None) -> bool:
        """Stop every worker after its queue drains; with `timeout`, wait at most that long in all
        (a worker still inside a long task body is left to the process exit: workers are daemons).
        Returns whether every worker has stopped."""
        for put in self._put:
            put(_STOP)
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        _restore_numba_on_thread()
        return not any(t.is_alive() for t in self._threads)


class SequentialExecutor:
    """Runs each ready node on the issuing thread, in the order nodes become ready."""

    name = "sequential"

    def __init__(self, engine, machine, policy: ThreadingPolicy):
        self.engine = engine
        self._queue: deque = deque()
        self._draining = False
        # one GPU: the issuing thread is bound to it, as a threaded GPU worker is, so a GPU task does not
        # push and pop the device's context (~12 us each on numba-cuda 0.30)
        devices = {p.device for p in machine.processors(ProcKind.GPU)}
        self._device = devices.pop() if len(devices) == 1 else None

    def enqueue(self, node) -> None:
        self._queue.append(node)
        if self._draining:
            return
        if self._device is not None:
            gpu.bind_thread(self._device)
        self._draining = True
        word = fpenv.flush_denormals()  # as on the threaded workers, restored for the caller's own code
        try:
            run = self.engine.run
            while self._queue:
                run(self._queue.popleft())
        except KeyboardInterrupt:
            # Ctrl-C inside a body: the engine is cancelled, so the rest completes without running;
            # then it serves again (a notebook goes on; the command line's hook cancels for good)
            while self._queue:
                self.engine.run(self._queue.popleft())
            self.engine.cancelled = False
            raise
        finally:
            self._draining = False
            fpenv.restore(word)

    def putter(self, proc):
        """The callable that enqueues a ready node on `proc` (trace replays resolve it once)."""
        return self.enqueue

    def help(self, gate) -> None:
        """Nothing to run for a waiting thread: every ready node ran when it became ready."""

    def shutdown(self, timeout: float | None = None) -> bool:
        self._queue.clear()
        return True


EXECUTORS = {"threaded": ThreadedExecutor, "sequential": SequentialExecutor}
