"""The engine a compiled model trains on: regions, tasks and step programs over the runtime.

State: the training graph and its stable op names, its gradient plan, the weight store (values,
gradients, optimizer slots), per batch size a `BatchStore`, the `Strategy` in effect and, per (mode,
batch size), the `StepProgram` that runs it. Setting another strategy drops the programs (and their
runtime traces) of the old one; the regions of a batch size are shared by every strategy. Variables stay
the user's view of the weights: the engine pulls values back lazily (only after a step has changed them)
and pushes host assignments (`set_weights`) into the regions.
"""

from __future__ import annotations

import copy
import gc
import itertools
import logging
import time
import weakref
from collections.abc import Callable, Sequence

import numpy as np

from flexflow_keras import config as _config
from flexflow_keras.errors import GraphError, StrategyError
from flexflow_keras.execution import choice, distributed, overlap, spanning, store_budget
from flexflow_keras.execution.context import get_runtime
from flexflow_keras.execution.step import StepProgram
from flexflow_keras.execution.store import BatchStore, WeightStore
from flexflow_keras.execution.training_graph import TrainingGraph
from flexflow_keras.ops.gradients import plan_gradients
from flexflow_keras.ops.graph import OpGraph, Variable
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import Strategy, check_strategy, complete, devices_used
from kernels import conv2d
from runtime import ProcKind, TaskError

log = logging.getLogger("flexflow_keras")
# Once the regions dropped (activation stores, detached engines) come to this since the last full garbage
# collection, one runs at once, so their arrays go before the next strategy or engine allocates its own;
# a full collection costs 0.1-0.5 s, so small drops wait until they add up to this (`_collect_dropped`).
COLLECT_BYTES = 64 * 2**20
_dropped_bytes = 0  # dropped since the last collection `_collect_dropped` ran
_serial = itertools.count()
# Engine.measure's untimed steps go on until the last three lie within this ratio, at most MAX_WARM steps
SETTLED = 1.15
MAX_WARM = 8


# the step number of each inference run: random ops given training=True (Keras' MC dropout) draw a new
# mask on every predict or evaluate batch, as Keras' seed generator does
_INFERENCE_RUNS = itertools.count(1)


def steady_figure(untimed: list[float], timed: list[float]) -> float:
    """A measurement's figure: the median of its timed steps and, when the untimed ones settled (their
    last 3 within SETTLED of each other), of those 3 too: they are steady steps as well. A short fit's
    minimal check times 2 steps per degree, so one disturbed step of a shared machine moved its figure
    (the benchmark's MNIST CNN b64 trained at x1 in one run of two on a quiet machine, 2363 samples/s
    against 3966 at x2); with 5 samples it takes three disturbed steps to move the median."""
    last = untimed[-3:]
    steady = len(last) == 3 and max(last) <= SETTLED * min(last)
    return float(np.median(list(timed) + (last if steady else [])))


def settled_steps(one, steps: int, warm_s: float) -> tuple[list[float], list[float]]:
    """(untimed, timed) step seconds from `one()`: untimed steps, at least 3 and `warm_s` seconds, until
    the last 3 lie within SETTLED of each other (at most MAX_WARM), then `steps` timed ones. Timed steps
    clearly faster than the settled ones (by more than SETTLED) show that the steps had only paused on
    the way down: those count as untimed and `steps` more are timed, until the figure stops falling (at
    most MAX_WARM more steps). The MNIST CNN at x2 ran 5 steps at 35-20 ms, settled at 20, then timed 18
    and 12 ms, and went on at 11 ms: its figure of 18 chose x1, 1.6x slower, in 3 runs of 5."""
    warm, recent = 0.0, []
    while len(recent) < 3 or warm < warm_s or (
            max(recent[-3:]) > SETTLED * min(recent[-3:]) and len(recent) < MAX_WARM):
        recent.append(one())
        warm += recent[-1]
    times = [one() for _ in range(steps)]
    extra = 0
    while SETTLED * min(times) < min(recent[-3:]) and extra < MAX_WARM:
        recent += times
        extra += len(times)
        times = [one() for _ in range(steps)]
    return recent, times


def _set_blas_threads(n: int) -> None:
    from kernels import _conv_simd

    _conv_simd.set_kernel_threads(n)  # one thread: the vector GEMM; more: the multi-threaded BLAS
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # threadpoolctl is optional; the runtime's policy still applies
        return
    threadpool_limits(limits=max(1, n), user_api="blas")


def _collect_dropped(size: int) -> None:
    """Count `size` bytes of regions just dropped; run a full collection once the drops since the last one
    come to COLLECT_BYTES. Beside TensorFlow's million objects the collector's own full passes are rare, so
    left to it, the engines of 50 recompiles of a 6 MB model kept 300 MB more of the process."""
    global _dropped_bytes
    _dropped_bytes += size
    if _dropped_bytes >= COLLECT_BYTES:
        _dropped_bytes = 0
        gc.collect()


class Engine:
    """Runs the steps of one compiled model on the runtime.

    Args:
        tgraph: the training graph (model outputs and per-sample losses).
        variables: every variable of the model, in the model's weight order.
        trainable: the trainable variables.
        optimizer: the optimizer object (slot_specs, apply, learning_rate_at).
        metric_objects: per model output, the metric objects computed on it.
    """

    def __init__(self, tgraph: TrainingGraph, variables: Sequence[Variable], trainable: Sequence[Variable],
                 optimizer, metric_objects: Sequence[Sequence], strategy=None):
        self.rtm = get_runtime()
        self.name = f"engine{next(_serial)}"  # trace names are per engine: the runtime is shared
        # the runtime outlives the model: when this engine is collected, its traces' records go too
        weakref.finalize(self, self.rtm.forget_traces_later, f"{self.name}.")
        self.root = self  # the engine whose weights this one trains (another for a shape variant: `variant`)
        self._variants = itertools.count(1)
        self.tgraph = tgraph
        self.optimizer = optimizer
        self.metric_objects = [list(m) for m in metric_objects]
        self.trainable_uids = {v.uid for v in trainable}
        in_graph = {v.uid for v in tgraph.graph.variables}
        given = {v.uid for v in variables}
        # the model's weight order first, then variables only the graph knows (constants of ops)
        self.variables = [v for v in variables if v.uid in in_graph] + [
            v for v in tgraph.graph.variables if v.uid not in given]
        distributed.agree_weights(self.variables)  # under MPI: rank 0's initial values everywhere
        self.weights = WeightStore(self.rtm, self.variables, self.trainable_uids, optimizer)
        machine = self.rtm.machine
        self.proc_kind = ProcKind.GPU if machine.processors(ProcKind.GPU) else ProcKind.CPU
        self.processors = machine.processors(self.proc_kind)
        self._shape_state(tgraph)
        self._dirty = False
        self.planned_steps: int | None = None  # set by fit: the steps it will train (bounds the search cost)
        # the strategy was set without measuring anything (a fit too short for a search or a trial): the
        # next fit chooses again (a warm-up fit of 2 steps must not decide for the long fit after it)
        self.provisional = False
        self.planned_run: str | None = None  # what those steps are, for the search's log (None: a fit)
        self.code_strategy: Strategy | None = strategy  # given in code (compile(strategy=...))
        self.attach()

    def _shape_state(self, tgraph: TrainingGraph) -> None:
        """Everything an engine holds for its own input shapes: the graph, its gradient plan, tasks,
        activation regions, recorded steps and strategy. A shape variant (`variant`) sets it anew and
        shares the rest (weights, optimizer slots, metrics, processors) with its root: state added to an
        engine belongs here unless variants are to share it."""
        self.tgraph = tgraph
        seeds = {t.uid for t in tgraph.per_sample_losses if t is not None}
        self.grad_plan = plan_gradients(tgraph.graph, seeds, self.root.trainable_uids)
        # in the training graph's order: a store's buffers are shared out by the spans of its training
        # program (execution/buffer_reuse.py), which hold for a program issuing the same nodes in that order
        order = {n.uid: k for k, n in enumerate(tgraph.graph.nodes)}
        self.predict_nodes = OpGraph(tgraph.model_inputs, tgraph.model_outputs).nodes
        self.predict_in_train_order = all(n.uid in order for n in self.predict_nodes)
        if self.predict_in_train_order:  # (else no activation shares a buffer)
            self.predict_nodes = sorted(self.predict_nodes, key=lambda n: order[n.uid])
        self.node_names = node_names(tgraph.graph)
        self.layout_procs = self.processors  # every node's processors when the strategy spans nodes
        self.spanning: spanning.Spanning | None = None
        self._tasks: dict[tuple, object] = {}
        self._stores: dict[int, BatchStore] = {}
        self._programs: dict[tuple[str, int], StepProgram] = {}
        self.strategy: Strategy | None = None
        self._strategy_serial = itertools.count()
        self._strategy_id = 0
        self._adopted = None  # the root's strategy this variant last took (adopt_root_strategy)
        self.trial = None  # a short fit's degree trial over its first steps (execution/trial.py)
        self.warm_steps = 3  # untimed steps the last measure() needed before its step settled

    def attach(self) -> None:
        """Route the variables' reads and assignments to this engine (at its start, and for fit's engine
        again after a validation at other input shapes had its own engine: models/training_fit.py): those
        its steps write (`written_uids`) and those no other engine holds.

        A variable it only reads that another model's engine holds (a GAN's frozen discriminator in the
        combined model) stays with that engine, and this one brings its copy up to date each time it is
        handed out (models/training.py `_current_weights`): were it taken, the discriminator's own
        train_on_batch would take it back at once, and each call of either model would copy it twice."""
        written = self.written_uids()
        for v in self.variables:
            if v.uid not in written and v._sync_hook is not None and not self.holds(v):
                # a host assignment (set_weights, a callback's assign) reaches this copy too: the holder's
                # push does it (`_push_assigned`), as the hand-out would, for the steps of a fit under way
                v.__dict__.setdefault("_ff_copies", weakref.WeakSet()).add(self.weights)
                continue
            v._sync_hook = self._pull
            v._on_assign = (lambda var: (lambda: self._push_assigned(var)))(v)

    def _push_assigned(self, v: Variable) -> None:
        """Copy a host assignment of `v` into this engine's region and every other engine's copy of it
        (the training engines that only read it: `attach`)."""
        self.weights.push(v)
        for store in tuple(v.__dict__.get("_ff_copies", ())):
            if store is not self.weights:
                store.push(v)

    def written_uids(self) -> frozenset:
        """The variables a step of this engine (or of a shape variant of it) may write: the trainable ones
        (the optimizer's updates), every weight of a node that folds statistics into its state
        (BatchNormalization's moving averages) and a stateful recurrent layer's kept states."""
        root = self.root
        written = root.__dict__.get("_written_uids")
        if written is None:
            uids = set(root.trainable_uids)
            for node in root.tgraph.graph.nodes:
                if node.weights and node.op.stats_specs([t.spec for t in node.inputs],
                                                        [w.spec for w in node.weights], True):
                    uids.update(w.uid for w in node.weights)
                uids.update(v.uid for v in getattr(node, "kept_states", None) or ())
            written = root.__dict__["_written_uids"] = frozenset(uids)
        return written

    def variant(self, tgraph: TrainingGraph) -> Engine:
        """An engine for the same model at other input shapes (a dataset whose batches change length,
        models/shape_variants.py): it shares this engine's weights, optimizer slots, metrics and strategy,
        and has its own graph, tasks, activation regions and programs.

        Raises:
            GraphError: the graph at these shapes has trainable variables the first one did not.
        """
        root = self.root
        extra = [v for v in tgraph.graph.variables if v.uid not in root.weights.value]
        trained = [v.name for v in extra if v.trainable]
        if trained:
            raise GraphError(f"The model's graph at these input shapes holds weights its first graph did not "
                             f"({', '.join(trained[:4])}), so it cannot share that graph's weights. Give every "
                             f"batch one shape (pad the dataset to one length).")
        for v in extra:  # constants recorded again at these shapes (a loss's array)
            root.weights.add_constant(v)
        v = copy.copy(root)
        v.__dict__.pop("_reducers", None)  # under MPI: its own reducers' communicators (freed by `release`)
        v.name = f"{root.name}.v{next(root._variants)}"
        v._shape_state(tgraph)
        return v

    def adopt_root_strategy(self) -> None:
        """A shape variant trains under its root's strategy (set again when the root's changed: a short
        fit's degree trial); ops it names that do not fit these shapes run data parallel at the degree the
        strategy uses."""
        root = self.root
        if self is root or self._adopted is root.strategy or root.strategy is None:
            return
        degree = devices_used(root.strategy, len(self.processors))
        try:
            self.set_strategy(root.strategy, degree)
        except StrategyError:
            self.set_strategy(self.data_parallel(degree).with_source(f"{root.strategy.source}, as data parallelism"))
        self._adopted = root.strategy

    def release(self) -> None:
        """Drop this shape variant's programs, traces and activation regions (the weights stay its root's)."""
        for prog in self._programs.values():
            self.rtm.forget_trace(prog.trace_name)
        self._programs.clear()
        self._drop_stores()
        self.strategy, self._adopted = None, None
        distributed.release(self)  # collective: every rank evicts the same variants in the same order

    # --- weights ------------------------------------------------------------------------------------------
    @property
    def _dirty(self) -> bool:
        """Whether a step changed the weights since the host last read them (shared with shape variants)."""
        return self.root._weights_changed

    @_dirty.setter
    def _dirty(self, value: bool) -> None:
        self.root._weights_changed = value

    def _pull(self, _v: Variable) -> None:
        if self._dirty:
            self._dirty = False
            self.weights.pull_many([v for v in self.variables if self.holds(v)])

    def sync_to_host(self) -> None:
        """Copy every variable's value from the runtime into its host value."""
        self._pull(None)

    def holds(self, v) -> bool:
        """Whether reads of variable `v` go through this engine (or a shape variant of it: they share the
        weights), not through another model's engine that shares the layer."""
        holder = getattr(v._sync_hook, "__self__", None)
        return holder is not None and getattr(holder, "weights", None) is self.weights

    def detach(self) -> None:
        """Hand the variables back to the host and drop this engine's traces, so its regions can be
        freed (called when the model is recompiled)."""
        self.sync_to_host()
        for v in self.variables:
            copies = v.__dict__.get("_ff_copies")
            if copies is not None:
                copies.discard(self.weights)
            if getattr(v._sync_hook, "__self__", None) is not None and not self.holds(v):
                continue  # another model's engine holds these shared variables: its values stay theirs
            v._sync_hook = None
            v.__dict__.pop("_on_assign", None)  # back to Variable's own no-op hook
        for prog in self._programs.values():
            self.rtm.forget_trace(prog.trace_name)
        self._programs.clear()
        # weights, their gradients and up to two optimizer slots each, and the activations
        size = 4 * sum(int(np.prod(v.shape, dtype=np.int64)) * np.dtype(v.dtype).itemsize for v in self.variables)
        size += sum(st.nbytes() for st in self._stores.values())
        self._stores.clear()
        distributed.release(self)  # under MPI: the reducers' communicators
        # the runtime's task records and region states reference each other: collect the cycles so the
        # regions' arrays (weights, activations, reduction buffers) go back to the system, once enough has
        # been dropped to matter (a script that predicts before compiling, or recompiles, detaches an engine)
        _collect_dropped(size)

    # --- programs -------------------------------------------------------------------------------------------
    def cached(self, key: tuple, build: Callable, *args):
        """The task for `key`, made by `build(*args)` the first time (tasks are per engine)."""
        t = self._tasks.get(key)
        if t is None:
            t = self._tasks[key] = build(*args)
        return t

    def set_strategy(self, strategy: Strategy, fill_degree: int = 1) -> Strategy:
        """Check `strategy` against the graph and the machine, fill the ops it does not name with data
        parallelism of `fill_degree`, and run every later step under it. Returns the completed strategy.

        Raises:
            StrategyError: naming the op and what does not fit.
        """
        graph = self.tgraph.graph
        if not any(t is not None for t in self.tgraph.per_sample_losses):
            # an engine for predict has no loss ops: a training strategy's loss entries do not apply
            known = set(self.node_names.values())
            strategy = Strategy({k: v for k, v in strategy.configs if k in known or not k.startswith("loss")},
                                strategy.source)
        world = distributed.world()
        n_all = len(self.processors) * (world.size if world is not None else 1)  # devices of every node
        check_strategy(graph, strategy, n_all, self.proc_kind.value)
        full, missing = complete(graph, strategy, fill_degree, len(self.processors))
        if missing and len(missing) < len(graph.nodes):
            log.info("strategy (%s) does not name %d op(s), which run data parallel (degree %d): %s",
                     strategy.source, len(missing), fill_degree, ", ".join(missing))
        if self.strategy is not None and full == self.strategy:
            return self.strategy
        for prog in self._programs.values():
            self.rtm.forget_trace(prog.trace_name)
        self._programs.clear()
        self._drop_stores()
        self.strategy = full
        self._strategy_id = next(self._strategy_serial)
        self.spanning, self.layout_procs = None, self.processors
        if world is not None and spanning.spans_nodes(full, len(self.processors)):
            self.spanning = spanning.Spanning(self.rtm, world, self.processors)
            self.layout_procs = spanning.global_processors(self.processors, world)
            log.info("strategy (%s) places pieces on %d nodes: run across them as given", full.source, world.size)
        self._apply_thread_policy(devices_used(full, len(self.processors)))
        return full

    def data_parallel(self, degree: int) -> Strategy:
        return Strategy.data_parallel(self.tgraph.graph, degree, len(self.processors))

    def _drop_stores(self) -> None:
        """Let the activation regions of every batch size go (a new strategy cuts them into other pieces:
        the old pieces' instances would stay allocated beside the new ones, and after a search the
        buffers of every candidate measured would stay with the winner's)."""
        if self._stores:
            size = sum(st.nbytes() for st in self._stores.values())
            self._stores.clear()
            conv2d.release_workspaces()  # scratch arrays sized for the old strategy's pieces
            _collect_dropped(size)  # task records and region states reference each other: cycles

    def _store(self, batch: int) -> BatchStore:
        store = self._stores.get(batch)
        if store is None:
            store = self._stores[batch] = BatchStore(self.rtm, batch)
        return store

    def program(self, mode: str, batch: int, global_batch: int | None = None,
                across_ranks: bool = False) -> StepProgram:
        key = (mode, batch, global_batch, across_ranks)
        prog = self._programs.get(key)
        if prog is None:
            store_budget.make_room(self, batch)  # other batch sizes' stores go if this one would not fit
            prog = self._programs[key] = StepProgram(self, mode, batch, self._store(batch), self.strategy,
                                                     self._strategy_id, global_batch, across_ranks)
        store_budget.touch(self._stores, batch)
        return prog

    # --- steps ----------------------------------------------------------------------------------------------
    def train_step(self, sources, rows: np.ndarray, step: int, seed: int):
        """One training step on `rows` of `sources`. Returns (loss per output, metric stats, penalty)."""
        got = self.collect_train(self.issue_train(sources, rows, step, seed, wait=not overlap.enabled()))
        overlap.raise_device_failures(wait=True)  # a bad label a GPU kernel recorded (kernels/gpu/checks.py)
        return got

    def issue_train(self, sources, rows: np.ndarray, step: int, seed: int, wait: bool = False):
        """Issue one training step; `collect_train` gives its results. Without `wait` the host returns as
        soon as the step is issued (execution/overlap.py), so it issues the next step while the
        processors run this one; the runtime orders the steps by their privileges. `wait=True`: the
        step's tasks have finished when this returns (a failure raises here)."""
        self.prepare_strategy(sources, rows, seed)  # first: whether it spans the nodes decides the shard
        trial = self.trial
        if trial is not None:  # a short fit's first steps, each timed under the degree it tries
            trial.before()
            wait = True
        mine = None if self.spanning else distributed.shard_rows(rows)  # under MPI: this rank's shard of the global batch
        local = rows if mine is None else mine
        opt = self.optimizer
        iteration = opt._iterations  # training steps so far (iterations counts updates under accumulation)
        lr = float(opt.learning_rate_at(iteration))
        t0 = time.perf_counter() if trial is not None else 0.0  # (timed only while a trial runs)
        prog = self.program("train", len(local), len(rows), mine is not None)
        fm, pen = prog.run(sources, local, step, seed, iteration, lr, wait=wait)
        opt._iterations = iteration + 1
        self._dirty = True
        if trial is not None:
            trial.after(len(rows), time.perf_counter() - t0)
        return prog, fm, pen, prog.last_nodes

    def prepare_strategy(self, sources, rows: np.ndarray, seed: int, again: bool = False) -> Strategy:
        """Choose the training strategy now if none is set (see execution/choice.py), or with `again` (a
        fit's start) if the one set was provisional; `rows` is the global batch (under MPI the choice plans
        this rank's shard of it)."""
        if self.strategy is None or (again and self.provisional):
            self.provisional = False  # (a choice of the same strategy keeps its programs and regions)
            choice.choose(self, self.code_strategy, sources, rows, seed)
            distributed.agree_strategy(self)
        return self.strategy

    def collect_train(self, handle):
        """(loss per output, metric stats, penalty) of a step `issue_train` issued (waits for them). A
        failed step raises its first failing task's error, as a waiting step does."""
        prog, fm, pen, nodes = handle
        try:
            penalty = sum(float(v) for fmap in pen for v in fmap.get())
            got = self._collect(prog, fm) + (penalty,)
        except TaskError:
            overlap.raise_first_failure(self.rtm, nodes)  # the root failure, with its processor
            raise
        overlap.check_step(self.rtm, nodes)  # a failed task the results do not depend on
        return got

    def eval_step(self, sources, rows: np.ndarray, seed: int = 0):
        """Forward in inference mode with losses and metrics. Returns (loss per output, metric stats)."""
        if self.strategy is None:
            self.set_strategy(self.code_strategy or self.data_parallel(self.default_degree()), self.default_degree())
        mine = None if self.spanning else distributed.shard_rows(rows)  # under MPI: this rank's shard, partial sums gathered
        local = rows if mine is None else mine
        prog = self.program("eval", len(local), len(rows), mine is not None)
        fm, _ = prog.run(sources, local, next(_INFERENCE_RUNS), seed)
        got = self._collect(prog, fm)
        overlap.raise_device_failures(wait=True)
        return got

    def predict_step(self, sources, rows: np.ndarray) -> list[np.ndarray]:
        if self.strategy is None:
            self.set_strategy(self.code_strategy or self.data_parallel(self.default_degree()), self.default_degree())
        mine = None if self.spanning else distributed.shard_rows(rows)  # under MPI: this rank's shard, outputs gathered
        local = rows if mine is None else mine
        prog = self.program("predict", len(local), len(rows), mine is not None)
        prog.run(sources, local, next(_INFERENCE_RUNS), 0)
        out = prog.outputs()
        overlap.raise_device_failures(wait=True)
        return out

    def _collect(self, prog: StepProgram, fm):
        n = len(prog.loss_outputs)
        losses = [0.0] * n
        stats: list[list[np.ndarray]] = [[None] * len(self.metric_objects[i]) for i in prog.loss_outputs]
        if fm is None:
            return losses, stats
        parts = fm.get()
        if prog.across_ranks:
            parts = distributed.gather_parts(parts)  # every rank's shards, in rank order
        for part in parts:
            for k in range(n):
                losses[k] += part[k]
            pos = n
            for k, i in enumerate(prog.loss_outputs):
                for j in range(len(self.metric_objects[i])):
                    s = np.asarray(part[pos])
                    stats[k][j] = s if stats[k][j] is None else stats[k][j] + s
                    pos += 1
        return losses, stats

    # --- data-parallel degree ---------------------------------------------------------------------------
    def machine_summary(self) -> dict:
        """The machine a strategy file records: GPUs and CPUs of this process's machine, and nodes."""
        m = self.rtm.machine
        return {"gpus": len(m.processors(ProcKind.GPU)), "cpus": len(m.processors(ProcKind.CPU)),
                "nodes": m.nodes}

    def default_degree(self) -> int:
        cfg = _config.get()
        if cfg.data_parallel_degree:
            return cfg.data_parallel_degree
        if cfg.gpus:
            return cfg.gpus
        return 1

    def _apply_thread_policy(self, used: int) -> None:
        """BLAS threads per processor: the free cores over the processors the strategy keeps busy, so the
        pieces running at once never ask for more threads than there are cores nobody else holds (a
        multi-threaded GEMM whose threads share a core with another process slows down many times
        over; runtime/cpuload.py)."""
        self._busy_procs = used
        if self.proc_kind is ProcKind.CPU:
            _set_blas_threads(max(1, self.rtm.policy.free // max(1, used)))

    def refresh_threads(self) -> None:
        """Re-read the cores other processes leave free (at the start of a fit and of every epoch, when
        no kernel runs) and resize the BLAS threads if the figure changed; logged when it differs from
        the cores there are."""
        if self.proc_kind is not ProcKind.CPU:
            return
        policy = self.rtm.policy
        before = policy.free
        free = policy.refresh_free()
        if free != before:
            if free < policy.cores:
                log.info("other processes keep %.1f of %d cores busy: kernels use the %d free core(s)",
                         policy.load.others, policy.cores, free)
            else:
                log.info("all %d cores are free again: kernels use them", policy.cores)
            if self.strategy is not None:
                self._apply_thread_policy(getattr(self, "_busy_procs", 1))

    # --- measuring strategies (the search's calibration) ------------------------------------------------
    def measure(self, strategy: Strategy, sources, rows: np.ndarray, seed: int, steps: int = 5,
                warm_s: float = 0.2) -> float:
        """Median seconds of a training step under `strategy` (after untimed steps that record the
        trace, place the data and let the step settle: at least 3 and `warm_s` seconds; see
        `steady_figure` for the steps the median counts), measured with the
        next update's learning rate (a zero one divided by zero in Ftrl's update); the weights and optimizer
        slots are restored afterwards, and the previous strategy is set again."""
        previous = self.strategy
        snapshot = self._snapshot()
        iteration0 = self.optimizer._iterations if self.optimizer is not None else 0
        lr = self.optimizer.learning_rate_at(iteration0) if self.optimizer is not None else 0.0
        self.set_strategy(strategy)
        prog = self.program("train", len(rows))
        times = []

        def one() -> float:
            t0 = time.perf_counter()
            fm, pen = prog.run(sources, rows, 0, seed, iteration0, lr)
            if fm is not None:
                fm.get()
            for f in pen:
                f.get()
            return time.perf_counter() - t0

        try:
            # untimed: at least 3 steps and 0.2 s (small models' steps settle only after a few dozen), and
            # until the last 3 lie within SETTLED of each other (at most MAX_WARM): after a change of degree
            # the first steps run slowly (the MNIST CNN at x2: 25-35 ms for 5 steps, then 13 ms), and timing
            # them chose x1 for a short fit where x2 trains 1.7x faster
            recent, times = settled_steps(one, steps, warm_s)
            self.warm_steps = len(recent)  # what settling took: the effort tiers' cost estimate reads it
            if log.isEnabledFor(logging.DEBUG):  # the step lists are formatted only when the line shows
                log.debug("measured %s: untimed %s, timed %s ms", strategy.source,
                          " ".join(f"{t * 1e3:.1f}" for t in recent), " ".join(f"{t * 1e3:.1f}" for t in times))
        finally:
            self._restore(snapshot)
            if previous is not None:
                self.set_strategy(previous)
            else:
                self.strategy = None
                for p in self._programs.values():
                    self.rtm.forget_trace(p.trace_name)
                self._programs.clear()
        return steady_figure(recent, times)

    def _snapshot(self):
        self.sync_to_host()
        return ([v._value.copy() for v in self.variables], self.weights.read_slots())

    def _restore(self, snapshot) -> None:
        values, slots = snapshot
        for v, val in zip(self.variables, values, strict=True):
            v._value[...] = val
            self.weights.push(v)
        self.weights.write_slots(slots)
        self._dirty = False
