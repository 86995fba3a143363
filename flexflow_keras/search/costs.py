"""The cost model: how long each piece of each op takes, measured on this machine, cached on disk.

For a processor kind that is present, a piece's forward, statistics and backward times are measured by
running the op's own compute functions (the same kernels the tasks run) on arrays of the piece's shapes,
with the BLAS thread count a strategy gives each processor: a warm-up call, then repeats until ~5 ms or
7 calls, the median. Optimizer updates are measured the same way per weight piece shape. Results are
cached in a JSON file keyed by the op's attributes, the piece's shapes and local attributes, the thread
count and the machine, so a second search on the same machine measures nothing (`FF_CACHE_DIR`, default
`~/.cache/flexflow_keras`). For kinds that are not present (a machine-model file) the roofline gives the
times (`roofline.py`), scaled per op family by the measured/roofline ratio where this machine has
measurements of that kind, else by typical efficiencies. When a step's data outgrows the caches (more
than `CACHE_BYTES`), pieces are timed with the caches evicted before every call, as a step finds them. Measuring stops after `budget_s` seconds per
search; later pieces fall back to the calibrated roofline (and the log says how many).

The runtime's own costs are measured once per machine too: issuing one point task in a replayed trace
(`issue`, on the one thread that issues launches, plus `issue_arg` per region argument), and the
worker-side cost of running one (`task`, plus `task_arg` per argument); memory-bound passes (zero
fills, reduction folds) use the measured memory bandwidth.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import statistics
import time
from dataclasses import dataclass

import numpy as np

from flexflow_keras.ops.base import KernelContext
from flexflow_keras.search import roofline
from flexflow_keras.search.machine import MachineModel

log = logging.getLogger("flexflow_keras")
VERSION = 5
CACHE_BYTES = 32 << 20  # above this much data per step, pieces are timed from main memory


def cache_dir() -> str:
    return os.environ.get("FF_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "flexflow_keras")


_KERNELS_ID: str | None = None


def kernels_id() -> str:
    """A fingerprint of the kernel sources (kernels/*.py) and the environment variables that pick BLAS
    code paths: part of every cache key, so costs measured and strategies chosen with other kernels are
    never reused (a faster convolution must be measured again, not read from last week's cache)."""
    global _KERNELS_ID
    if _KERNELS_ID is None:
        import kernels

        h = hashlib.sha1()
        root = os.path.dirname(os.path.abspath(kernels.__file__))
        for name in sorted(os.listdir(root)):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
        for var in ("OPENBLAS_CORETYPE", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
            h.update(f"{var}={os.environ.get(var, '')}".encode())
        _KERNELS_ID = h.hexdigest()[:12]
    return _KERNELS_ID


@dataclass(frozen=True)
class PieceCost:
    """Seconds for one piece: its statistics pass (BatchNorm), forward and backward."""

    stats: float
    fwd: float
    bwd: float


@dataclass(frozen=True)
class Overheads:
    """The runtime's per-task costs (s) and the memory bandwidth for fills and folds (bytes/s).

    `issue` (+ `issue_arg` per region argument): the issuing thread's work for one point of a replayed
    launch and the worker's bookkeeping for it; `task` (+ `task_arg`): a task body's own prologue
    (its context, argument checks); `py_op`: an op call's Python dispatch before its kernel starts. In
    this process all three hold the interpreter lock (`gil`: True), so the simulator serialises them.
    `handoff`: the latency of a dependence between tasks on different processors (waking the worker of
    the processor that runs the successor)."""

    issue: float
    issue_arg: float
    task: float
    task_arg: float
    mem_bandwidth: float
    py_op: float = 0.0
    handoff: float = 0.0
    gil: bool = False


def _box_shape(box) -> tuple[int, ...]:
    return tuple(h - lo for lo, h in zip(*box, strict=True))


class CostModel:
    """Piece, update and runtime costs for one machine model.

    Args:
        machine: the machine model (measured when `machine.present`).
        optimizer: the optimizer whose update is timed (None: SGD-like, 3 bytes streams per element).
        measure: run kernels to time them (default: when the machine is present and not the CUDA
            simulator).
        budget_s: seconds of measuring per search before falling back to the calibrated roofline.
    """

    def __init__(self, machine: MachineModel, optimizer=None, measure: bool | None = None, budget_s: float = 60.0,
                 path: str | None = None):
        self.machine = machine
        self.optimizer = optimizer
        if measure is None:  # CPU pieces are measured here even for a scaled (larger) CPU machine
            measure = (machine.present or machine.kind == "CPU") and not _simulator()
        self.measuring = measure
        self.budget_s = budget_s
        self.spent = 0.0
        self.fallbacks = 0
        self.measured = 0
        sig = hashlib.sha1((machine.signature() + kernels_id()).encode()).hexdigest()[:12]
        self.path = path or os.path.join(cache_dir(), f"costs-v{VERSION}-{machine.kind}-{sig}.json")
        self._entries: dict[str, list[float]] = {}
        self._dirty = False
        self._load()
        self._factors: dict[str, float] | None = None
        self._samples: list = []  # (node, tile, cache key) of the pieces measured or cached this session
        self._overheads: Overheads | None = None
        # calibration against measured steps of this program (see calibrate.py): the Python cost of one
        # point task (None: from the overheads), and the slow-down of kernels running at once
        self.py_task: float | None = None
        self.contention = 1.0
        # whether a step's data outgrows the caches (the driver sets it from the simulated memory): then
        # pieces are timed from main memory
        self.cold = False

    # --- cache ---------------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("version") == VERSION and doc.get("machine") == self.machine.signature():
                self._entries = {k: list(v) for k, v in doc.get("entries", {}).items()}
        except (OSError, ValueError):
            self._entries = {}

    def save(self) -> None:
        """Write the measurements to the cache file (atomically; a failure only logs)."""
        if not self._dirty:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            tmp = f"{self.path}.tmp{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"version": VERSION, "machine": self.machine.signature(), "entries": self._entries}, f)
            os.replace(tmp, self.path)
            self._dirty = False
        except OSError as e:
            log.warning("could not write the cost cache %s (%s); the next search measures again", self.path,
                        e.strerror)

    # --- pieces ---------------------------------------------------------------------------------------
    def threads_for(self, devices_used: int) -> int:
        """BLAS threads per processor when a strategy uses `devices_used` processors of a CPU node: the cores
        other processes leave free (`MachineModel.free_cores`) over the processors, as the engine gives them.
        Measured with more threads than it will run, a piece of a loaded machine waited on a thread another
        process held: with 2 threads and 2.1 of 2 cores busy elsewhere, the MNIST MLP b128 at one processor
        was predicted at 164 ms a step, measured at 10.1 (it trains with 1 thread)."""
        if self.machine.kind != "CPU":
            return 1
        cores = self.machine.cores
        if self.machine.free_cores:
            cores = min(cores, self.machine.free_cores)
        return max(1, cores // max(1, min(devices_used, self.machine.n)))

    def py_cost(self, nargs: int) -> float:
        """Seconds of Python (the interpreter lock held) of one point task with `nargs` region arguments."""
        o = self.overheads()
        base = self.py_task if self.py_task is not None else o.task + o.py_op
        return base + o.task_arg * nargs

    @staticmethod
    def piece_key(node, tile, threads: int, need=None) -> str:
        shapes = (tuple(_box_shape(b) for b in tile.inputs), tuple(_box_shape(b) for b in tile.weights),
                  tuple(_box_shape(b) for b in tile.outputs), tuple(_box_shape(b) for b in tile.saved))
        dtypes = tuple(t.dtype for t in node.inputs)
        return (f"p|{threads}|{node.op!r}|{dtypes}|{shapes}|{tile.local}|{tile.parts}|{tile.part == 0}|"
                f"{need}")

    def _key(self, key: str) -> str:
        return key + ("|cold" if self.cold else "")

    def piece(self, node, tile, threads: int = 1, device=None, need=None) -> PieceCost:
        """Seconds for one piece of `node` (measured and cached, or from the roofline). `need`: which
        (input, weight) gradients its backward computes (default: every differentiable one)."""
        key = self._key(self.piece_key(node, tile, threads, need))
        hit = self._entries.get(key)
        if hit is not None:
            if self.measuring:
                self._samples.append((node, tile, key))
            return PieceCost(*hit)
        if self.measuring and self.spent < self.budget_s:
            t0 = time.perf_counter()
            cost = self._measure_piece(node, tile, threads, need)
            self.spent += time.perf_counter() - t0
            self.measured += 1
            self._entries[key] = [cost.stats, cost.fwd, cost.bwd]
            self._dirty = True
            self._samples.append((node, tile, key))
            return cost
        if self.measuring:
            self.fallbacks += 1
            if self._factors is None:  # the budget ran out: calibrate the roofline on what was measured
                self.fit_factors()
        return self._roofline_piece(node, tile, device or self.machine.devices[0])

    def _roofline_piece(self, node, tile, device) -> PieceCost:
        ff, bf, fb, bb, fam = roofline.work(node, tile)
        factor = self.factors().get(fam)
        fwd = roofline.roofline_time(ff, fb, device, fam, factor)
        bwd = roofline.roofline_time(bf, bb, device, fam, factor)
        stats = roofline.roofline_time(ff / 4, fb / 2, device, fam, factor) if node.op.type_name == "batch_norm" else 0.0
        return PieceCost(stats, fwd, bwd)

    def factors(self) -> dict[str, float]:
        """Measured/roofline time per op family (fitted by `fit_factors`; empty: typical efficiencies)."""
        return self._factors or {}

    def fit_factors(self) -> dict[str, float]:
        """Fit the per-family calibration (median of measured / roofline time) from the pieces measured
        or found in the cache during this search, on this machine's kind."""
        ratios: dict[str, list[float]] = {}
        dev = self.machine.devices[0]
        for node, tile, key in self._samples:
            hit = self._entries.get(key)
            if hit is None:
                continue
            ff, bf, fb, bb, fam = roofline.work(node, tile)
            raw = max(ff / dev.flops, fb / dev.memory_bandwidth) + max(bf / dev.flops, bb / dev.memory_bandwidth)
            if raw > 0:
                ratios.setdefault(fam, []).append((hit[1] + hit[2]) / raw)
        self._factors = {k: statistics.median(v) for k, v in ratios.items()}
        return self._factors

    # --- updates ----------------------------------------------------------------------------------------
    def update(self, shape, dtype: str = "float32", threads: int = 1) -> float:
        """Seconds for the optimizer to update a weight piece of `shape`."""
        opt = self.optimizer
        name = repr(opt.get_config()) if opt is not None and hasattr(opt, "get_config") else "sgd"
        key = self._key(f"u|{threads}|{type(opt).__name__}|{name}|{tuple(shape)}|{dtype}")
        hit = self._entries.get(key)
        if hit is not None:
            return hit[0]
        n = math.prod(shape)
        if self.measuring and opt is not None and self.spent < self.budget_s:
            t0 = time.perf_counter()
            value = self._measure_update(shape, dtype, threads)
            self.spent += time.perf_counter() - t0
            self._entries[key] = [value]
            self._dirty = True
            return value
        slots = len(opt.slot_specs(tuple(shape), dtype)) if opt is not None else 0
        bw = self.overheads().mem_bandwidth if self.machine.present else self.machine.devices[0].memory_bandwidth
        return 4.0 * n * (3 + 2 * slots) / bw

    # --- runtime costs ------------------------------------------------------------------------------------
    def overheads(self) -> Overheads:
        if self._overheads is None:
            hit = self._entries.get("overheads")
            if hit is None:
                if self.machine.kind == "CPU":  # this process's runtime runs CPU machines
                    hit = list(_measure_overheads(min(self.machine.n, 4))) + [True]
                else:  # a described machine: a C++-speed runtime's costs (Legion: a few us per task)
                    bw = self.machine.devices[0].memory_bandwidth
                    hit = [5e-6, 0.2e-6, 5e-6, 0.2e-6, bw, 0.0, 2e-6, False]
                self._entries["overheads"] = hit
                self._dirty = True
            self._overheads = Overheads(*hit)
        return self._overheads

    def mem_pass(self, nbytes: float, streams: int = 1) -> float:
        """Seconds for a memory-bound pass touching `nbytes` `streams` times (fills, folds)."""
        return streams * nbytes / self.overheads().mem_bandwidth

    # --- measuring ------------------------------------------------------------------------------------------
    def _measure_piece(self, node, tile, threads: int, need=None) -> PieceCost:
        op = node.op
        rng = np.random.default_rng(0)
        ins = [_input_array(node, i, _box_shape(b), tile, rng) for i, b in enumerate(tile.inputs)]
        ws = [_weight_array(w, _box_shape(b), rng) for w, b in zip(node.weights, tile.weights, strict=True)]
        in_specs = [t.spec for t in node.inputs]
        w_specs = [w.spec for w in node.weights]
        out_dt = [t.dtype for t in node.outputs]
        outs = [np.zeros(_box_shape(b), dt) for b, dt in zip(tile.outputs, out_dt, strict=True)]
        saved = [np.zeros(_box_shape(b), s.dtype) for b, s in zip(tile.saved, op.saved_specs(in_specs, w_specs),
                                                                   strict=True)]
        st_specs = op.stats_specs(in_specs, w_specs, True)
        stats = [np.zeros(_box_shape(b), s.dtype) for b, s in zip(tile.stats, st_specs, strict=True)]
        ctx = KernelContext(backend="cpu", training=True, step=0, seed=1, tile=tile,
                            batch_offset=tile.outputs[0][0][0] if tile.outputs and tile.outputs[0][0] else 0)
        gouts = [rng.standard_normal(o.shape).astype(o.dtype) * 0.1 if o.dtype.kind == "f" else np.zeros_like(o)
                 for o in outs]
        need_in, need_w = need if need is not None else (None, None)
        gins = [np.zeros(a.shape, a.dtype) if (need_in[i] if need_in else op.is_differentiable(i))
                and a.dtype.kind == "f" else None for i, a in enumerate(ins)]
        required = set(getattr(op, "required_grad_weights", ()))
        gws = [np.zeros(a.shape, a.dtype) if ((need_w[j] if need_w else w.trainable) or j in required) else None
               for j, (w, a) in enumerate(zip(node.weights, ws, strict=True))]
        bctx = KernelContext(backend="cpu", training=True, step=0, seed=1, tile=tile,
                             batch_offset=ctx.batch_offset, accumulate_inputs=(False,) * len(ins),
                             accumulate_weights=(False,) * len(ws))

        def do_stats():
            for s in stats:
                s[...] = 0
            op.forward_stats(ctx, ins, ws, stats)

        def do_fwd():
            op.forward(ctx, ins, ws, outs, saved, stats)

        def do_bwd():
            if op.two_stage_backward:
                op.backward_weights(bctx, ins, ws, outs, saved, stats, gouts, gws)
                op.backward_inputs(bctx, ins, ws, outs, saved, stats, gouts, gws, gins)
            else:
                op.backward(bctx, ins, ws, outs, saved, stats, gouts, gins, gws)

        with _blas_threads(threads):
            cold = self.cold
            t_stats = _time(do_stats, cold=cold) if stats else 0.0
            if stats:
                do_stats()
            t_fwd = _time(do_fwd, cold=cold)
            t_bwd = _time(do_bwd, cold=cold) if node_trains(node, gins, gws) else 0.0
        return PieceCost(t_stats, t_fwd, t_bwd)

    def _measure_update(self, shape, dtype, threads) -> float:
        opt = self.optimizer
        rng = np.random.default_rng(0)
        w = rng.standard_normal(shape).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype) * 1e-3
        slots = [w.copy() if init is None else np.full(opt.slot_shape(name, shape), init, dtype)
                 for name, init in opt.slot_specs(tuple(shape), dtype)]
        with _blas_threads(threads):
            return _time(lambda: opt.apply("cpu", 0, 1e-3, [w], [g], [slots]), cold=self.cold)


def node_trains(node, gins, gws) -> bool:
    return any(g is not None for g in gins) or any(g is not None for g in gws)


def _simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


_FLUSH: np.ndarray | None = None


def release_scratch() -> None:
    """Give back the cache-flushing buffer (64 MB) once a search has finished measuring."""
    global _FLUSH
    _FLUSH = None


def _flush() -> None:
    """Evict the caches: write a buffer larger than any last-level cache (64 MB)."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = np.zeros(1 << 24, np.float32)
    _FLUSH += 1.0


def _time(fn, min_total: float = 5e-3, max_calls: int = 7, cold: bool = False) -> float:
    """Median seconds of `fn` after a warm-up call; `cold`: the caches are evicted before every call (a
    step whose data does not fit in the caches finds every piece's arrays in main memory)."""
    fn()  # warm-up: JIT, first-touch of the buffers
    times = []
    total = 0.0
    while len(times) < 3 or (total < min_total and len(times) < max_calls):
        if cold:
            _flush()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
    return statistics.median(times)


class _blas_threads:
    """Kernels measured with `n` threads, as the engine runs them: BLAS limited to n, and the kernels'
    own choice of GEMM for that many threads (kernels._conv_simd.set_kernel_threads)."""

    def __init__(self, n: int):
        self.n = n
        self.ctl = None
        self.before = None

    def __enter__(self):
        from kernels import _conv_simd

        self.before = _conv_simd.kernel_threads()
        _conv_simd.set_kernel_threads(self.n)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return self
        self.ctl = threadpool_limits(limits=self.n, user_api="blas")
        return self

    def __exit__(self, *exc):
        from kernels import _conv_simd

        _conv_simd.set_kernel_threads(self.before)
        if self.ctl is not None:
            self.ctl.restore_original_limits()


def _input_array(node, i: int, shape, tile, rng) -> np.ndarray:
    dtype = np.dtype(node.inputs[i].dtype)
    if dtype.kind in "iu":
        hi = 2
        t = node.op.type_name
        if t == "embedding":
            rows = tile.get("rows")
            hi = rows[1] if rows else node.weights[0].shape[0]
        elif t == "category_encoding":
            hi = node.op.num_tokens
        elif t == "loss" and len(tile.inputs) > 1:
            hi = max(1, tile.inputs[1][1][-1] - tile.inputs[1][0][-1])
        return rng.integers(0, hi, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if node.op.type_name == "loss" and i == 0:
        return rng.random(shape).astype(dtype)
    return (rng.standard_normal(shape) * 0.5).astype(dtype)


def _weight_array(var, shape, rng) -> np.ndarray:
    return rng.uniform(0.5, 1.5, shape).astype(var.dtype)


def _measure_overheads(procs: int) -> tuple[float, float, float, float, float, float, float]:
    """(issue, issue per arg, task, task per arg, memory bandwidth, op dispatch, handoff) of this process.

    The issue costs are measured on the runtime itself: a replayed trace of empty point tasks with 2 and
    8 region arguments on the sequential executor (issue and run on one thread: everything the
    interpreter lock serialises). The task costs are a task body's prologue as the execution writes it
    (a KernelContext, the contiguity checks of its arrays), the op dispatch a tiny element-wise op's call
    through `Op.forward` (Python work before and after its kernel)."""
    from flexflow_keras.ops.nn_ops import ActivationOp
    from runtime import RO, WD, Machine, Partition, Region, Runtime, task

    def run(nargs: int) -> float:
        regions = [Region((procs * 8, 8), np.float32, name=f"r{k}") for k in range(nargs)]
        parts = [Partition.equal(r, (procs, 1)) for r in regions]
        body = task(privileges=[RO] * (nargs - 1) + [WD])(_empty)
        launches = 40
        with Runtime(Machine(cpus=procs), executor="sequential") as rtm:
            for r in regions:
                rtm.fill(r, 0.0)
            best = math.inf
            for _ in range(6):
                t0 = time.perf_counter()
                with rtm.trace("overhead"):
                    for _ in range(launches):
                        rtm.index_launch(body, (procs,), *parts)
                best = min(best, time.perf_counter() - t0)
        return best / (launches * procs)

    p2, p8 = run(2), run(8)
    issue_arg = max(0.0, (p8 - p2) / 6)
    issue = max(1e-7, p2 - 2 * issue_arg)
    arrays = [np.zeros((4, 4), np.float32) for _ in range(8)]

    def prologue(n):
        ctx = KernelContext(backend="cpu", training=True, step=1, seed=1, global_batch=4)
        ok = [a.flags.c_contiguous for a in arrays[:n]]
        return ctx, ok

    t2 = _time(lambda: prologue(2), max_calls=50)
    t8 = _time(lambda: prologue(8), max_calls=50)
    task_arg = max(0.0, (t8 - t2) / 6)
    task_cost = max(1e-7, t2 - 2 * task_arg)
    handoff = max(0.0, _chain(True) - _chain(False)) if procs > 1 else 0.0
    op = ActivationOp("relu")
    x, y = np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32)
    ctx = KernelContext(backend="cpu")
    py_op = _time(lambda: op.forward(ctx, [x], [], [y], [], []), max_calls=50)
    a = np.ones(1 << 23, np.float32)
    b = np.ones(1 << 23, np.float32)
    t = _time(lambda: np.add(a, b, out=a), min_total=0.05, max_calls=10)
    return issue, issue_arg, task_cost, task_arg, 3 * a.nbytes / t, py_op, handoff


def _chain(cross: bool, n: int = 200) -> float:
    """Seconds per task of a chain of dependent empty tasks on the threaded executor, all on one
    processor or alternating between two (each step then wakes the other worker)."""
    from runtime import RW, Machine, ProcKind, Region, Runtime, task

    body = task(privileges=[RW])(_empty)
    r = Region((8,), np.float32, name="chain")
    with Runtime(Machine(cpus=2), executor="threaded") as rtm:
        procs = rtm.machine.processors(ProcKind.CPU)
        rtm.fill(r, 0.0)
        runs = []
        for _ in range(7):
            t0 = time.perf_counter()
            with rtm.trace("chain"):
                for i in range(n):
                    rtm.launch(body, r, tag=procs[i % 2 if cross else 0])
            runs.append(time.perf_counter() - t0)
    return statistics.median(runs[1:]) / n  # the first run records the trace


def _empty(*regions):
    return None
