"""Checks on the framework's settings beyond their type: ranges, advice, mistyped flags.

- `check_ranges` raises a `ConfigError` naming the flag (or environment variable, or `config.set`
  argument) and the accepted range for a value out of range; `config.py` runs it on every source.
- `advise` logs a WARNING, once per process, for a setting that cannot help (more CPU processors than
  cores, GPU memory without GPUs), saying what happens instead.
- `unknown_flag` finds the first argument that looks like one of our flags but is none: an unknown
  `-ll:*` / `-lg:*` (the runtime's namespace), a near miss of a long flag (`--epoch`), or one of our
  one-letter flags with its letter repeated (`-bb`). Arguments that
  an `argparse.ArgumentParser` of this process declares are the script's, never ours: `watch_argparse`
  records every option string added to a parser (and the parsers), and the near-miss check runs when
  the runtime is first built (training, evaluation or prediction starts), after the script's parsing.
- `check_degree` holds a forced `--data-parallel-degree` against the batch and the processors.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import logging
import math
import weakref
from collections.abc import Callable, Iterable, Sequence

from flexflow_keras.errors import ConfigError

log = logging.getLogger("flexflow_keras")

# field -> (accepts(value), what is accepted, the short form for --help): the ranges of numeric settings
RANGES: dict[str, tuple[Callable[[float], bool], str, str]] = {
    "epochs": (lambda v: v >= 1, "a positive integer (1 or more)", ">= 1"),
    "batch_size": (lambda v: v >= 1, "a positive integer (1 or more)", ">= 1"),
    "print_freq": (lambda v: v >= 0, "0 or more (0: no progress lines, only the end-of-fit summary)", ">= 0"),
    "gpus": (lambda v: v >= 0, "zero or more (0: train on the CPU processors)", ">= 0"),
    "cpus": (lambda v: v >= 1, "a positive integer (1 or more CPU processors)", ">= 1"),
    "utils": (lambda v: v >= 0, "zero or more", ">= 0"),
    "fsize": (lambda v: v >= 1, "a positive number of MB (1 or more)", ">= 1"),
    "zsize": (lambda v: v >= 1, "a positive number of MB (1 or more)", ">= 1"),
    "csize": (lambda v: v >= 1, "a positive number of MB (1 or more)", ">= 1"),
    "data_parallel_degree": (lambda v: v >= 1, "a positive integer (the number of batch pieces)", ">= 1"),
    "search_budget": (lambda v: v >= 0, "0 or more (MCMC proposals)", ">= 0"),
    "search_alpha": (lambda v: 0 < v < math.inf, "a positive finite number (0 would accept every slower "
                                                 "proposal, a random walk)", "> 0"),
    "search_num_nodes": (lambda v: v >= 1, "a positive integer", ">= 1"),
    "search_num_workers": (lambda v: v >= 1, "a positive integer", ">= 1"),
    "seed": (lambda v: 0 <= v < 2**32, "an integer from 0 to 2**32 - 1", "0 to 2**32-1"),
}


def check_ranges(settings: dict[str, object], who: Callable[[str], str]) -> None:
    """Raise a ConfigError for the first numeric setting out of its range.

    Args:
        settings: field name -> value, already converted to numbers.
        who: field name -> how the user spelled it (`-e/--epochs`, `FF_EPOCHS`, `config.set(epochs=)`).
    """
    for name, (accepts, what, _) in RANGES.items():
        value = settings.get(name)
        if value is None or isinstance(value, bool):
            continue
        if not accepts(value):  # type: ignore[arg-type]
            raise ConfigError(f"{who(name)} must be {what}, received {value}.")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; the whole machine where there is none)."""
    from runtime.comm import os_cores

    return os_cores()


_said: set[str] = set()


def warn_once(message: str) -> None:
    """Log `message` as a warning the first time it comes up in this process."""
    if message not in _said:
        _said.add(message)
        log.warning("warning: %s", message)


def advise(cfg, who: Callable[[str], str], given: set[str]) -> None:
    """Warn about settings of `cfg` (a `Config`) that cannot help.

    Args:
        cfg: the merged configuration.
        who: field name -> its source's spelling (`-ll:cpu`, `FF_CPUS`, `config.set(cpus=)`).
        given: the fields set by the user (command line, environment, code), not defaults.
    """
    def setting(name: str) -> str:  # `-ll:cpu 64`, `FF_CPUS=64`, `config.set(cpus=64)`
        spelled, value = who(name), getattr(cfg, name)
        if spelled.startswith("config.set("):
            return f"config.set({name}={value})"
        return f"{spelled}={value}" if spelled.startswith("FF_") else f"{spelled} {value}"

    cores = usable_cores()
    if "cpus" in given and cfg.cpus > cores:
        warn_once(f"{setting('cpus')} asks for {cfg.cpus} CPU processors, but this process may run on "
                  f"{cores} core(s) (os.sched_getaffinity): the {cfg.cpus} workers take turns on {cores} "
                  f"core(s), and work split {cfg.cpus} ways runs no faster than split {cores} ways. Training "
                  f"goes on with {cfg.cpus}; pass -ll:cpu {cores} to match the cores.")
    if "fsize" in given and cfg.fsize is not None and not cfg.gpus:
        warn_once(f"{setting('fsize')} sets the memory of each GPU, but -ll:gpu is 0: it is ignored "
                  f"and training runs on the CPU processors. Add -ll:gpu N to train on GPUs, or drop "
                  f"-ll:fsize.")


def divisors(n: int) -> list[int]:
    """The divisors of `n`, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def _shorten(values: list[int], keep: int = 8) -> str:
    return ", ".join(map(str, values)) if len(values) <= keep else ", ".join(map(str, values[:keep])) + ", ..."


def check_degree(degree: int, batch: int, processors: int, kind: str) -> None:
    """Hold a forced data-parallel degree against the batch and the processors.

    More pieces than samples is a ConfigError; uneven pieces and more pieces than processors train
    (the runtime splits a batch into near-equal pieces and places piece k on processor k mod P) and are
    warned about, with what happens and the settings that would balance them.

    Args:
        degree: the `--data-parallel-degree`.
        batch: the samples of a training batch.
        processors: how many processors of the kind that trains.
        kind: "CPU" or "GPU" (for the message).
    """
    if degree > batch:
        raise ConfigError(f"--data-parallel-degree {degree} asks for {degree} pieces of a batch of {batch} "
                          f"sample(s), and a piece needs at least one sample. Use a degree of at most {batch} "
                          f"(a divisor of the batch splits it evenly: {_shorten(divisors(batch))}), or raise "
                          f"-b/--batch-size.")
    if batch % degree:
        base, extra = divmod(batch, degree)
        even = [d for d in divisors(batch) if d <= max(degree, processors)]
        warn_once(f"--data-parallel-degree {degree} splits the batch of {batch} unevenly: {extra} piece(s) of "
                  f"{base + 1} and {degree - extra} of {base} samples; the largest piece sets the step time. "
                  f"A divisor of the batch splits it evenly: {_shorten(even)}.")
    if degree > processors:
        warn_once(f"--data-parallel-degree {degree} on {processors} {kind} processor(s): pieces k and "
                  f"k+{processors} share a processor and run one after the other. Use a degree of at most "
                  f"{processors}, or more processors (-ll:{kind.lower()} {degree}).")


# --- mistyped flags ----------------------------------------------------------------------------------------

declared: set[str] = set()  # option strings declared by the process's ArgumentParsers
_parsers: list[weakref.ref] = []


def watch_argparse() -> None:
    """Record the option strings every ArgumentParser (and group) declares, and the parsers themselves."""
    container = argparse._ActionsContainer
    if getattr(container.add_argument, "_flexflow", False):
        return
    add, init = container.add_argument, argparse.ArgumentParser.__init__

    @functools.wraps(add)
    def add_argument(self, *args, **kwargs):
        action = add(self, *args, **kwargs)
        declared.update(getattr(action, "option_strings", ()) or ())
        return action

    @functools.wraps(init)
    def parser_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _parsers.append(weakref.ref(self))

    add_argument._flexflow = True  # type: ignore[attr-defined]
    container.add_argument = add_argument
    argparse.ArgumentParser.__init__ = parser_init


def last_parser() -> argparse.ArgumentParser | None:
    """The most recently created ArgumentParser still alive, or None."""
    for ref in reversed(_parsers):
        parser = ref()
        if parser is not None:
            return parser
    return None


def _is_declared(key: str, names: Iterable[str]) -> bool:
    # argparse accepts an unambiguous prefix of a long option (allow_abbrev): `--epoch` for `--epochs`
    return any(n == key or (key.startswith("--") and len(key) > 2 and n.startswith(key)) for n in names)


def unknown_flag(args: Sequence[str], known: Iterable[str], script: Iterable[str] = (),
                 near_misses: bool = True) -> ConfigError | None:
    """The error for the first argument of `args` that looks like one of our flags but is none, or None.

    Args:
        args: the arguments our parser did not consume.
        known: our flags (`-e`, `--epochs`, `-ll:gpu`, ...).
        script: option strings the script's own argument parsers declare (never reported).
        near_misses: also report near misses of our long flags (`--epoch`); False: only `-ll:*`/`-lg:*`.
    """
    known, script = sorted(set(known)), set(script)
    for arg in args:
        if arg == "--":
            break  # what follows is positional, by convention
        key = arg.partition("=")[0]
        if not key.startswith("-") or _is_declared(key, script) or key in known:
            continue
        one_dash = "-" + key.lstrip("-")
        if one_dash != key and one_dash.startswith(("-ll:", "-lg:")) and one_dash in known:
            return ConfigError(f"Unknown flag {key}: did you mean {one_dash}? (the runtime's -ll:* and -lg:* flags "
                               f"take one dash; `--help` lists them all).")
        if key.startswith(("-ll:", "-lg:")):
            ours = [k for k in known if k.startswith(("-ll:", "-lg:"))]
            # compare the names within the namespace (a shared `-ll:` would make everything look close)
            same = {k[4:]: k for k in ours if k[:4] == key[:4]}
            near = [same[m] for m in difflib.get_close_matches(key[4:], list(same), n=1, cutoff=0.6)]
            near = near or difflib.get_close_matches(key, ours, n=1, cutoff=0.85)  # -lg:gpu for -ll:gpu
            hint = f"did you mean {near[0]}?" if near else f"the runtime's flags are {', '.join(ours)}"
            return ConfigError(f"Unknown flag {key}: {hint} (-ll:* and -lg:* flags belong to the runtime; "
                               f"`--help` lists them all).")
        if near_misses and len(key) > 2 and key[1] != "-" and set(key[1:]) == {key[1]} and key[:2] in known:
            return ConfigError(f"Unknown flag {key}: did you mean {key[:2]}? (Neither flexflow_keras nor an "
                               f"argparse parser of the script declares {key}; `--help` lists our flags.)")
        if near_misses and (key.startswith("--") or (len(key) > 2 and key[1].isalpha())):
            near = difflib.get_close_matches("--" + key.lstrip("-"), [k for k in known if k.startswith("--")],
                                             n=1, cutoff=0.8)
            if near:
                return ConfigError(f"Unknown flag {key}: did you mean {near[0]}? (Neither flexflow_keras nor "
                                   f"an argparse parser of the script declares {key}; `--help` lists our flags.)")
    return None
