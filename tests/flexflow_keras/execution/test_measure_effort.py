"""How much the search measures for a fit of a given length (execution/measured.py): the tiers follow the
planned steps, and the minimal check keeps the lowest data-parallel degree that clearly leads."""

import numpy as np

from flexflow_keras.execution import measured as M


class _Machine:
    present, n = True, 4


class _Engine:
    """Step times by data-parallel degree, as measure() would report them."""

    def __init__(self, times):
        self.times, self.measured = times, []

    def data_parallel(self, degree):
        return ("dp", degree)

    def measure(self, strategy, sources, rows, seed, steps=9, warm_s=0.2):
        self.measured.append((strategy[1], steps))
        return self.times[strategy[1]]


ROWS = np.arange(64)


def test_the_tier_follows_the_planned_steps():
    engine = _Engine({1: 0.01, 2: 0.01, 4: 0.01})
    assert M.effort_for(engine, _Machine(), None, ROWS, 0, None) == (M.FULL, None)  # unknown length
    assert M.effort_for(engine, _Machine(), None, ROWS, 0, 100_000)[0] is M.FULL
    assert M.effort_for(engine, _Machine(), None, ROWS, 0, 1_000)[0] is M.LIGHT
    # MINIMAL measures x2 and x4, then x1, x2 and x4 again: 5 x 5 steps, at most 20% of 130
    assert M.effort_for(engine, _Machine(), None, ROWS, 0, 130)[0] is M.MINIMAL
    assert M.effort_for(engine, _Machine(), None, ROWS, 0, 100) == (None, 0.01)
    assert engine.measured == [(1, 1)] * 4  # one probe step of x1 each time
    # a fit too short to pay for the probe's 4 steps is not probed (a 2-step fit of a 3-D U-Net took 3x)
    assert M.effort_for(engine, _Machine(), None, ROWS, 0, 19) == (None, None) and len(engine.measured) == 4
    # one sample a step: no other data-parallel degree for the minimal check to measure
    assert M.effort_for(engine, _Machine(), None, ROWS[:1], 0, 130) == (None, 0.01)


def test_the_cost_counts_the_untimed_steps_the_probe_needed():
    # after a change of degree a step settles in 4-8 steps, not 3 (Engine.measure): a tier whose
    # measurements fit the budget at 3 untimed steps may not at 8
    quick, slow = _Engine({1: 0.01, 2: 0.01, 4: 0.01}), _Engine({1: 0.01, 2: 0.01, 4: 0.01})
    slow.warm_steps = 8
    planned = 500  # budget 50 steps: LIGHT (5 strategies of 3 timed steps) costs 30 at 3 untimed steps, 55 at 8
    assert M.effort_for(quick, _Machine(), None, ROWS, 0, planned)[0] is M.LIGHT
    assert M.effort_for(slow, _Machine(), None, ROWS, 0, planned)[0] is M.MINIMAL
    assert M.Effort().cost(0.01, 1, 1) == M.Effort().cost(0.01, 1, 3)  # never fewer than 3


def test_the_minimal_check_needs_a_clear_lead():
    engine = _Engine({1: 0.100, 2: 0.060, 4: 0.090})
    best, degree, line = M.minimal_choice(engine, _Machine(), None, ROWS, 0, 0.100)
    assert degree == 2 and best == ("dp", 2) and "x2 60.00 ms" in line
    # x1 is the probe's figure in round 1; round 2 measures every degree again, interleaved
    assert engine.measured == [(2, 2), (4, 2), (1, 2), (2, 2), (4, 2)]
    assert "the better of 2 interleaved rounds" in line
    close = _Engine({1: 0.100, 2: 0.090, 4: 0.095})  # 10% is within the light checks' noise margin
    assert M.minimal_choice(close, _Machine(), None, ROWS, 0, 0.100)[1] == 1


class _Disturbed(_Engine):
    """The first measurement of each degree in `disturbed` reads `by` times its figure (a step of another
    process on a shared machine)."""

    def __init__(self, times, disturbed, by):
        super().__init__(times)
        self.disturbed, self.by = set(disturbed), by

    def measure(self, strategy, sources, rows, seed, steps=9, warm_s=0.2):
        t = super().measure(strategy, sources, rows, seed, steps, warm_s)
        if strategy[1] in self.disturbed:
            self.disturbed.discard(strategy[1])
            return t * self.by
        return t


def test_one_disturbed_figure_does_not_decide_the_minimal_check():
    # x2 runs 1.6x faster, but its first figure read 1.27x x1's (the benchmark's MNIST CNN b64: 40.7 ms
    # against 32.0, where x2 trains at 21): one round chose x1 for the whole fit
    engine = _Disturbed({1: 0.100, 2: 0.060, 4: 0.090}, {2}, 2.1)
    best, degree, line = M.minimal_choice(engine, _Machine(), None, ROWS, 0, 0.100)
    assert degree == 2 and "x2 60.00 ms" in line
    # round 1 stopped at x2 (no faster); round 2 found it faster and went on to x4; the verdict changed,
    # so a third round decides
    assert [d for d, _ in engine.measured] == [2, 1, 2, 4, 1, 2, 4]
    assert "the better of 3 interleaved rounds: round 2 changed round 1's verdict" in line
    # the other way: a disturbed probe of x1 makes x2 look clearly faster where it is twice as slow (an MLP)
    mlp = _Disturbed({1: 0.003, 2: 0.006, 4: 0.012}, {}, 1.0)
    assert M.minimal_choice(mlp, _Machine(), None, ROWS, 0, 0.009)[1] == 1  # the probe read 3x
    assert [d for d, _ in mlp.measured] == [2, 4, 1, 2, 4, 1, 2, 4]
    # a true near tie stays at the lower degree
    tie = _Engine({1: 0.100, 2: 0.090, 4: 0.095})
    assert M.minimal_choice(tie, _Machine(), None, ROWS, 0, 0.100)[1] == 1 and (1, 2) in tie.measured
    slower = _Engine({1: 0.100, 2: 0.160, 4: 0.300})  # x2 no faster: x4, the costliest, is not measured
    assert M.minimal_choice(slower, _Machine(), None, ROWS, 0, 0.100)[1] == 1
    assert [d for d, _ in slower.measured] == [2, 1, 2]


def test_a_train_on_batch_loop_sizes_its_search_as_a_short_run(tmp_path, monkeypatch, caplog):
    # its length is unknown at the first call: a GAN's loop met one full search per model (minutes)
    import logging

    import flexflow_keras as keras
    from flexflow_keras.models.training import LOOP_STEPS

    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))  # nothing cached: the first call chooses
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile("sgd", "mse")
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        model.train_on_batch(np.ones((16, 8), np.float32), np.zeros((16, 4), np.float32))
    text = caplog.text
    assert f"a train_on_batch loop of unknown length, sized as {LOOP_STEPS} steps" in text
    assert "strategy search compared" not in text  # the full search's table
    assert model._engine.planned_steps == LOOP_STEPS


def test_the_search_measures_every_optimizer_and_restores_the_weights(tmp_path, monkeypatch):
    # the measured steps use the next update's learning rate: a zero one divided by zero in Ftrl's update,
    # so fit with optimizer="ftrl" on two processors stopped in the search's measurements
    import flexflow_keras as keras
    from flexflow_keras import config

    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))  # nothing cached: fit measures
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 8)).astype("float32"), rng.standard_normal((64, 4)).astype("float32")
    for opt in ("ftrl", "adam"):
        results = []
        for degree in (None, 1):  # searched (measured) and forced (nothing measured)
            config.set(cpus=2, data_parallel_degree=degree)
            keras.utils.set_random_seed(2)
            model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
            model.compile(opt, "mse")
            hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
            results.append((hist.history["loss"], model.get_weights()))
        (l0, w0), (l1, w1) = results
        np.testing.assert_allclose(l0, l1, rtol=1e-5, err_msg=opt)
        for a, b in zip(w0, w1, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=opt)


class _Dp:
    """A data-parallel strategy of `degree` as check() reads it (its source, its devices)."""

    def __init__(self, degree):
        self.degree, self.source = degree, f"data parallelism, degree {degree}"

    def __getitem__(self, i):  # as _Engine reads its ("dp", degree) strategies
        return ("dp", self.degree)[i]


def test_a_light_check_measures_the_degrees_again(monkeypatch):
    # the light check's one round: the anchors read x2 at 0.87 of x1 (a disturbed figure: it runs at 0.6)
    from flexflow_keras.search.driver import Row, SearchResult

    monkeypatch.setattr(M, "devices_used", lambda s, n: s.degree)
    one, two = _Dp(1), _Dp(2)
    rows = [Row("data parallel x1", one, 0.100, 0, True), Row("data parallel x2", two, 0.060, 0, True)]
    result = SearchResult(two, 0.060, rows, rows[1], 0.0, 0, _Machine(), 64)
    engine = _Engine({1: 0.100, 2: 0.060})
    got = M.check(engine, result, {one: 0.100, two: 0.087}, None, ROWS, 0, 0.03, M.LIGHT)
    assert got.strategy is two and sorted(d for d, _ in engine.measured) == [1, 2]
    assert "the data-parallel degrees twice" in "\n".join(got.notes)
    # a verdict far from the margin is measured again too: x2's figure read 1.3x x1's (disturbed)
    engine = _Engine({1: 0.100, 2: 0.060})
    got = M.check(engine, result, {one: 0.100, two: 0.130}, None, ROWS, 0, 0.03, M.LIGHT)
    assert got.strategy is two and sorted(d for d, _ in engine.measured) == [1, 2]
    # the full check's rounds already judge the spread: no extra round
    engine = _Engine({1: 0.100, 2: 0.060})
    M.check(engine, result, {one: 0.100, two: 0.087}, None, ROWS, 0, 0.03, M.FULL)
    assert engine.measured == []
