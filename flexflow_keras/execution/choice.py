"""Which strategy a model trains with, and where it came from (always logged).

In order of precedence:
1. `--import-strategy FILE` (or `config.set(import_strategy=...)`);
2. `--only-data-parallel`, or `--data-parallel-degree N` given on the command line: data parallelism at
   the degree measured fastest, or at degree N; they override a strategy given in code and say so;
3. a strategy given in code (`model.compile(strategy=...)` or `config.set(strategy=...)`: a `Strategy`
   or a file path);
4. `--data-parallel-degree N`;
5. the default: the search (`flexflow_keras/search/`) on a machine with more than one processor,
   calibrated on and checked by a few measured steps (execution/measured.py), which prints what it
   compared and why the winner won.
With an imported file or a strategy given in code, `--data-parallel-degree N` is the degree of the ops
the strategy does not name (default: one piece per GPU; on CPUs, whole on one processor). Settings that
ask for two strategies (`--import-strategy` with `--only-data-parallel`) are an error, and so are the
search's own settings (`--search-budget`, `--search-alpha`, the machine flags) where no search runs: no
flag is accepted without effect. `--export-strategy FILE` writes whichever strategy was chosen (and,
after a search, an SVG picture of it beside the file). A search for a machine other than this one
(`--machine-model-file`, `--search-num-nodes`, `--search-num-workers`) can only be exported:
`--search-only` stops there; training would be an error.

A search result is cached (`FF_CACHE_DIR`) by graph, machine, batch size, optimizer, search settings and
kernel sources, so the same command on the same machine chooses the same strategy without searching
again (and a change of the kernels searches again).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os

from flexflow_keras import config as _config
from flexflow_keras.errors import ConfigError, StrategyError
from flexflow_keras.execution import distributed
from flexflow_keras.execution.measured import (
    FULL,
    MEASURE_SHARE,
    MINIMAL,
    effort_for,
    minimal_choice,
    search_and_check,
)
from flexflow_keras.execution.trial import DegreeTrial, trial_degree
from flexflow_keras.ops.strategy import Strategy, read_strategy_file, write_strategy_file
from flexflow_keras.search.costs import cache_dir, kernels_id
from flexflow_keras.search.driver import Problem, Row, SearchResult
from flexflow_keras.search.machine import MachineModel
from flexflow_keras.search.svg import write_strategy_svg
from flexflow_keras.utils.flag_checks import check_degree
from runtime.comm import host_cores

SEARCH_VERSION = 3  # part of the cache key: bump when the search changes what it would choose (3: two-round short checks, free-core kernel costs)

log = logging.getLogger("flexflow_keras")


def user_strategy(value, who: str) -> Strategy:
    """A strategy given in code: a `Strategy`, or the path of a strategy file."""
    if isinstance(value, Strategy):
        return value
    if isinstance(value, str):
        return read_strategy_file(value, who)[0]
    raise StrategyError(f"{who} expects a flexflow_keras Strategy or the path of a strategy file, received "
                        f"{type(value).__name__} {value!r:.60}.")


# settings that only steer the search: given where no search runs, they are an error (never ignored)
_SEARCH_SETTINGS = (("search_budget", "--search-budget"), ("search_alpha", "--search-alpha"),
                    ("machine_model", "--machine-model-file"), ("search_num_nodes", "--search-num-nodes"),
                    ("search_num_workers", "--search-num-workers"))


def _no_search_flags(cfg, why: str, names=None) -> None:
    given = [flag for name, flag in _SEARCH_SETTINGS if (names is None or name in names) and cfg.given(name)]
    if given:
        flags = " and ".join(given)
        verb = "steers" if len(given) == 1 else "steer"
        raise ConfigError(f"{flags} only {verb} the strategy search, and no search runs here: {why}. "
                          f"Drop {flags}.")


def _source(cfg, code_strategy, engine) -> str:
    """Where the strategy comes from: "import", "code", "degree", "one" (one processor) or "search"."""
    dp_flag = "--only-data-parallel" if cfg.only_data_parallel else (
        f"--data-parallel-degree {cfg.data_parallel_degree}" if cfg.data_parallel_degree else "")
    if cfg.import_strategy and cfg.only_data_parallel:
        raise ConfigError(f"--only-data-parallel and --import-strategy {cfg.import_strategy} ask for two "
                          f"different strategies; give one of them.")
    if cfg.only_data_parallel and cfg.data_parallel_degree and {"only_data_parallel", "data_parallel_degree"} <= \
            cfg.from_cli:  # the degree is fixed: nothing is left for --only-data-parallel to compare
        raise ConfigError(f"--only-data-parallel measures the data-parallel degrees and trains the fastest, and "
                          f"--data-parallel-degree {cfg.data_parallel_degree} fixes the degree, so "
                          f"--only-data-parallel would have no effect; give one of them.")
    if cfg.data_parallel_degree and _elsewhere(cfg):
        raise ConfigError(f"--data-parallel-degree {cfg.data_parallel_degree} trains on this machine, and "
                          f"--machine-model-file / --search-num-* search for another one; give one of them.")
    if cfg.import_strategy:  # --data-parallel-degree N: the degree of the ops the file does not name
        _no_search_flags(cfg, f"the strategy comes from --import-strategy {cfg.import_strategy}")
        return "import"
    # over a strategy given in code: --only-data-parallel, or --data-parallel-degree from the command line
    # (set from code, the degree is that of the ops the code's strategy does not name)
    overrides = cfg.only_data_parallel or (cfg.data_parallel_degree and "data_parallel_degree" in cfg.from_cli)
    if code_strategy is not None and overrides:
        log.info("%s overrides the strategy given in code (%s)", dp_flag, code_strategy.source)
    elif code_strategy is not None:
        _no_search_flags(cfg, f"the strategy is given in code ({code_strategy.source})")
        return "code"
    if cfg.data_parallel_degree:
        _no_search_flags(cfg, f"--data-parallel-degree {cfg.data_parallel_degree} fixes the strategy")
        return "degree"
    if cfg.only_data_parallel:  # a search among the data-parallel degrees: no walk to budget or heat
        _no_search_flags(cfg, "--only-data-parallel compares the data-parallel degrees only",
                         {"search_budget", "search_alpha"})
    if len(engine.processors) <= 1 and not _elsewhere(cfg):
        _no_search_flags(cfg, "this machine has one processor (-ll:cpu 1 or -ll:gpu 1), so there is nothing "
                              "to split")
        return "one"
    return "search"


def choose(engine, code_strategy, sources, rows, seed: int) -> None:
    """Set `engine`'s strategy for training (see the module docstring) and export it when asked. `rows`
    is the global batch: under MPI, a strategy for this machine plans one node's shard of it (every node
    runs the node's strategy on its shard), one for another machine (--search-num-*, a machine file) the
    whole batch."""
    cfg = _config.get()
    _config.note_used(*_config._STRATEGY_SETTINGS)  # read here (an unread one is warned about at exit)
    mine = None if _elsewhere(cfg) else distributed.shard_rows(rows)
    rows = rows if mine is None else mine
    if code_strategy is None and cfg.strategy is not None:
        code_strategy = user_strategy(cfg.strategy, "config.set(strategy=...)")
    fill = engine.default_degree()
    if cfg.data_parallel_degree:
        check_degree(cfg.data_parallel_degree, len(rows), len(engine.processors), engine.proc_kind.name)
    source = _source(cfg, code_strategy, engine)
    if source == "import":
        strategy, machine = read_strategy_file(cfg.import_strategy)
        if machine:
            log.info("strategy file %s was written for %s", cfg.import_strategy,
                     ", ".join(f"{k}={v}" for k, v in machine.items()))
        engine.set_strategy(strategy, fill)
    elif source == "code":
        engine.set_strategy(code_strategy, fill)
    elif source == "degree":
        engine.set_strategy(engine.data_parallel(cfg.data_parallel_degree).with_source(
            f"data parallelism, degree {cfg.data_parallel_degree} (--data-parallel-degree)"))
    elif source == "one":
        engine.set_strategy(engine.data_parallel(1).with_source("data parallelism (one processor)"))
    else:
        result = run_search(engine, sources, rows, seed, dp_only=cfg.only_data_parallel)
        if not result.machine.present and not cfg.search_only:
            raise ConfigError(f"The strategy was searched for {result.machine.describe()}, not this machine, so "
                              f"it cannot train here. Add --search-only (with --export-strategy FILE) to stop "
                              f"after the search, or drop --machine-model-file / --search-num-*.")
        if not result.machine.present:  # searched for another machine: exported, never run here
            if not result.rows:  # no comparison logged its configs (a cached result)
                log.info("strategy for %s: %s\n%s", result.machine.describe(), result.strategy.source,
                         result.strategy.describe(max_lines=LOG_LINES))
            if cfg.export_strategy:
                distributed.on_rank0(_export, cfg.export_strategy, engine, result.strategy, result.machine.summary(),
                                     f"{result.strategy.source} on {result.machine.describe()}")
                log.info("strategy for %s written to %s", result.machine.describe(), cfg.export_strategy)
            return
        engine.set_strategy(result.strategy, fill)
        log_strategy(engine)
        if cfg.export_strategy:
            distributed.on_rank0(_export, cfg.export_strategy, engine, engine.strategy, engine.machine_summary(),
                                 f"{result.strategy.source} on {result.machine.describe()}")
            log.info("strategy written to %s (and its picture to %s)", cfg.export_strategy,
                     _svg_path(cfg.export_strategy))
        return
    log_strategy(engine)
    if cfg.export_strategy:
        distributed.on_rank0(write_strategy_file, cfg.export_strategy, engine.strategy, engine.machine_summary())
        log.info("strategy written to %s", cfg.export_strategy)


def _export(path: str, engine, strategy: Strategy, machine: dict, title: str) -> None:
    """A searched strategy: its file, then its picture beside it."""
    write_strategy_file(path, strategy, machine)
    write_strategy_svg(_svg_path(path), engine.tgraph.graph, strategy, title)


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
        m = MachineModel.from_runtime(engine.rtm.machine, host_cores(), distributed.world())
        policy = getattr(engine.rtm, "policy", None)
        if m.kind == "CPU" and policy is not None:  # the cost model measures kernels with the engine's threads
            m.free_cores = policy.free
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
        return _reuse(cached, machine, batch)
    what = "data-parallel degree" if dp_only else "strategy"
    asked = any(cfg.given(n) for n in ("search_budget", "search_alpha", "search_only", "export_strategy"))
    planned = None if asked else getattr(engine, "planned_steps", None)
    loop = engine.planned_run  # what `planned` counts when it is not a fit's steps (train_on_batch)
    run = loop or f"a fit of {planned} steps"
    effort, probe_s = effort_for(engine, machine, sources, rows, seed, planned)
    if effort is not FULL and (cached := _cached(key + "-light")) is not None:  # a short fit's light check
        return _reuse(cached, machine, batch)
    if effort is MINIMAL:
        best, degree, line = minimal_choice(engine, machine, sources, rows, seed, probe_s)
        strategy = best.with_source(f"data parallelism, degree {degree} (measured for a short fit)")
        log.info("%s search, minimal for %s (measuring more would cost over %d%% of it): %s",
                 what, run, round(MEASURE_SHARE * 100), line)
        return SearchResult(strategy, probe_s, [], Row(strategy.source, strategy, probe_s, 0, True), 0.0, 0,
                            machine, batch, [line])
    if effort is None:
        d = engine.default_degree()
        each = "" if probe_s is None else f" ({probe_s * 1e3:.1f} ms each)"
        tried = trial_degree(engine, batch, planned) if d == 1 and machine.present else 1
        if tried > 1:  # its first steps train at degree 1 and `tried` and keep the faster (execution/trial.py)
            engine.trial = DegreeTrial(engine, tried, batch, lambda s, _line: _store_light(key, s), planned)
            how = f"its first steps train at degrees 1 and {tried} and it keeps the faster"
            strategy = engine.data_parallel(1).with_source("data parallelism, degree 1 (a short fit's first steps)")
        else:
            how = f"it trains with data parallelism, degree {d}"
            strategy = engine.data_parallel(d).with_source(f"data parallelism, degree {d} (a short fit: no search)")
            engine.provisional = True  # nothing measured: a later, longer fit chooses again (Engine.provisional)
        now = ("--export-strategy FILE measures the degrees now (and writes the one chosen)" if dp_only else
               "--search-budget N searches now")  # --search-budget is an error beside --only-data-parallel
        log.info("%s search skipped: measuring strategies would cost more than %d%% of %s%s, so %s. A longer "
                 "fit searches (its result is cached for later runs); %s.", what,
                 round(MEASURE_SHARE * 100), loop or f"this fit's {planned} steps", each, how, now)
        return SearchResult(strategy, probe_s, [], Row(strategy.source, strategy, probe_s, 0, True), 0.0, 0,
                            machine, batch, ["search skipped: a short fit"])
    log.info("%s search for %s, batch %d (budget %d, alpha %g%s)", what, machine.describe(), batch,
             cfg.search_budget, cfg.search_alpha,
             "" if effort is FULL else f"; {effort.name} measurements for {run}")
    result = search_and_check(engine, problem, machine, sources, rows, seed, budget=cfg.search_budget,
                              alpha=cfg.search_alpha, seed=cfg.seed or 0, dp_only=dp_only, effort=effort)
    log.info("strategy search compared:\n%s\nwinner's configs:\n%s", result.table(),
             result.strategy.describe(max_lines=LOG_LINES))
    # a light check is cached apart: short fits reuse it, a fit long enough for the full check measures anew
    # under MPI rank 0 writes (its strategy is the one every rank trains with: distributed.agree_strategy);
    # no barrier: a rank may come here while another reused its cache or took the minimal path
    if effort is FULL:
        _store_rank0(key, result.strategy)
    else:
        _store_light(key, result.strategy)
    return result


def _store_light(key: str, strategy: Strategy) -> None:
    """A short fit's choice (a light or minimal check, a trial of its first steps): short fits reuse it,
    a fit long enough for the full check measures anew."""
    _store_rank0(key + "-light", strategy)


def _store_rank0(key: str, strategy: Strategy) -> None:
    w = distributed.world()
    if w is None or w.rank == 0:
        _store(key, strategy)


def _reuse(cached: Strategy, machine: MachineModel, batch: int) -> SearchResult:
    log.info("strategy search: reusing the result cached for this graph, machine and batch size (%s)", cached.source)
    return SearchResult(cached, math.nan, [], Row("cached", cached, math.nan, 0, True), 0.0, 0, machine, batch,
                        ["cached"])


def _optimizer_key(optimizer) -> str:
    """The optimizer's settings for the cache key, without its name. A learning-rate schedule of the script's
    own need not implement get_config (Keras asks for it only to save the optimizer: keras.io's focal
    modulation network's WarmUpCosine does not), so such an optimizer is keyed by its class and the
    schedule's."""
    try:
        config = getattr(optimizer, "get_config", dict)()
    except NotImplementedError:
        schedule = getattr(optimizer, "_learning_rate", None)
        return f"{type(optimizer).__qualname__}/{type(schedule).__qualname__}"
    return repr({k: v for k, v in config.items() if k != "name"})


def _cache_key(engine, problem: Problem, machine: MachineModel, cfg, dp_only: bool) -> str:
    names = engine.node_names
    parts = [machine.signature(), kernels_id(), str(problem.batch), _optimizer_key(problem.optimizer),
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
        s, _ = read_strategy_file(path, "the search cache")
    except StrategyError:
        return None
    return s.with_source(f"search, cached in {path}")


def _store(key: str, strategy: Strategy) -> None:
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        write_strategy_file(_cache_file(key), strategy.with_source("search"), {"cached": 1},
                            who="the search cache")
    except StrategyError as e:
        log.warning("could not cache the searched strategy: %s", e)


# a strategy's log lists at most this many ops one by one (a 240-op EfficientNet would fill the screen)
LOG_LINES = 24


def log_strategy(engine) -> None:
    s = engine.strategy
    log.info("strategy: %s, on %d %s processor(s)\n%s", s.source, len(engine.processors),
             engine.proc_kind.value, s.describe(max_lines=LOG_LINES))
