"""MCMC search over strategies (FlexFlow, MLSys'19): a Metropolis walk on the simulated step time.

From a start strategy, each iteration picks one op (uniformly) and proposes a new config for it: with
probability 1/2 the config of a neighbouring op (a producer or consumer with the same output rank, when
that config is legal for this op: FlexFlow's "propagate"), otherwise a config drawn uniformly from the
op's candidates (`space.py`). The proposal is simulated (only the changed op's block and edges are
rebuilt); it is accepted when faster, else with probability exp(-alpha * delta), delta being the slow-down
in percent of the current step time (so alpha=0.05 accepts 10% worse with probability 0.61). Strategies
over a memory's capacity are never accepted. The best strategy seen is returned; a given seed gives the
same walk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from flexflow_keras.errors import StrategyError
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import Strategy, check_config


@dataclass
class WalkResult:
    strategy: Strategy
    step_time: float
    iterations: int
    accepted: int
    improved: int


def mcmc(sim, start: Strategy, spaces: dict[str, list], budget: int, alpha: float, seed: int = 0) -> WalkResult:
    """Walk `budget` proposals from `start`; `spaces` maps op name -> candidate configs."""
    graph = sim.graph
    names = node_names(graph)
    by_name = {names[n.uid]: n for n in graph.nodes}
    order = [names[n.uid] for n in graph.nodes if len(spaces.get(names[n.uid], ())) > 1]
    neighbours = _neighbours(graph, names)
    rng = np.random.default_rng(seed)
    current = start.as_dict()
    cur = _time(sim, start)
    best, best_t = dict(current), cur
    accepted = improved = 0
    legal_cache: dict = {}
    if not order:
        return WalkResult(start, cur, 0, 0, 0)
    for _ in range(budget):
        op = order[int(rng.integers(len(order)))]
        cands = spaces[op]
        cfg = None
        if rng.random() < 0.5 and neighbours[op]:
            other = neighbours[op][int(rng.integers(len(neighbours[op])))]
            cfg = current[other]
            key = (op, cfg)
            if key not in legal_cache:
                try:
                    check_config(by_name[op], op, cfg, sim.machine.n)
                    legal_cache[key] = True
                except StrategyError:
                    legal_cache[key] = False
            if not legal_cache[key]:
                cfg = None
        if cfg is None:
            cfg = cands[int(rng.integers(len(cands)))]
        if cfg == current[op]:
            continue
        prev = current[op]
        current[op] = cfg
        t = _time(sim, Strategy(current))
        delta = 100.0 * (t - cur) / cur if math.isfinite(t) and cur > 0 else math.inf
        if t < cur or (math.isfinite(delta) and rng.random() < math.exp(-alpha * delta)):
            cur = t
            accepted += 1
            if t < best_t:
                best, best_t = dict(current), t
                improved += 1
        else:
            current[op] = prev
    return WalkResult(Strategy(best, "search"), best_t, budget, accepted, improved)


def _time(sim, strategy: Strategy) -> float:
    r = sim.simulate(strategy)
    return r.step_time if r.fits else math.inf


def _neighbours(graph, names) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {names[n.uid]: [] for n in graph.nodes}
    for n in graph.nodes:
        for t in n.inputs:
            if t.node is not None and len(t.node.outputs[0].shape) == len(n.outputs[0].shape):
                out[names[n.uid]].append(names[t.node.uid])
                out[names[t.node.uid]].append(names[n.uid])
    return out
