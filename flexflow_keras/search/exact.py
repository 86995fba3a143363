"""Exact searches: enumeration of small spaces, and a dynamic program over series-parallel graphs.

`enumerate_all`: when the product of the ops' candidate counts is small, simulate every strategy; the
result is the optimum under the simulator.

`dynamic_program` (Unity-style): an additive cost model from the simulator's blocks (per op and config:
the busiest device's compute, the issue cost of its pieces, its updates and gradient folds; per edge and
pair of configs: the transfers of activations forward and gradients backward between pieces in
different memories), minimised exactly over a series-parallel decomposition of the op graph between a
virtual source and sink: a series split at a vertex every path crosses (min over that vertex's configs),
a parallel split into the branches between the same two vertices (their costs add). Graphs that are not
series-parallel get no DP (the MCMC still runs). The additive model ignores overlap between ops, so its
optimum is re-simulated and competes with the MCMC's.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import Strategy


def space_size(spaces: dict[str, list]) -> int:
    return math.prod(len(v) for v in spaces.values())


def enumerate_all(sim, spaces: dict[str, list], limit: int) -> tuple[Strategy | None, float] | None:
    """(the fastest fitting strategy of the whole space, its step s), with (None, inf) when nothing in the
    space fits; None when the space has more than `limit` strategies (not enumerated)."""
    if space_size(spaces) > limit:
        return None
    names = list(spaces)
    best, best_t = None, math.inf
    for combo in itertools.product(*(spaces[n] for n in names)):
        s = Strategy(dict(zip(names, combo, strict=True)))
        r = sim.simulate(s)
        if r.fits and r.step_time < best_t:
            best, best_t = s, r.step_time
    return (best.with_source("search (exhaustive)") if best is not None else None), best_t


# --- the dynamic program ------------------------------------------------------------------------------------
class _Costs:
    """Additive node and edge costs from the simulator's blocks (cached per op and per config pair)."""

    def __init__(self, sim, spaces: dict[str, list], names: dict[int, str]):
        self.sim, self.spaces, self.names = sim, spaces, names
        self._node: dict[int, np.ndarray] = {}
        self._edge: dict[tuple, np.ndarray] = {}

    def node(self, node) -> np.ndarray:
        v = self._node.get(node.uid)
        if v is None:
            v = np.array([self._node_cost(node, c) for c in self.spaces[self.names[node.uid]]])
            self._node[node.uid] = v
        return v

    def _node_cost(self, node, cfg) -> float:
        sim = self.sim
        b = sim.block(node, cfg)
        o = sim.costs.overheads()
        load: dict[int, float] = {}
        py_each = b.py_f + b.py_b + (b.py_s if b.tiles[0].stats else 0.0)
        for q in range(b.n):
            load[b.devices[q]] = (load.get(b.devices[q], 0.0) + b.stats_t[q] + b.fwd_t[q] + b.bwd_t[q]
                                  + py_each)
        issue = 3 * b.n * o.issue
        # with an interpreter lock, every piece's Python part and every issue are serial
        busiest = max(max(load.values()), b.n * py_each + issue) if o.gil else max(load.values()) + issue
        upd = 0.0
        fold = 0.0
        for j, w in enumerate(node.weights):
            if w.uid not in sim.trainable:
                continue
            split = sim._split_update(w, b, j)
            shapes = [tuple(h - lo for lo, h in zip(*box, strict=True)) for box, _ in split] if split else [w.shape]
            upd += max(sim.costs.update(s, w.dtype, sim.threads) for s in shapes)
            if b.shared_w[j]:
                devs = len(set(b.devices))
                nbytes = 4 * math.prod(w.shape)
                fold += (devs - 1) * sim.costs.mem_pass(nbytes, 4)
                if len(set(b.mems)) > 1:
                    fold += sim.machine.transfer_time(b.mems[1], b.mems[0], nbytes)
        for k, t in enumerate(node.inputs):
            if b.shared_in[k] and len(set(b.devices)) > 1:
                nbytes = 4 * math.prod(sim._shape_of(t))
                fold += (len(set(b.devices)) - 1) * sim.costs.mem_pass(nbytes, 4)
        return busiest + issue + upd + fold

    def edge(self, prod, o: int, cons, k: int) -> np.ndarray:
        key = (prod.uid, o, cons.uid, k)
        v = self._edge.get(key)
        if v is not None:
            return v
        sp, sc = self.spaces[self.names[prod.uid]], self.spaces[self.names[cons.uid]]
        v = np.zeros((len(sp), len(sc)))
        sim = self.sim
        if not (sim.machine.kind == "CPU" and sim.machine.nodes == 1):  # one shared memory: nothing moves
            itemsize = np.dtype(cons.inputs[k].dtype).itemsize
            for a, pc in enumerate(sp):
                pb = sim.block(prod, pc)
                for c, cc in enumerate(sc):
                    cb = sim.block(cons, cc)
                    v[a, c] = 2 * _moved(sim, pb, o, cb, k, itemsize)  # activations forward, gradients back
        self._edge[key] = v
        return v


def _moved(sim, pb, o: int, cb, k: int, itemsize: int) -> float:
    """Seconds the busiest receiving piece waits for data from pieces in other memories."""
    worst = 0.0
    for p, q, vol in sim._pairs(pb, o, cb, k):
        if pb.mems[p] != cb.mems[q]:
            worst = max(worst, sim.machine.transfer_time(pb.mems[p], cb.mems[q], vol * itemsize))
    return worst


class _SP:
    """A series-parallel decomposition node: ('edge', s, t) | ('series', s, v, t, a, b) |
    ('parallel', s, t, parts). Tables: cost[cs, ct] of everything strictly between s and t."""

    def __init__(self, kind, s, t, **kw):
        self.kind, self.s, self.t = kind, s, t
        self.__dict__.update(kw)
        self.table: np.ndarray | None = None


# Above this many (config, config) pairs over the edges that move data between memories, the DP's edge
# tables cost more than the rest of the search (an Inception stack on 32 GPUs: minutes): it is skipped.
PAIR_LIMIT = 400_000


def dynamic_program(sim, spaces: dict[str, list]) -> tuple[Strategy, float] | None:
    """The additive model's optimum (re-simulated: (strategy, simulated step time)), or None when the
    graph is not series-parallel or its edge tables would be too large (`PAIR_LIMIT`)."""
    graph = sim.graph
    names = node_names(graph)
    nodes = list(graph.nodes)
    sim.mode = (sim.costs.threads_for(sim.machine.n), sim.machine.n > 1)  # the pieces of a split run at once
    SRC, SNK = "src", "snk"
    succ: dict = {SRC: [], SNK: []}
    pred: dict = {SRC: [], SNK: []}
    edges: dict = {}  # (u, v) -> list of (o, k) tensor connections
    for n in nodes:
        succ.setdefault(n.uid, [])
        pred.setdefault(n.uid, [])
    for n in nodes:
        for k, t in enumerate(n.inputs):
            if t.node is not None:
                u = t.node.uid
                if n.uid not in succ[u]:
                    succ[u].append(n.uid)
                    pred[n.uid].append(u)
                edges.setdefault((u, n.uid), []).append((t.index, k))
    for n in nodes:
        if not pred[n.uid]:
            succ[SRC].append(n.uid)
            pred[n.uid].append(SRC)
            edges[(SRC, n.uid)] = []
        if not succ[n.uid]:
            succ[n.uid].append(SNK)
            pred[SNK].append(n.uid)
            edges[(n.uid, SNK)] = []
    order = [SRC] + [n.uid for n in nodes] + [SNK]
    pos = {u: i for i, u in enumerate(order)}
    if not (sim.machine.kind == "CPU" and sim.machine.nodes == 1):  # edge tables only where data moves
        pairs = sum(len(spaces[names[u]]) * len(spaces[names[v]]) for (u, v) in edges
                    if u != SRC and v != SNK)
        if pairs > PAIR_LIMIT:
            return None
    tree = _decompose(set(order), SRC, SNK, succ, pred, pos)
    if tree is None:
        return None
    by_uid = {n.uid: n for n in nodes}
    costs = _Costs(sim, spaces, names)

    def ncfg(u) -> int:
        return 1 if u in (SRC, SNK) else len(spaces[names[u]])

    def ncost(u) -> np.ndarray:
        return np.zeros(1) if u in (SRC, SNK) else costs.node(by_uid[u])

    def ecost(u, v) -> np.ndarray:
        total = np.zeros((ncfg(u), ncfg(v)))
        if u == SRC or v == SNK:
            return total
        for o, k in edges[(u, v)]:
            total = total + costs.edge(by_uid[u], o, by_uid[v], k)
        return total

    def solve(sp: _SP) -> np.ndarray:
        if sp.kind == "edge":
            sp.table = ecost(sp.s, sp.t)
        elif sp.kind == "series":
            a, b = solve(sp.a), solve(sp.b)
            mid = ncost(sp.v)
            sp.table = (a[:, :, None] + mid[None, :, None] + b[None, :, :]).min(axis=1)
        else:
            sp.table = sum(solve(p) for p in sp.parts)
        return sp.table

    solve(tree)
    choice: dict = {SRC: 0, SNK: 0}

    def assign(sp: _SP) -> None:
        if sp.kind == "series":
            a, b, mid = sp.a.table, sp.b.table, ncost(sp.v)
            cs, ct = choice[sp.s], choice[sp.t]
            choice[sp.v] = int(np.argmin(a[cs, :] + mid + b[:, ct]))
            assign(sp.a)
            assign(sp.b)
        elif sp.kind == "parallel":
            for p in sp.parts:
                assign(p)

    assign(tree)
    cfgs = {names[u]: spaces[names[u]][choice[u]] for u in by_uid}
    s = Strategy(cfgs, "search (dynamic program)")
    r = sim.simulate(s)
    return (s, r.step_time if r.fits else math.inf)


def _reach(nodes: set, start, nxt) -> set:
    """Nodes of `nodes` reachable from `start` along `nxt` (start included)."""
    seen, stack = {start}, [start]
    while stack:
        for v in nxt[stack.pop()]:
            if v in nodes and v not in seen:
                seen.add(v)
                stack.append(v)
    return seen


def _between(nodes: set, s, t, succ, pred) -> set:
    """Nodes of `nodes` on some s -> t path (s and t included)."""
    return _reach(nodes, s, succ) & _reach(nodes, t, pred)


def _decompose(nodes: set, s, t, succ, pred, pos, depth: int = 0, direct: bool = True) -> _SP | None:
    """Decompose the subgraph on `nodes` between `s` and `t`; `direct`: whether it owns an s -> t edge
    (a parallel split hands that edge to one part only)."""
    direct = direct and t in succ[s]
    inner = nodes - {s, t}
    if not inner:
        return _SP("edge", s, t) if direct else None
    if depth > 4000:
        return None
    # series: the first inner vertex (topological order) that every s -> t path crosses
    order = sorted(nodes, key=pos.__getitem__)
    paths = {u: 0 for u in order}
    paths[s] = 1
    for u in order:
        for v in succ[u]:
            if v in paths:
                paths[v] += paths[u]
    back = {u: 0 for u in order}
    back[t] = 1
    for u in reversed(order):
        for v in succ[u]:
            if v in back:
                back[u] += back[v]
    total = paths[t]
    for v in order:
        if v in inner and paths[v] * back[v] == total:
            a = _decompose(_between(nodes, s, v, succ, pred), s, v, succ, pred, pos, depth + 1)
            b = _decompose(_between(nodes, v, t, succ, pred), v, t, succ, pred, pos, depth + 1)
            if a is None or b is None:
                return None
            return _SP("series", s, t, v=v, a=a, b=b)
    # parallel: the weakly connected components of the inner vertices, plus a direct s -> t edge
    comps, seen = [], set()
    for u in order:
        if u not in inner or u in seen:
            continue
        comp, stack = set(), [u]
        while stack:
            x = stack.pop()
            if x in comp:
                continue
            comp.add(x)
            stack.extend(y for y in succ[x] + pred[x] if y in inner and y not in comp)
        seen |= comp
        comps.append(comp)
    if len(comps) < 2 and not direct:
        return None  # not series-parallel
    parts = []
    for comp in comps:
        p = _decompose(comp | {s, t}, s, t, succ, pred, pos, depth + 1, direct=False)
        if p is None:
            return None
        parts.append(p)
    if direct:
        parts.append(_SP("edge", s, t))
    return _SP("parallel", s, t, parts=parts)
