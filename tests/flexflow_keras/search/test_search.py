"""The search: exhaustive optimum on small graphs, determinism, memory limits, the 3% rule, the table."""

import math

import pytest
from search_cases import costs, machine, problem

from flexflow_keras.errors import StrategyError
from flexflow_keras.ops.strategy import Strategy
from flexflow_keras.search import exact, space
from flexflow_keras.search.driver import search
from flexflow_keras.search.simulator import Simulator


@pytest.mark.parametrize("name, devices", [("mlp", 2), ("embedding", 2), ("tiny", 4)])
def test_search_finds_the_exhaustive_optimum(tmp_path, name, devices):
    p, m = problem(name), machine(devices)
    cm = costs(m, tmp_path)
    sim = Simulator(p.graph, m, cm, p.batch, p.trainable, p.seeds)
    spaces = {sim.names[n.uid]: space.config_space(n, m.n, p.batch) for n in p.graph.nodes}
    assert len(p.graph.nodes) <= 8
    best = exact.enumerate_all(sim, spaces, 10**6)
    assert best is not None and best[0] is not None
    # the MCMC and the dynamic program alone (no enumeration inside the search)
    r = search(p, m, budget=1500, seed=1, costs=cm, enumerate_limit=0)
    assert r.step_time == pytest.approx(best[1], rel=1e-9), r.table()


def test_small_spaces_are_enumerated(tmp_path):
    p, m = problem("mlp"), machine(2)
    r = search(p, m, budget=0, costs=costs(m, tmp_path))
    assert any(row.label == "search (exhaustive)" for row in r.rows)


def test_same_seed_same_strategy(tmp_path):
    p, m = problem("two_branch"), machine(2)
    a = search(p, m, budget=300, seed=7, costs=costs(m, tmp_path), enumerate_limit=0)
    b = search(p, m, budget=300, seed=7, costs=costs(m, tmp_path), enumerate_limit=0)
    assert a.strategy == b.strategy and a.step_time == b.step_time


def test_dynamic_program_on_series_parallel_graphs(tmp_path):
    p, m = problem("two_branch"), machine(2)
    sim = Simulator(p.graph, m, costs(m, tmp_path), p.batch, p.trainable, p.seeds)
    spaces = {sim.names[n.uid]: space.config_space(n, m.n, p.batch) for n in p.graph.nodes}
    dp = exact.dynamic_program(sim, spaces)
    assert dp is not None and math.isfinite(dp[1])
    assert set(dp[0].names()) == set(spaces)


def test_over_capacity_is_never_chosen(tmp_path):
    p = problem("embedding")
    m = machine(2)
    sim = Simulator(p.graph, m, costs(m, tmp_path), p.batch, p.trainable, p.seeds)
    whole = sim.simulate(Strategy.data_parallel(p.graph, 1, 2)).peak
    m = machine(2, capacity_gb=0.75 * whole / (1 << 30))  # one device cannot hold everything
    cm = costs(m, tmp_path)
    r = search(p, m, budget=400, costs=cm, enumerate_limit=0)
    chosen = next(row for row in r.rows if row.strategy == r.strategy)
    assert chosen.fits
    assert any(not row.fits for row in r.rows if row.label == "data parallel x1")
    sim = Simulator(p.graph, m, cm, p.batch, p.trainable, p.seeds)
    assert sim.simulate(r.strategy).peak <= m.devices[0].capacity


def test_nothing_fits_is_a_clear_error(tmp_path):
    p, m = problem("mlp"), machine(2, capacity_gb=1e-7)
    with pytest.raises(StrategyError, match=r"smallest peak found is .* MB .*raise the devices' capacity_gb"):
        search(p, m, budget=50, costs=costs(m, tmp_path))
    # a space small enough to enumerate where nothing fits: the same error (not a walk over it again)
    with pytest.raises(StrategyError, match=r"smallest peak found"):
        search(p, m, budget=50, costs=costs(m, tmp_path), enumerate_limit=10**6)


@pytest.mark.parametrize("times, want", [
    ([10.0, 9.8, 9.69], 0),  # x4 is 3% faster than x1 but not than x2: x1 stays
    ([10.0, 9.0, 8.0], 2),
    ([10.0, 9.0, 8.9], 1),
    ([10.0, 11.0, 9.0], 2),
])
def test_a_higher_degree_wins_only_when_clearly_faster_than_every_lower(times, want):
    from flexflow_keras.search.driver import lowest_clearly_fastest

    assert lowest_clearly_fastest(list(range(len(times))), lambda i: times[i]) == want


@pytest.mark.parametrize("spreads, want", [
    ([0.0, 0.0, 0.0], 2),  # 10% and 20% leads, no noise: x4
    ([0.0, 0.06, 0.06], 1),  # x4's 11% lead over x2 is within 3% + both rounds' 6% spreads: x2 stays
    ([0.0, 0.04, 0.3], 1),  # a noisy x4 needs a lead beyond its own noise
    ([0.05, 0.05, 0.0], 2),
])
def test_a_lead_within_the_rounds_spread_does_not_move_the_degree(spreads, want):
    from flexflow_keras.search.driver import lowest_clearly_fastest

    times = [10.0, 9.0, 8.0]
    assert lowest_clearly_fastest([0, 1, 2], lambda i: times[i], noise_of=lambda i: spreads[i]) == want


def test_measure_all_reports_the_spread_of_its_rounds():
    from flexflow_keras.execution.measured import FULL, LIGHT, measure_all

    class Engine:
        def __init__(self):
            self.figures = {"a": [1.0, 1.1], "b": [2.0, 2.0]}

        def measure(self, s, *_args, **_kw):
            return self.figures[s].pop(0)

    spread: dict = {}
    times = measure_all(Engine(), ["a", "b"], None, None, 0, effort=FULL, spread=spread)
    assert times == {"a": 1.0, "b": 2.0}
    assert spread == pytest.approx({"a": 0.1, "b": 0.0})
    spread.clear()
    measure_all(Engine(), ["a"], None, None, 0, effort=LIGHT, spread=spread)
    assert spread == {}  # one round: no spread to tell


def test_three_percent_rule(tmp_path):
    p, m = problem("mlp"), machine(2)
    r = search(p, m, budget=300, costs=costs(m, tmp_path), margin=10.0)  # nothing is 1000% faster
    assert r.strategy.source.startswith("data parallelism")
    assert "data parallelism kept" in r.table()


def test_table_lists_what_was_compared(tmp_path):
    p, m = problem("mlp"), machine(2)
    r = search(p, m, budget=200, costs=costs(m, tmp_path))
    text = r.table()
    for label in ("data parallel x1", "data parallel x2", "expert: Dense layers split", "<- chosen", "winner:"):
        assert label in text
    assert isinstance(r.strategy, Strategy)
