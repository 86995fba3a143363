"""A short fit's data-parallel degree, chosen from its own first training steps.

A fit too short to pay for measuring strategies (execution/measured.py `effort_for`: under 20 steps)
would train at degree 1 and leave the other cores idle, which halves the speed of a convolution-heavy
model. Instead its first real steps decide, and every one of them trains (data parallelism of any degree
computes the same update, up to rounding):
- step 1 at degree 1, untimed: it records the step's trace and loads the kernels;
- step 2 at degree 1, timed; when the remaining steps take under `MIN_REMAINING_S` at that speed,
  the trial ends there at degree 1 (a small model's short fit: nothing to gain);
- step 3 at degree 1, timed: degree 1's figure is the better of steps 2 and 3, so that one step slowed
  by another process does not send the fit to a degree that is slower;
- step 4 at degree D (every core other processes leave free, at most the processors and the batch),
  timed although it records its own trace, so its figure is an upper bound;
- only when that figure is not already clearly faster, step 5 at degree D, timed warm.
Degree D is kept when at least `MARGIN` faster than degree 1, as the light check's margin asks; otherwise
the fit goes back to degree 1. The steps of the trial wait for their tasks (so that they can be timed and
the strategy can change between them); steps of another batch size (an epoch's last, partial batch) are
not timed. The choice is logged, and cached like a light check, so the next run of the same command
starts with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from flexflow_keras import config as _config
from flexflow_keras.execution import distributed
from runtime import ProcKind

log = logging.getLogger("flexflow_keras")

# a higher degree only when this much faster (the light check's margin: measured.LIGHT)
MARGIN = 0.15
# the fewest planned steps worth a trial: it decides by its 5th step at the latest
MIN_STEPS = 7
# the least time the steps after the first two must take at degree 1 for degree D to be tried: below it,
# at most about half of it could be gained, against the cost of recording and placing another strategy
# (and a short fit of a small model keeps degree 1's numbers to the bit, as a resumed run's checkpoint test
# expects of an uninterrupted run)
MIN_REMAINING_S = 1.0


class DegreeTrial:
    """The plan of a trial between degree 1 and `degree` at `batch` samples a step; `done(strategy, line)`
    gets the strategy chosen and the log line that says why."""

    def __init__(self, engine, degree: int, batch: int, done: Callable[[object, str], None], planned: int = 1 << 30):
        self.engine, self.degree, self.batch, self.done, self.planned = engine, degree, batch, done, planned
        self.plan = [(1, False), (1, True), (1, True), (degree, True), (degree, True)]  # (degree, timed) per step
        self.at = 0
        self.times: dict[int, list[float]] = {1: [], degree: []}

    def before(self) -> None:
        """Set the strategy the next step runs under (no step is in flight: trial steps wait)."""
        d = self.plan[self.at][0]
        self.engine.set_strategy(self._strategy(d))

    def after(self, rows: int, seconds: float) -> None:
        """A step of `rows` samples took `seconds`, issue to finish; decide when the plan allows."""
        d, timed = self.plan[self.at]
        if rows != self.batch:
            return  # a partial batch: not comparable, the plan's step comes again
        if timed:
            self.times[d].append(seconds)
        self.at += 1
        t1, td = self.times[1], self.times[self.degree]
        if t1 and not td and (self.planned - self.at) * min(t1) < MIN_REMAINING_S:
            self._keep_one(min(t1))
            return
        if td and (min(td) <= (1.0 - MARGIN) * min(t1) or self.at == len(self.plan)):
            self._decide(min(t1), td)

    def cancel(self, why: str) -> None:
        """Stop the trial undecided (its timings would mix with other steps'): degree 1 from here on."""
        self.engine.trial = None
        self.engine.set_strategy(self._strategy(1).with_source(f"data parallelism, degree 1 (a short fit: {why})"))
        log.info("short fit: %s, so its steps cannot be compared; the data-parallel degree stays 1", why)

    def _keep_one(self, t1: float) -> None:
        """Degree 1 without trying D: the fit's remaining steps are too short to gain from it."""
        engine = self.engine
        engine.trial = None
        left = self.planned - self.at
        line = (f"data parallelism x1 {t1 * 1e3:.1f} ms a step: its {left} remaining steps take about "
                f"{left * t1:.2f} s, too little to gain from trying degree {self.degree}: degree 1")
        engine.strategy = engine.strategy.with_source("data parallelism, degree 1 (a short fit of short steps)")
        log.info("short fit: %s", line)
        self.done(engine.strategy, line)

    def _decide(self, t1: float, td: list[float]) -> None:
        engine = self.engine
        engine.trial = None
        faster = min(td) <= (1.0 - MARGIN) * t1
        chosen = self.degree if faster else 1
        how = "its first step, trace included" if len(td) == 1 else "the better of 2 steps"
        line = (f"data parallelism x1 {t1 * 1e3:.1f} ms a step (the better of 2), x{self.degree} {min(td) * 1e3:.1f} ms "
                f"({how}): degree {chosen}" + ("" if faster else
                                               f" (x{self.degree} is not {round(MARGIN * 100)}% faster)"))
        strategy = self._strategy(chosen).with_source(
            f"data parallelism, degree {chosen} (chosen by a short fit's first steps)")
        engine.set_strategy(strategy)
        engine.strategy = engine.strategy.with_source(strategy.source)  # the same configs keep their old source
        log.info("short fit: %s; the remaining steps train at degree %d", line, chosen)
        self.done(strategy, line)

    def _strategy(self, d: int):
        return self.engine.data_parallel(d)


def trial_degree(engine, batch: int, planned: int | None) -> int:
    """The degree a short fit of `planned` steps at `batch` samples tries against degree 1, or 1 where
    no trial runs: fewer than MIN_STEPS steps, processors other than CPUs (GPUs default to all of them),
    MPI (every rank must train with one strategy: distributed.agree_strategy), a single free core or
    processor, one sample a step, an output of shape (batch,) (Keras' losses and metrics reduce its last
    axis, the batch itself: each piece counts as one entry, so an epoch of steps at two degrees would
    weigh its batches unequally)."""
    cfg = _config.get()
    if (planned is None or planned < MIN_STEPS or engine.proc_kind is not ProcKind.CPU or cfg.gpus
            or cfg.data_parallel_degree or distributed.world() is not None
            or any(len(t.shape) < 2 for t in engine.tgraph.model_outputs)):
        return 1
    return max(1, min(len(engine.processors), batch, engine.rtm.policy.free))
