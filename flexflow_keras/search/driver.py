"""The search as the training loop runs it: candidates, the winner, the table that explains it.

`search(problem, machine, ...)` scores, under one simulator: data parallelism at every degree, the expert
strategies (`experts.py`), and then either every strategy of the space, where it is small enough to
enumerate (`exact.py`; the optimum, so no walk is needed), or the dynamic program where the graph is
series-parallel (`exact.py`) and the MCMC walk from the best data-parallel strategy (`mcmc.py`).
Strategies over a memory's capacity are rejected; when none fits, a StrategyError gives the
smallest peak found and the flag to raise. A strategy other than data parallelism wins only when
predicted at least `margin` (3%) faster than the best data-parallel degree. The result carries a table
(predicted step time, samples/s, peak memory, which wins and by how much) for the log.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

from flexflow_keras.errors import StrategyError
from flexflow_keras.ops.strategy import Strategy
from flexflow_keras.search import exact, experts, mcmc, space
from flexflow_keras.search.calibrate import calibrate
from flexflow_keras.search.costs import CACHE_BYTES, CostModel
from flexflow_keras.search.machine import MachineModel
from flexflow_keras.search.simulator import Simulator

log = logging.getLogger("flexflow_keras")
MARGIN = 0.03
MB = 1 << 20


@dataclass(frozen=True)
class Problem:
    """What is searched: the training graph, its loss seeds and trainable variables, the batch, the
    optimizer (whose update is timed) and its slot count."""

    graph: object
    seeds: frozenset
    trainable: frozenset
    batch: int
    optimizer: object = None
    n_slots: int = 0


@dataclass
class Row:
    label: str
    strategy: Strategy
    step_time: float
    peak: int
    fits: bool


@dataclass
class SearchResult:
    """The winner and everything compared (for the log and the benchmarks)."""

    strategy: Strategy
    step_time: float
    rows: list[Row]
    best_dp: Row
    seconds: float
    evaluations: int
    machine: MachineModel
    batch: int
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        """The comparison as text: predicted ms/step, samples/s, peak MB, and the winner's margin."""
        lines = [f"{'strategy':58} {'ms/step':>9} {'samples/s':>10} {'peak MB':>9}"]
        every = self.batch * self.machine.replicas  # under MPI every node trains `batch` rows of the step
        for r in sorted(self.rows, key=lambda r: r.step_time):
            mark = " <- chosen" if r.strategy == self.strategy else ""
            t = f"{r.step_time * 1e3:9.3f}" if math.isfinite(r.step_time) else "      inf"
            sps = f"{every / r.step_time:10.0f}" if r.step_time > 0 and math.isfinite(r.step_time) else " " * 10
            fit = "" if r.fits else " (over capacity)"
            lines.append(f"{r.label[:58]:58} {t} {sps} {r.peak / MB:9.1f}{fit}{mark}")
        gain = self.best_dp.step_time / self.step_time if self.step_time > 0 else 1.0
        lines.append(f"winner: {self.strategy.source}, {gain:.2f}x the best data parallelism "
                     f"({self.best_dp.label}); searched in {self.seconds:.1f} s, {self.evaluations} simulations")
        lines.extend(self.notes)
        return "\n".join(lines)


def degrees(n: int) -> list[int]:
    return sorted(set(space.piece_counts(n)))


def search(problem: Problem, machine: MachineModel, budget: int = 1000, alpha: float = 0.05, seed: int = 0,
           costs: CostModel | None = None, enumerate_limit: int = 4096, margin: float = MARGIN,
           use_mcmc: bool = True, use_dp: bool = True, dp_only: bool = False, anchors=None) -> SearchResult:
    """Search the strategy for `problem` on `machine` (see the module docstring). `dp_only`: compare the
    data-parallel degrees only; a higher degree wins only when `margin` faster than every lower one.
    `anchors`: (one-processor strategy, its measured step s, all-processor strategy, its measured step s)
    to calibrate the simulator with (`calibrate.py`)."""
    t0 = time.perf_counter()
    costs = costs or CostModel(machine, problem.optimizer)
    elementwise = getattr(problem.optimizer, "elementwise", True) if problem.optimizer is not None else True
    sim = Simulator(problem.graph, machine, costs, problem.batch, problem.trainable, problem.seeds,
                    problem.n_slots, elementwise_update=elementwise)
    notes = []
    costs.cold = _footprint(problem) > CACHE_BYTES
    if anchors is not None:
        fit = calibrate(sim, *anchors)
        notes.append(f"simulator calibrated on measured steps: {fit['py_task'] * 1e6:.1f} us of Python per task, "
                     f"kernels x{costs.contention:.2f} when processors run at once")
        log.debug("calibration: %s", fit)
    rows: list[Row] = []

    def score(label: str, s: Strategy) -> Row:
        r = sim.simulate(s)
        row = Row(label, s, r.step_time, r.peak, r.fits)
        rows.append(row)
        return row

    dps = [score(f"data parallel x{d}", Strategy.data_parallel(problem.graph, d, machine.n))
           for d in degrees(machine.n) if d <= problem.batch]
    fitting = [r for r in dps if r.fits]
    if dp_only:
        return _dp_only(dps, margin, problem, machine, costs, sim, t0, notes)
    for s in experts.expert_strategies(problem.graph, machine.n):
        score(s.source, s)
    spaces = {sim.names[n.uid]: space.config_space(n, machine.n, problem.batch) for n in problem.graph.nodes}
    start = min(fitting, key=lambda r: r.step_time) if fitting else dps[0]
    if machine.n > 1:
        found = exact.enumerate_all(sim, spaces, enumerate_limit)
        if found is not None:
            if found[0] is not None:
                score(found[0].source, found[0])
            notes.append(f"all {exact.space_size(spaces)} strategies of the space simulated (the exhaustive "
                         f"optimum): no MCMC walk or dynamic program needed")
        else:
            if use_dp:
                dp = exact.dynamic_program(sim, spaces)
                if dp is not None:
                    score(dp[0].source, dp[0])
                else:
                    notes.append("dynamic program skipped: the graph is not series-parallel, or its edge tables "
                                 "are too large")
            if use_mcmc and budget > 0:
                walk = mcmc.mcmc(sim, start.strategy, spaces, budget, alpha, seed)
                score(f"search (MCMC, {walk.iterations} proposals, {walk.accepted} accepted)", walk.strategy)
    costs.save()
    ok = [r for r in rows if r.fits]
    if not ok:
        raise _nothing_fits(rows, machine, "strategy", "use more devices, or a smaller batch (-b)")
    best_dp = min((r for r in dps if r.fits), key=lambda r: r.step_time, default=None)
    best = min(ok, key=lambda r: r.step_time)
    if best_dp is not None and best not in dps and best.step_time > (1.0 - margin) * best_dp.step_time:
        notes.append(f"the best other strategy ({best.label}, {best.step_time * 1e3:.3f} ms) is less than "
                     f"{margin:.0%} faster than {best_dp.label}: data parallelism kept")
        best = best_dp
    if best_dp is None:
        best_dp = best
    winner = best.strategy if best.strategy.source != "code" else best.strategy.with_source(best.label)
    for r in rows:
        if r is best:
            r.strategy = winner
    if costs.fallbacks:
        notes.append(f"cost model: {costs.fallbacks} piece(s) estimated by the calibrated roofline (measuring "
                     f"budget of {costs.budget_s:.0f} s spent)")
    return SearchResult(winner, best.step_time, rows, best_dp, time.perf_counter() - t0, sim.evaluations,
                        machine, problem.batch, notes)


def _dp_only(dps, margin, problem, machine, costs, sim, t0, notes) -> SearchResult:
    costs.save()
    fitting = [r for r in dps if r.fits]
    if not fitting:
        raise _nothing_fits(dps, machine, "data-parallel degree",
                            "or drop --only-data-parallel to let the search split the model")
    best = lowest_clearly_fastest(fitting, lambda r: r.step_time, margin)
    return SearchResult(best.strategy, best.step_time, list(dps), best, time.perf_counter() - t0,
                        sim.evaluations, machine, problem.batch, notes)


def _footprint(problem: Problem) -> int:
    """Bytes a step touches: activations and their gradients, weights with gradients and slots."""
    import numpy as np

    from flexflow_keras.ops.graph import batch_rows

    total = 0
    for node in problem.graph.nodes:
        for t in node.outputs:
            shape = [batch_rows(t, problem.batch) if d is None else int(d) for d in t.shape]
            total += 2 * int(np.prod(shape)) * np.dtype(t.dtype).itemsize
    for v in problem.graph.variables:
        mult = 2 + problem.n_slots if v.uid in problem.trainable else 1
        total += mult * int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize
    return total


def lowest_clearly_fastest(items, time_of, margin: float = MARGIN, noise_of=None):
    """Of `items` in increasing order of degree, the lowest whose time no higher one beats by `margin`:
    a higher degree wins only when `margin` faster than every lower one, so a noisy figure cannot move
    the choice to a degree that is barely (or not really) faster. `noise_of(item)`, when given, is the
    relative spread of an item's repeated measurements: the lead must also exceed both items' spreads."""
    def noise(item) -> float:
        return 0.0 if noise_of is None else float(noise_of(item) or 0.0)

    best = items[0]
    for i, item in enumerate(items[1:], 1):
        if all(time_of(item) < (1.0 - margin - noise(item) - noise(lower)) * time_of(lower) for lower in items[:i]):
            best = item
    return best


def _nothing_fits(rows, machine: MachineModel, what: str, advice: str) -> StrategyError:
    smallest = min(rows, key=lambda r: r.peak)
    if not machine.present:
        raise_it = "raise the devices' capacity_gb in the machine file"
    else:
        raise_it = "raise " + ("-ll:fsize" if machine.kind == "GPU" else "-ll:csize")
    return StrategyError(f"No {what} fits the memory of {machine.describe()}: the smallest peak found is "
                         f"{smallest.peak / MB:.0f} MB per memory ({smallest.label}). To fix: {raise_it}, "
                         f"{advice}.")
