"""Which strategy a model trains with, and where it came from (always logged).

In order of precedence: `--import-strategy FILE` (or `config.set(import_strategy=...)`), then a strategy
given in code (`model.compile(strategy=...)` or `config.set(strategy=...)`: a `Strategy` or a file path),
then `--only-data-parallel` / `--data-parallel-degree N` (data parallelism), then the default: data
parallelism at the degree measured fastest. `--only-data-parallel` on the command line wins over a
strategy given in code (the log says so); together with `--import-strategy` it is an error.
`--export-strategy FILE` writes whichever strategy was chosen.
"""

from __future__ import annotations

import logging

from flexflow_keras import config as _config
from flexflow_keras.errors import ConfigError, StrategyError
from flexflow_keras.ops.strategy import Strategy, read_strategy_file, write_strategy_file

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
    else:
        if code_strategy is not None:
            log.info("--only-data-parallel on the command line overrides the strategy given in code (%s)",
                     code_strategy.source)
        engine.choose_degree(sources, rows, seed)
    log_strategy(engine)
    if cfg.export_strategy:
        write_strategy_file(cfg.export_strategy, engine.strategy, engine.machine_summary())
        log.info("strategy written to %s", cfg.export_strategy)


def log_strategy(engine) -> None:
    s = engine.strategy
    log.info("strategy: %s, on %d %s processor(s)\n%s", s.source, len(engine.processors),
             engine.proc_kind.value, s.describe())
