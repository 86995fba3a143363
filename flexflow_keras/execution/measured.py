"""Measured steps around the search, on this machine: the simulator's calibration anchors and the check
of its choice.

The simulator predicts; on the machine that will train, a few real steps keep it honest. Before the
search, data parallelism on one processor and on all of them is measured (the calibration anchors,
search/calibrate.py). After it, the predicted winner, the three strategies predicted fastest that are
not data parallelism, and every data-parallel degree are measured too. Each measurement: untimed steps
(at least 3 and 0.2 s, and until the last 3 lie within 15% of each other, at most 8), then the median of 9
(and of those last 3, when they settled), at a zero learning rate, the weights restored; strategies
are measured in 2 interleaved rounds and keep their better round, so a passing disturbance does not
decide. The measured fastest trains, with two margins: a higher data-parallel degree only when measured
at least 3% faster than every lower one, and a strategy other than data parallelism only when measured
at least 3% faster than the best data parallelism measured. Either lead must also exceed how far the two
figures' own rounds lie apart (their spread): on a machine whose steps vary by 5% from round to round, a
3% lead is noise, and the choice would take turns from run to run. So a misprediction costs a few steps,
never a slower training, and the same command on the same machine makes the same choice. A short
fit's light and minimal checks (effort_for) time fewer steps and need a wider margin, and they too
measure every data-parallel degree in two interleaved rounds.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from flexflow_keras.ops.strategy import devices_used
from flexflow_keras.search.costs import release_scratch
from flexflow_keras.search.driver import MARGIN, Row, SearchResult, lowest_clearly_fastest, search
from flexflow_keras.search.machine import MachineModel

log = logging.getLogger("flexflow_keras")
STEPS = 9
ROUNDS = 2
# The measured phase may cost at most this share of the training it chooses for (a fit's planned steps).
MEASURE_SHARE = 0.10
# The probe that sizes the measured phase: 3 untimed steps and 1 timed (effort_for).
PROBE_STEPS = 4


@dataclass(frozen=True)
class Effort:
    """How much the measured phase measures: interleaved rounds per strategy, timed steps, untimed
    warm-up seconds (after at least 3 steps), and how many predicted non-data-parallel strategies the
    check measures beside the winner and the data-parallel degrees."""

    rounds: int = ROUNDS
    steps: int = STEPS
    warm_s: float = 0.2
    others: int = 3
    name: str = "full"
    margin: float = 0.0  # the least margin a choice other than the lowest data parallelism needs

    def cost(self, step_s: float, strategies: int, warm_steps: int = 3) -> float:
        """Seconds to measure `strategies` strategies whose steps take about `step_s`, each after
        `warm_steps` untimed steps (at least 3: what the probe needed to settle, Engine.measure)."""
        return strategies * self.rounds * (max(max(3, warm_steps) * step_s, self.warm_s) + self.steps * step_s)


FULL = Effort()
# A light check's 3 steps are noisier than the full one's median of 9 over 2 rounds: leaving the lowest
# data-parallel degree needs a 15% lead, so noise cannot make the choice flip between runs.
LIGHT = Effort(rounds=1, steps=3, warm_s=0.0, others=1, name="light", margin=0.15)
# Data parallelism on every processor against the probe's x1, 2 steps, no simulated search: the least that
# still finds the cores a model with single-threaded kernels (convolutions) needs.
MINIMAL = Effort(rounds=2, steps=2, warm_s=0.0, others=0, name="minimal", margin=0.15)


def effort_for(engine, machine: MachineModel, sources, rows, seed: int, planned_steps: int | None):
    """(effort, the probe's dp x1 step seconds or None): FULL when its cost is at most MEASURE_SHARE of
    `planned_steps` steps (or when they are unknown), else LIGHT, else MINIMAL when that fits, else None:
    the fit is too short for measuring to pay back. The probe is one step of data parallelism x1 after 3
    untimed (PROBE_STEPS); a fit too short to pay even for the probe (under 20 steps) is not probed."""
    if planned_steps is None or not machine.present or machine.n < 2:
        return FULL, None
    if PROBE_STEPS > 2 * MEASURE_SHARE * planned_steps:  # the probe alone would cost more than any tier may
        return None, None
    t1 = engine.measure(engine.data_parallel(1), sources, rows, seed, steps=1, warm_s=0.0)
    warm = getattr(engine, "warm_steps", 3)  # the other strategies' steps settle about as the probe's did
    budget = MEASURE_SHARE * planned_steps * t1
    n_dp = int(math.log2(min(machine.n, len(rows)))) + 1  # the degrees 1, 2, 4, ... measured
    for effort in (FULL, LIGHT):  # a one-round check measures the data-parallel degrees twice (check)
        again = n_dp if effort.rounds == 1 else 0
        if effort.cost(t1, n_dp + again + 1 + effort.others, warm) <= budget:
            return effort, t1
    # MINIMAL may take twice the share: a degree that leads by its margin repays its steps within the fit
    # (with one sample a step there is no other degree to measure). Its cost: every degree but the probe's
    # x1 in round 1, every degree in round 2 (minimal_choice).
    minimal = MINIMAL.cost(t1, 2 * n_dp - 1, warm) / MINIMAL.rounds
    return (MINIMAL, t1) if n_dp > 1 and minimal <= 2 * budget else (None, t1)


def minimal_choice(engine, machine: MachineModel, sources, rows, seed: int, t1: float):
    """MINIMAL: (the lowest data-parallel degree that is clearly fastest, with MINIMAL's margin; its degree;
    the log line). Round 1 is the probe's x1 (`t1`) and the higher degrees measured upwards until one is no
    faster than every lower one (its steps cost most); round 2 measures every degree again, interleaved, and
    each keeps its better figure (the upward scan goes on where a degree now leads). When round 2 changed
    the verdict, a third round decides (MINIMAL_ROUNDS).

    Two rounds whatever round 1 said: its figures are of 2 steps, and one disturbance on a shared machine
    moves a figure either way by far more than the margin. On the benchmark's MNIST CNN b64, with other
    processes starting now and then, x2 (21 ms a step in training) read 40.7 ms against x1's 32.0: x1,
    1.4x slower, trained for the whole fit; a disturbed x1 would as well have sent an MLP whose x2 is
    twice as slow to x2. A second round costs what the first did (a few steps per degree)."""
    n = min(machine.n, len(rows))
    by_degree = {1: engine.data_parallel(1)}
    times = {1: t1}

    def measure(d: int) -> None:
        s = by_degree.setdefault(d, engine.data_parallel(d))
        t = engine.measure(s, sources, rows, seed, steps=MINIMAL.steps, warm_s=0.0)
        times[d] = min(times.get(d, t), t)

    def upward() -> None:  # higher degrees while the highest measured is faster than every lower one
        d = max(times)
        while 2 * d <= n and (d == 1 or times[d] < min(t for k, t in times.items() if k < d)):
            d *= 2
            measure(d)

    def verdict() -> int:
        return lowest_clearly_fastest(sorted(times), times.get, MINIMAL.margin)

    upward()
    verdicts = [verdict()]
    while len(verdicts) < MINIMAL.rounds or (verdicts[-1] != verdicts[-2] and len(verdicts) < MINIMAL_ROUNDS):
        for d in sorted(times):
            measure(d)
        upward()
        verdicts.append(verdict())
    degree = verdicts[-1]
    line = ", ".join(f"x{k} {times[k] * 1e3:.2f} ms" for k in sorted(times))
    why = (f"the better of {len(verdicts)} interleaved rounds"
           + (": round 2 changed round 1's verdict" if len(verdicts) > MINIMAL.rounds else ""))
    return by_degree[degree], degree, f"data parallelism {line} a step ({why}): degree {degree}"


# The most rounds a minimal check measures: a third only when the second changed the first one's verdict.
MINIMAL_ROUNDS = 3


def measure_all(engine, strategies, sources, rows, seed: int, known: dict | None = None,
                effort: Effort = FULL, spread: dict | None = None) -> dict:
    """{strategy: seconds per step}: the better of `effort.rounds` interleaved measurements of each
    (strategies already in `known` keep their figure). With several rounds, `spread` gets each one's
    relative spread between its rounds ((worst - best) / best): how far its figure can move by itself."""
    out = dict(known or {})
    todo = [s for s in strategies if s not in out]
    best: dict = {}
    worst: dict = {}
    for _ in range(effort.rounds):
        for s in todo:
            t = engine.measure(s, sources, rows, seed, steps=effort.steps, warm_s=effort.warm_s)
            best[s] = min(best.get(s, t), t)
            worst[s] = max(worst.get(s, t), t)
    out.update(best)
    if spread is not None and effort.rounds > 1:
        spread.update({s: (worst[s] - best[s]) / best[s] for s in best if best[s] > 0})
    return out


def anchors(engine, machine: MachineModel, sources, rows, seed: int, effort: Effort = FULL,
            spread: dict | None = None):
    """(dp x1, its step s, dp on every processor, its step s) on this machine; None for another machine
    or a single processor. `spread` gets their rounds' spreads (measure_all)."""
    if not machine.present or machine.n < 2:
        return None
    one = engine.data_parallel(1)
    n = min(machine.n, len(rows))
    every = engine.data_parallel(n)
    times = measure_all(engine, [one, every], sources, rows, seed, effort=effort, spread=spread)
    t1, tn = times[one], times[every]
    log.info("calibration steps: data parallelism x1 %.2f ms, x%d %.2f ms", t1 * 1e3, n, tn * 1e3)
    return one, t1, every, tn


def search_and_check(engine, problem, machine: MachineModel, sources, rows, data_seed: int,
                     margin: float = MARGIN, effort: Effort = FULL, **kw) -> SearchResult:
    """The search (calibrated on measured steps when `machine` is this one), its choice checked by
    measurement (steps on `rows` of `sources`, dropout seed `data_seed`) with `effort`. Keyword arguments
    go to `search`."""
    spread: dict = {}
    anc = anchors(engine, machine, sources, rows, data_seed, effort, spread)
    try:
        result = search(problem, machine, anchors=anc, margin=margin, **kw)
    finally:
        release_scratch()  # the cost model's cache-flushing buffer: not needed while training
    if anc is None:
        return result
    measured = {anc[0]: anc[1], anc[2]: anc[3]}
    return check(engine, result, measured, sources, rows, data_seed, margin, effort, spread)


def check(engine, result: SearchResult, measured: dict, sources, rows, seed: int, margin: float,
          effort: Effort = FULL, spread: dict | None = None) -> SearchResult:
    """Measure the predicted winner, the three fastest predicted non-data-parallel strategies and every
    data-parallel degree; keep the measured fastest (a higher data-parallel degree only when `margin`
    faster than every lower one, a non-data-parallel strategy only when `margin` faster than the best
    data parallelism; the lead must also exceed the spread of both figures' rounds, so two strategies
    whose difference is within the machine's noise do not take turns from run to run)."""
    spread = {} if spread is None else spread
    margin = max(margin, effort.margin)
    fitting = sorted((r for r in result.rows if r.fits), key=lambda r: r.step_time)
    dps = [r for r in fitting if r.label.startswith("data parallel")]
    others = [r for r in fitting if not r.label.startswith("data parallel")]
    wanted: list[Row] = []
    for r in [next((r for r in fitting if r.strategy == result.strategy), None)] + dps + others[:effort.others]:
        if r is not None and all(r.strategy != w.strategy for w in wanted):
            wanted.append(r)
    by_strategy = {r.strategy: r for r in result.rows}
    measured = measure_all(engine, [r.strategy for r in wanted], sources, rows, seed, measured, effort, spread)
    dp_meas = {s: t for s, t in measured.items() if s.source.startswith("data parallel")}
    by_degree = sorted(dp_meas, key=lambda s: devices_used(s, result.machine.n))
    again = effort.rounds == 1 and len(by_degree) > 1
    if again:  # a one-round check: a second round of every data-parallel degree, each keeps its better
        # (as minimal_choice: one disturbance moves a figure of 3 steps by more than the margin, either way)
        for s in by_degree:
            measured[s] = dp_meas[s] = min(measured[s], engine.measure(s, sources, rows, seed, steps=effort.steps,
                                                                       warm_s=effort.warm_s))
    best_dp = lowest_clearly_fastest(by_degree, dp_meas.get, margin, spread.get)  # higher: only when clearly faster
    best = min(measured, key=measured.get)
    if best in dp_meas:
        best = best_dp
    lead = margin + spread.get(best, 0.0) + spread.get(best_dp, 0.0)
    if best not in dp_meas and measured[best] > (1.0 - lead) * dp_meas[best_dp]:
        best = best_dp
    lines = ["measured check (ms/step, predicted -> measured)" + (
        ":" if effort is FULL else f", {effort.name} (1 round of {effort.steps} steps: a short fit"
                                   f"{'; the data-parallel degrees twice, interleaved' if again else ''}):")]
    for s, t in sorted(measured.items(), key=lambda kv: kv[1]):
        row = by_strategy.get(s)
        label = row.label if row is not None else s.source
        pred = f"{row.step_time * 1e3:9.3f}" if row is not None else "        ?"
        noise = f" (rounds {spread[s]:4.0%} apart)" if s in spread else ""
        lines.append(f"  {label[:58]:58} {pred} -> {t * 1e3:9.3f}{noise}" + (" <- chosen" if s == best else ""))
    if best != result.strategy:
        lines.append(f"  the measured fastest replaces the predicted winner ({result.strategy.source})")
    chosen_row = by_strategy.get(best)
    label = chosen_row.label if chosen_row is not None else best.source
    strategy = best if best.source not in ("code", "") else best.with_source(label)
    # the data-parallel row itself (a search row can hold the same strategy under its own label)
    dp_row = next((r for r in result.rows if r.strategy == best_dp and r.label.startswith("data parallel")), None)
    best_dp_row = Row(f"{dp_row.label if dp_row is not None else best_dp.source} (measured)", best_dp,
                      dp_meas[best_dp], dp_row.peak if dp_row is not None else 0, True)
    return SearchResult(strategy, measured[best], result.rows, best_dp_row, result.seconds,
                        result.evaluations, result.machine, result.batch, result.notes + lines)
