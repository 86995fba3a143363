"""Between nodes: MPI through mpi4py (the `mpi` extra: `pip install mpi4py mpich`).

Under `mpiexec -n N python train.py ...` every rank is one node of the machine: it owns the processors
and memories its own `-ll:*` flags describe, runs the same program (SPMD, what Legion's control
replication amounts to) and executes only the work mapped to its processors. What crosses nodes are
plain values and NumPy buffers: gradients of weights replicated on every node are summed with MPI
(`Iallreduce`, started as soon as a weight's gradient is complete and issued in start order a few MB
at a time by the rank's `SumQueue`, waited before its update), and the
host gathers each node's loss and metric partial sums in rank order.

`start(argv)` is called once at import. It does nothing unless the process was launched by an MPI
launcher with more than one rank (PMI_SIZE / OMPI_COMM_WORLD_SIZE / PMIX_SIZE); then it
- checks that every rank was given the same flags (a hash of argv[1:], allgathered): a mismatch is a
  `MachineError` on every rank naming the ranks and their flags;
- measures the link between rank 0 and every other rank with a few ping-pongs (latency from 8-byte
  round trips, bandwidth from 4 MB ones), logs it and keeps it for the machine model;
- installs the failure policy: an exception that reaches the top of a rank logs "rank r of N failed"
  with the message, lets the usual hook print its block, then `MPI_Abort`s, so mpiexec ends every rank
  within seconds; a rank killed outright (SIGKILL) is torn down by mpiexec itself (Hydra: "BAD
  TERMINATION ... CLEANING UP REMAINING PROCESSES").

Device buffers (GPU processors) are summed in place on the device when the MPI is CUDA-aware (`World.
cuda_aware`: MPI 4.1's `mpi_memory_alloc_kinds` info of COMM_WORLD lists a `cuda` kind, as CUDA-built
MPICH and Open MPI 5 report; `FF_MPI_CUDA_AWARE=1` or `0` overrides), after the task's stream has
finished writing them; otherwise, and always under the CUDA simulator, they are staged through host
memory.

Collectives issued from worker threads run on communicators of their own (`World.channel()`, one per
region reduced), so their order on one communicator is fixed by the region's dependences, never by
thread timing; the host's collectives (`gather`, `bcast`, `barrier`) run on a control communicator.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runtime.errors import MachineError
from runtime.sum_queue import SumQueue

ABORT_GRACE_S = 0.5  # seconds between a failing rank's last message and MPI_Abort

log = logging.getLogger("runtime")

_LAUNCH_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")
_SPIN_S = 2e-3
_SPIN_BANDWIDTH = 0.5e9  # bytes/s: a reduction is polled busily for _SPIN_S + its bytes at this rate
_POLL_S = 50e-6  # waits poll with short sleeps: MPICH's blocking waits spin a core each (measured:
# 2 ranks x (main thread + a worker) spinning on 2 shared cores slowed an MLP step many times over)
SUM_BYTES_IN_FLIGHT = 256 << 10  # gradient sums in flight at once, in bytes: larger ones one at a time
# (4 MB before: 1 MB sums ran 2-4 at once, 20-100% slower than one after another; runtime/sum_queue.py)
FLUSH_AFTER_S = 0.01  # a wait longer than this (plus its transfer time) issues every queued sum
_lock = threading.Lock()
_world: World | None = None
_started = False


_probes: list = []  # callables returning this rank's pending failure (an exception) or None


def add_failure_probe(probe) -> None:
    """Have long waits call `probe()` now and then and raise what it returns: a rank whose own task
    failed while it waits for the other ranks raises (and so aborts the job) instead of waiting forever."""
    _probes.append(probe)


def _pending_failure():
    for probe in _probes:
        try:
            err = probe()
        except Exception:  # noqa: BLE001 - a probe must never break a wait
            err = None
        if err is not None:
            return err
    return None


def wait(req, spin_s: float = _SPIN_S) -> None:
    """Wait for an MPI request: polling it busily for `spin_s` (MPI progresses the transfer while it is
    polled), then with short sleeps, so a long wait does not spin a core; every quarter second of a long
    wait, raise this rank's failure if one of its tasks failed meanwhile (see add_failure_probe)."""
    t_end = time.perf_counter() + spin_s
    next_probe = t_end + 0.25
    while not req.Test():
        now = time.perf_counter()
        if now > t_end:
            time.sleep(_POLL_S)
            if now > next_probe:
                next_probe = now + 0.25
                err = _pending_failure()
                if err is not None:
                    raise err


def os_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it, else every core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_cores() -> int:
    """The cores of this host that belong to this process: those it may run on, shared out among the MPI
    ranks running on the same host when each may run on all of them (a launcher that binds each rank to
    its own cores, `srun --cpus-per-task`, `mpirun --bind-to`, has shared them out already)."""
    cores = os_cores()
    local = _world.local_ranks if _world is not None else 1
    if cores < (os.cpu_count() or cores):
        return cores
    return max(1, cores // max(1, local))


@dataclass(frozen=True)
class Link:
    """The measured link from rank 0 to `peer`: bandwidth (bytes/s) and one-way latency (s)."""

    peer: int
    bandwidth: float
    latency: float


def launched_size() -> int:
    """The rank count an MPI launcher announced in the environment (1 when none did)."""
    for var in _LAUNCH_VARS:
        raw = os.environ.get(var)
        if raw and raw.isdigit():
            return int(raw)
    return 1


class World:
    """The ranks of this job (one node each), their measured links and the collectives we use.

    Args:
        comm: an mpi4py intracommunicator (COMM_WORLD).
    """

    def __init__(self, comm):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.control = comm.Dup()  # the host's collectives; worker threads use channel()s
        self.links: list[Link] = []
        self.thread_level = MPI.Query_thread()
        self.cuda_aware = cuda_aware(comm)
        self.sums = SumQueue(MPI, limit_bytes=SUM_BYTES_IN_FLIGHT, poll_s=_POLL_S, failure=_pending_failure)
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_ranks = node.Get_size()  # ranks on this host (they share its cores and GPUs)
        self.local_rank = node.Get_rank()
        node.Free()

    # --- start-up ------------------------------------------------------------------------------------
    def check_flags(self, argv: Sequence[str]) -> None:
        """Every rank must have been given the same flags.

        Raises:
            MachineError: on every rank, naming the ranks whose flags differ from rank 0's.
        """
        digest = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
        seen = self.control.allgather((digest, list(argv)))
        bad = [r for r, (d, _) in enumerate(seen) if d != seen[0][0]]
        if bad:
            lines = "; ".join(f"rank {r}: {' '.join(seen[r][1]) or '(none)'}" for r in [0, *bad])
            raise MachineError(f"mpiexec started {self.size} ranks with different flags ({lines}). Every rank "
                               f"must run the same command line: mpiexec -n {self.size} python SCRIPT FLAGS.")

    def measure_links(self, rounds: int = 10, big: int = 4 << 20) -> list[Link]:
        """Ping-pong between rank 0 and every other rank; every rank gets the figures."""
        comm, out = self.control, []
        small = np.zeros(1, np.float64)
        large = np.zeros(big // 8, np.float64)
        for peer in range(1, self.size):
            lat = bw = 0.0
            if self.rank in (0, peer):
                other = peer if self.rank == 0 else 0
                for buf, n in ((small, rounds), (large, max(2, rounds // 3))):
                    t0 = time.perf_counter()
                    for _ in range(n):
                        if self.rank == 0:
                            comm.Send(buf, dest=other, tag=7)
                            comm.Recv(buf, source=other, tag=7)
                        else:
                            comm.Recv(buf, source=other, tag=7)
                            comm.Send(buf, dest=other, tag=7)
                    one_way = (time.perf_counter() - t0) / (2 * n)
                    if buf is small:
                        lat = one_way
                    else:
                        bw = buf.nbytes / max(one_way - lat, 1e-9)
            lat, bw = comm.bcast((lat, bw), root=0)
            out.append(Link(peer, bw, lat))
        self.links = out
        return out

    def describe(self) -> str:
        links = ", ".join(f"0<->{lk.peer}: {lk.bandwidth / 1e9:.2f} GB/s, {lk.latency * 1e6:.1f} us"
                          for lk in self.links)
        return (f"MPI: {self.size} nodes (ranks), this is rank {self.rank}; measured links {links}; "
                f"{'CUDA-aware (device buffers summed in place)' if self.cuda_aware else 'not CUDA-aware (device buffers staged through host memory)'}")

    # --- host collectives (control communicator, the issuing thread only) ------------------------------
    def _arrive(self) -> None:
        wait(self.control.Ibarrier())  # every rank is here: the collective after it does not spin long

    def gather(self, value) -> list:
        """Every rank's `value` (plain values: numbers, tuples, NumPy arrays), in rank order."""
        self._arrive()
        return self.control.allgather(value)

    def bcast(self, value, root: int = 0):
        self._arrive()
        return self.control.bcast(value, root=root)

    def barrier(self) -> None:
        self._arrive()

    def bcast_array(self, array: np.ndarray, root: int = 0) -> None:
        """Overwrite `array` (C-contiguous) with rank `root`'s values."""
        self.control.Bcast(array, root=root)

    def channel(self):
        """A communicator of its own (collective: every rank calls it in the same order)."""
        return self.comm.Dup()

    # --- failure --------------------------------------------------------------------------------------
    def abort(self, code: int = 1) -> None:
        sys.stderr.flush()
        sys.stdout.flush()
        # mpiexec's proxy forwards this rank's output through a pipe; MPI_Abort makes it kill every rank,
        # and on a busy host it could do so before reading the failure message just written (seen once
        # in a loaded CI run: the job ended without rank 1's message). Give it a moment to read.
        time.sleep(ABORT_GRACE_S)
        self.comm.Abort(code)


class Reducer:
    """Sum one region's buffers over every rank without blocking the issuing worker: `start` queues a
    nonblocking Iallreduce on the buffer (in place when it is a C-contiguous NumPy array, else on a host
    copy) with the rank's `SumQueue` (issued in start order, one in flight at a time), `finish` waits for
    it and writes the sum back when it was staged.

    One Reducer per region, on its own communicator: start/finish of the same region alternate (the
    runtime orders them by their read-write privileges), so every rank issues its collectives on that
    communicator in the same order.
    """

    def __init__(self, world: World, name: str):
        self.world = world
        self.name = name
        self.comm = world.channel()
        self._pending = None  # (request, host buffer, target or None)

    def start(self, buf) -> None:
        if self._pending is not None:
            raise RuntimeError(f"Reducer {self.name}: start called twice without finish")
        if isinstance(buf, np.ndarray) and buf.flags.c_contiguous:
            host, target = buf, None
        elif isinstance(buf, np.ndarray):
            host, target = np.ascontiguousarray(buf), buf
        elif self.world.cuda_aware and not _simulated():  # the MPI reads and writes device memory
            _stream_done()
            host, target = buf, None
        else:  # a device array: staged through host memory
            host, target = buf.copy_to_host(), buf
        self._pending = (self.world.sums.start(self.comm, host), host, target)

    def finish(self, buf) -> None:
        if self._pending is None:
            raise RuntimeError(f"Reducer {self.name}: finish called before start")
        entry, host, target = self._pending
        self._pending = None
        spin = _SPIN_S + host.nbytes / _SPIN_BANDWIDTH  # polled busily for about its transfer time
        self.world.sums.wait(entry, spin, FLUSH_AFTER_S + 4 * spin)
        if target is None:  # summed in place (a host array, or device memory with a CUDA-aware MPI)
            if isinstance(host, np.ndarray) and host is not buf and not np.shares_memory(host, buf):
                buf[...] = host
        elif isinstance(target, np.ndarray):
            buf[...] = host
        else:
            buf.copy_to_device(host)

    def allreduce(self, buf) -> None:
        """Blocking sum (for small buffers a later task reads at once, such as batch statistics)."""
        self.start(buf)
        self.finish(buf)


def sum_tasks(reducer: Reducer, name: str | None = None):
    """(start, finish) runtime tasks summing one region over the ranks with `reducer`: each takes the
    region read-write (so the runtime orders start after the region's writers, finish after start, and
    readers after finish); CPU and GPU variants (device buffers are staged through host memory).

    The start only queues the sum (`Reducer.start` never waits), so on a CPU processor it is inline: it
    runs on the thread that makes it ready, right after the region's last writer (or in the launch, when
    that has completed), instead of waiting in the processor's queue behind other ready points (a
    blocking wait among them held it up) and waking a parked worker. A lone 1 MB sum the host waits for
    paid the hop: the put woke the worker, which took a core from the other rank's polling thread."""
    from runtime.machine import ProcKind
    from runtime.privileges import RW
    from runtime.tasks import Task

    name = name or reducer.name

    def start(buf):
        reducer.start(buf)

    def finish(buf):
        reducer.finish(buf)

    kinds = (ProcKind.CPU, ProcKind.GPU)
    return (Task(start, [RW], name=f"{name}.allreduce_start", kinds=kinds, inline=True),
            Task(finish, [RW], name=f"{name}.allreduce_wait", kinds=kinds))


def cuda_aware(comm) -> bool:
    """Whether the MPI of `comm` reads and writes CUDA device memory (see the module docstring)."""
    forced = os.environ.get("FF_MPI_CUDA_AWARE", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    try:
        info = comm.Get_info()
        try:
            kinds = info.Get("mpi_memory_alloc_kinds") or ""
        finally:
            info.Free()
    except (AttributeError, NotImplementedError):  # an MPI before 4.1 has no such info
        return False
    except Exception as e:  # noqa: BLE001 - mpi4py raises MPI.Exception for an unsupported query
        log.debug("mpi_memory_alloc_kinds: %s", e)
        return False
    return any(k.split(":")[0].strip().lower() == "cuda" for k in str(kinds).split(","))


def _simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _stream_done() -> None:
    """Wait until this thread's stream (a GPU task's) has run everything enqueued on it: MPI reads the
    buffer from the host's point of view."""
    from kernels.gpu.launch import current_stream

    stream = current_stream()
    if stream is not None:
        stream.synchronize()
    else:
        from numba import cuda

        cuda.synchronize()


def gpu_slice(local_rank: int, per_rank: int) -> list[int]:
    """The CUDA devices of the host that local rank `local_rank` uses when each rank asks `per_rank`."""
    return list(range(local_rank * per_rank, (local_rank + 1) * per_rank))


def _host_gpu_count() -> int:
    """NVIDIA GPUs on this host, counted without initialising CUDA (which would freeze
    CUDA_VISIBLE_DEVICES for this process)."""
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def assign_gpus(per_rank: int) -> str | None:
    """Give each rank on this host GPUs of its own (CUDA_VISIBLE_DEVICES, set before CUDA starts) when
    every rank asks `per_rank` (-ll:gpu) and the host has enough; else leave the devices shared (logged).
    Nothing is changed when CUDA_VISIBLE_DEVICES is already set, for the simulator, or in one process.
    Returns the value set, or None."""
    w = _world
    if w is None or per_rank <= 0 or w.local_ranks <= 1 or "CUDA_VISIBLE_DEVICES" in os.environ:
        return None
    if _simulated():
        return None
    count = _host_gpu_count()
    if count < per_rank * w.local_ranks:
        log.warning("rank %d: %d ranks on this host ask -ll:gpu %d each but the host has %d GPU(s): the ranks "
                    "share devices 0..%d", w.rank, w.local_ranks, per_rank, count, per_rank - 1)
        return None
    value = ",".join(map(str, gpu_slice(w.local_rank, per_rank)))
    os.environ["CUDA_VISIBLE_DEVICES"] = value
    return value


def world() -> World | None:
    """The MPI world when this process is one of several ranks, else None."""
    return _world


def shard(n: int, size: int, rank: int) -> tuple[int, int]:
    """Rows [lo, hi) of a batch of `n` that `rank` of `size` owns: the first n % size ranks get one more."""
    base, extra = divmod(n, size)
    lo = rank * base + min(rank, extra)
    return lo, lo + base + (1 if rank < extra else 0)


def _install_failure_hook(w: World) -> None:
    previous = sys.excepthook

    def excepthook(t, e, tb):
        msg = str(e).splitlines()[0] if str(e) else ""
        sys.stderr.write(f"flexflow_keras: rank {w.rank} of {w.size} failed with {t.__name__}: {msg}\n"
                         f"flexflow_keras: ending every rank (MPI_Abort)\n")
        sys.stderr.flush()
        try:
            if not issubclass(t, KeyboardInterrupt):
                previous(t, e, tb)  # the usual block or traceback (it may exit: mpiexec then ends the job)
        finally:
            w.abort(1)

    excepthook._flexflow_mpi = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook


def reinstall_failure_hook() -> None:
    """Wrap the current sys.excepthook again (after another library replaced ours)."""
    if _world is not None and not getattr(sys.excepthook, "_flexflow_mpi", False):
        _install_failure_hook(_world)


def start(argv: Sequence[str]) -> World | None:
    """Join the MPI job when launched as one of several ranks (see the module docstring).

    Args:
        argv: this rank's command-line flags (compared across ranks).

    Raises:
        MachineError: launched under mpiexec without mpi4py, or ranks given different flags.
    """
    global _world, _started
    with _lock:
        if _started:
            return _world
        _started = True
        if launched_size() <= 1:
            return None
        try:
            from mpi4py import MPI
        except ImportError:
            raise MachineError(
                f"This process was started by an MPI launcher with {launched_size()} ranks but mpi4py is not "
                f"installed. Install the mpi extra (pip install 'flexflow_keras[mpi]', i.e. mpi4py and "
                f"mpich) or run without mpiexec.") from None
        comm = MPI.COMM_WORLD
        if comm.Get_size() != launched_size():
            raise MachineError(
                f"The MPI launcher announced {launched_size()} ranks but mpi4py's MPI sees {comm.Get_size()} "
                f"(rank {comm.Get_rank()}): mpi4py is built against another MPI than the mpiexec that started "
                f"this job. Use the mpiexec of the same MPI (with the mpi extra: the mpich wheel's mpiexec), or "
                f"rebuild mpi4py against yours.")
        w = World(comm)
        _install_failure_hook(w)
        if w.thread_level < MPI.THREAD_MULTIPLE:
            raise MachineError(f"rank {w.rank}: this MPI gives thread level {w.thread_level}, but the runtime's "
                               f"worker threads call MPI: it needs MPI_THREAD_MULTIPLE (mpich provides it).")
        w.check_flags(list(argv))
        w.measure_links()
        _world = w
        if w.rank == 0:
            log.info("%s", w.describe())
        return w
