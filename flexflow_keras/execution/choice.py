"""Which strategy a model trains with, and where it came from (always logged).

In order of precedence: `--import-strategy FILE` (or `config.set(import_strategy=...)`), then a strategy
given in code (`model.compile(strategy=...)` or `config.set(strategy=...)`: a `Strategy` or a file path),
then `--only-data-parallel` / `--data-parallel-degree N` (data parallelism, at the degree measured
fastest unless forced), then the default: the search (`flexflow_keras/search/`) on a machine with more
than one processor, calibrated on and checked by a few measured steps (execution/measured.py), which
prints what it compared and why the winner won. `--only-data-parallel` on
the command line wins over a strategy given in code (the log says so); together with
`--import-strategy` it is an error. `--export-strategy FILE` writes whichever strategy was chosen (and,
after a search, an SVG picture of it beside the file). A search for a machine other than this one
(`--machine-model-file`, `--search-num-nodes`, `--search-num-workers`) can only be exported:
`--search-only` stops there; training would be an error.

A search result is cached (`FF_CACHE_DIR`) by graph, machine, batch size, optimizer and search settings,
so the same command on the same machine chooses the same strategy without searching again.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os

from flexflow_keras import config as _config
from flexflow_keras.errors import ConfigError, StrategyError
from flexflow_keras.execution.measured import search_and_check
from flexflow_keras.ops.strategy import Strategy, read_strategy_file, write_strategy_file
from flexflow_keras.search.costs import cache_dir
from flexflow_keras.search.driver import Problem, Row, SearchResult
from flexflow_keras.search.machine import MachineModel
from flexflow_keras.search.svg import write_strategy_svg

SEARCH_VERSION = 1  # part of the cache key: bump when the search changes what it would choose

log = logging.getLogger("flexflow_keras")


def user_strategy(value, who: str) -> Strategy:
    """A strategy given in code: a `Strategy`, or the path of a strategy file."""
    if isinstance(value, Strategy):
        return value
    if isinstance(value, str):
        return read_strategy_file(value)[0]
    raise StrategyError(f"{who} expects a flexflow_keras Strategy or the path of a strategy file, received "
                        f"{type(value).__name__} {value!r:.60}.")


def choose(engine, code_strategy, sources, rows, seed: int) -> None:
    """Set `engine`'s strategy for training (see the module docstring) and export it when asked."""
    cfg = _config.get()
    if cfg.only_data_parallel and cfg.import_strategy:
        raise ConfigError(f"--only-data-parallel and --import-strategy {cfg.import_strategy} ask for two "
                          f"different strategies; give one of them.")
    if code_strategy is None and cfg.strategy is not None:
        code_strategy = user_strategy(cfg.strategy, "config.set(strategy=...)")
    fill = engine.default_degree()
    if cfg.import_strategy:
        strategy, machine = read_strategy_file(cfg.import_strategy)
        if machine:
            log.info("strategy file %s was written for %s", cfg.import_strategy,
                     ", ".join(f"{k}={v}" for k, v in machine.items()))
        engine.set_strategy(strategy, fill)
    elif code_strategy is not None and not cfg.only_data_parallel:
        engine.set_strategy(code_strategy, fill)
    elif cfg.data_parallel_degree and not _elsewhere(cfg):
        if code_strategy is not None:
            log.info("--data-parallel-degree on the command line overrides the strategy given in code (%s)",
                     code_strategy.source)
        engine.set_strategy(engine.data_parallel(cfg.data_parallel_degree).with_source(
            f"data parallelism, degree {cfg.data_parallel_degree} (--data-parallel-degree)"))
    elif len(engine.processors) <= 1 and not _elsewhere(cfg):
        engine.set_strategy(engine.data_parallel(1).with_source("data parallelism (one processor)"))
    else:
        if code_strategy is not None and cfg.only_data_parallel:
            log.info("--only-data-parallel on the command line overrides the strategy given in code (%s)",
                     code_strategy.source)
        result = run_search(engine, sources, rows, seed, dp_only=cfg.only_data_parallel)
        if cfg.export_strategy:
            write_strategy_svg(_svg_path(cfg.export_strategy), engine.tgraph.graph, result.strategy,
                               f"{result.strategy.source} on {result.machine.describe()}")
        if not result.machine.present and not cfg.search_only:
            raise ConfigError(f"The strategy was searched for {result.machine.describe()}, not this machine, so "
                              f"it cannot train here. Add --search-only (with --export-strategy FILE) to stop "
                              f"after the search, or drop --machine-model-file / --search-num-*.")
        if result.machine.present:
            engine.set_strategy(result.strategy, fill)
        else:  # searched for another machine: exported, never run here
            if cfg.export_strategy:
                write_strategy_file(cfg.export_strategy, result.strategy, result.machine.summary())
                log.info("strategy for %s written to %s", result.machine.describe(), cfg.export_strategy)
            return
    log_strategy(engine)
    if cfg.export_strategy:
        write_strategy_file(cfg.export_strategy, engine.strategy, engine.machine_summary())
        log.info("strategy written to %s", cfg.export_strategy)


def _elsewhere(cfg) -> bool:
    """Whether the search is asked for a machine other than this one."""
    return bool(cfg.machine_model or cfg.search_num_nodes or cfg.search_num_workers)


def _svg_path(path: str) -> str:
    root, _ = os.path.splitext(path)
    return root + ".svg"


def machine_model(engine) -> MachineModel:
    """The machine the search plans for: this one, a machine-model file, scaled by --search-num-*."""
    cfg = _config.get()
    if cfg.machine_model:
        m = MachineModel.from_file(cfg.machine_model)
    else:
        m = MachineModel.from_runtime(engine.rtm.machine)
    if cfg.search_num_nodes or cfg.search_num_workers:
        m = m.scaled(cfg.search_num_nodes, cfg.search_num_workers)
    return m


def run_search(engine, sources, rows, seed: int, dp_only: bool = False) -> SearchResult:
    """Search (or reuse the cached search of) the engine's graph at the batch of `rows` and log the
    comparison; `dp_only`: among the data-parallel degrees only (--only-data-parallel)."""
    cfg = _config.get()
    batch = len(rows)
    machine = machine_model(engine)
    tg = engine.tgraph
    opt = engine.optimizer
    n_slots = len(opt.slot_specs((1,), "float32")) if opt is not None else 0
    problem = Problem(tg.graph, frozenset(t.uid for t in tg.per_sample_losses if t is not None),
                      frozenset(engine.trainable_uids), batch, opt, n_slots)
    key = _cache_key(engine, problem, machine, cfg, dp_only)
    cached = _cached(key)
    if cached is not None:
        log.info("strategy search: reusing the result cached for this graph, machine and batch size (%s)",
                 cached.source)
        result = SearchResult(cached, math.nan, [], Row("cached", cached, math.nan, 0, True), 0.0, 0, machine,
                              batch, ["cached"])
        return result
    what = "data-parallel degree" if dp_only else "strategy"
    log.info("%s search for %s, batch %d (budget %d, alpha %g)", what, machine.describe(), batch,
             cfg.search_budget, cfg.search_alpha)
    result = search_and_check(engine, problem, machine, sources, rows, seed, budget=cfg.search_budget,
                              alpha=cfg.search_alpha, seed=cfg.seed or 0, dp_only=dp_only)
    log.info("strategy search compared:\n%s\nwinner's configs:\n%s", result.table(), result.strategy.describe())
    _store(key, result.strategy)
    return result


def _cache_key(engine, problem: Problem, machine: MachineModel, cfg, dp_only: bool) -> str:
    names = engine.node_names
    parts = [machine.signature(), str(problem.batch), repr(getattr(problem.optimizer, "get_config", dict)()),
             f"{cfg.search_budget}/{cfg.search_alpha}/{cfg.seed or 0}/{SEARCH_VERSION}/{dp_only}"]
    for n in problem.graph.nodes:
        parts.append(f"{names[n.uid]}:{n.op!r}:{[t.shape for t in n.inputs]}:{[w.shape for w in n.weights]}:"
                     f"{[w.uid in problem.trainable for w in n.weights]}")
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:20]


def _cache_file(key: str) -> str:
    return os.path.join(cache_dir(), f"strategy-{key}.json")


def _cached(key: str) -> Strategy | None:
    path = _cache_file(key)
    if not os.path.isfile(path):
        return None
    try:
        s, _ = read_strategy_file(path)
    except StrategyError:
        return None
    return s.with_source(f"search, cached in {path}")


def _store(key: str, strategy: Strategy) -> None:
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        write_strategy_file(_cache_file(key), strategy.with_source("search"), {"cached": 1})
    except StrategyError as e:
        log.warning("could not cache the searched strategy: %s", e)


def log_strategy(engine) -> None:
    s = engine.strategy
    log.info("strategy: %s, on %d %s processor(s)\n%s", s.source, len(engine.processors),
             engine.proc_kind.value, s.describe())
