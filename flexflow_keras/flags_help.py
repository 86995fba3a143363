"""`--help` / `-h`: the framework's flags, with the script's own help when it has argparse.

The table is generated from the flag table `config.py` parses (`config._FLAGS`), the defaults of
`config.Config` and the ranges of `utils/flag_checks.py`, with a one-line meaning per setting here.

When the script uses argparse, every parser's help gets a "flexflow_keras flags:" section appended
(`install` wraps `ArgumentParser.format_help`), so argparse's own `-h` prints both and exits. When the
script never uses argparse, `config` calls `maybe_exit` the first time it reads the command line: the
help (the script's parser's, when one exists by then, else ours) is printed and the process exits 0 before
any training (a script that imports argparse but has built no parser yet is left to print its own); the
runtime calls it again before it is built, so `--help` never trains.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys

from flexflow_keras.utils import flag_checks

MEANINGS = {
    "epochs": "epochs to train",
    "batch_size": "global batch size (all processors together)",
    "print_freq": "a progress line every N iterations (0: only the end-of-fit summary)",
    "dataset": "dataset file or folder (none: synthetic data, and the log says so)",
    "gpus": "GPUs per node (0: train on the CPU processors)",
    "cpus": "CPU processors (data-loading workers and CPU compute)",
    "utils": "utility processors (the runtime's own fills and copies)",
    "fsize": "MB of framebuffer memory per GPU",
    "zsize": "MB of zero-copy (pinned host) memory per node",
    "csize": "MB of system memory",
    "profile": "record a profile timeline (Chrome trace / Perfetto JSON)",
    "profile_path": "where -lg:prof writes the timeline",
    "only_data_parallel": "no split but the batch: the fastest data-parallel degree trains",
    "data_parallel_degree": "force data parallelism at this degree",
    "search_budget": "MCMC proposals of the strategy search",
    "search_alpha": "MCMC temperature: x% slower is accepted with probability exp(-alpha x)",
    "search_only": "search, print and export the strategy, then exit without training",
    "search_num_nodes": "search for a machine of this many nodes (with --search-only)",
    "search_num_workers": "search for this many devices per node (with --search-only)",
    "import_strategy": "train with the strategy in this JSON file",
    "export_strategy": "write the strategy that trains to this JSON file",
    "machine_model": "search for a described machine (a name or a JSON file; with --search-only)",
    "seed": "seed for synthetic data and the search",
    "executor": "threaded, or sequential (tasks one at a time, for debugging)",
    "debug": "show the traceback of a flexflow_keras error (also FF_DEBUG=1)",
}
# what a default of None means
NONE_DEFAULTS = {"dataset": "synthetic", "fsize": "90% of free", "csize": "host memory",
                 "data_parallel_degree": "searched", "search_num_nodes": "this machine",
                 "search_num_workers": "this machine", "machine_model": "this machine"}
HELP_FLAGS = ("-h", "--help")


def _default(field: dataclasses.Field) -> str:
    value = field.default
    if value is None:
        return NONE_DEFAULTS.get(field.name, "none")
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _metavar(name: str, kind: str) -> str:
    return "N" if kind in ("int", "float") else ("NAME" if name == "executor" else "PATH")


def help_text() -> str:
    """The framework's flags: spellings, default and meaning, one line each, then the environment."""
    from flexflow_keras import config

    spellings: dict[str, list[str]] = {}
    for flag, (name, _) in config._FLAGS.items():
        spellings.setdefault(name, []).append(flag)
    fields = {f.name: f for f in dataclasses.fields(config.Config)}
    rows = []
    for name, flags in spellings.items():
        kind = config._KINDS[name]
        left = ", ".join(flags) + ("" if kind == "bool" else f" {_metavar(name, kind)}")
        meaning = MEANINGS[name]
        if name in flag_checks.RANGES:
            meaning += f" ({flag_checks.RANGES[name][2]})"
        rows.append((left, _default(fields[name]), meaning))
    width = 26
    dwidth = max(len(r[1]) for r in rows) + 2
    lines = ["flexflow_keras flags (anywhere on the command line; the script's own arguments are left to it):",
             f"  {'flag':<{width}}{'default':<{dwidth}}meaning"]
    for left, default, meaning in rows:
        if len(left) >= width - 1:  # a long spelling gets its own line, as argparse does
            lines.append(f"  {left}")
            left = ""
        lines.append(f"  {left:<{width}}{default:<{dwidth}}{meaning}")
    env = ", ".join(f"{var}" for var in config._ENV)
    lines.append(f"Environment variables set defaults, with the same checks: {env}; FF_DEBUG=1 shows "
                 f"tracebacks.")
    return "\n".join(lines) + "\n"


def install() -> None:
    """Append our flags to the help of every argparse parser of the process."""
    original = argparse.ArgumentParser.format_help
    if getattr(original, "_flexflow", False):
        return

    @functools.wraps(original)
    def format_help(self):
        return original(self) + "\n" + help_text()

    format_help._flexflow = True  # type: ignore[attr-defined]
    argparse.ArgumentParser.format_help = format_help


def requested(argv) -> bool:
    """Whether `argv` asks for help (`-h` or `--help`, unless a script's parser uses `-h` otherwise)."""
    for flag in HELP_FLAGS:
        if flag in argv and not (flag in flag_checks.declared and not _is_help_option(flag)):
            return True
    return False


def _is_help_option(flag: str) -> bool:
    parser = flag_checks.last_parser()
    if parser is None:
        return False
    action = parser._option_string_actions.get(flag)
    return isinstance(action, argparse._HelpAction)


def _main_uses_argparse() -> bool:
    main = sys.modules.get("__main__")
    return any(v is argparse or v is argparse.ArgumentParser for v in vars(main).values()) if main else False


def maybe_exit(argv, final: bool = False) -> None:
    """Print the help and exit 0 when `argv` asks for it (see the module docstring).

    Args:
        argv: the command line's arguments.
        final: the last chance before training (the runtime is being built); otherwise, a script that
            imports argparse but has no parser yet is left to print its help itself.
    """
    if not requested(argv):
        return
    parser = flag_checks.last_parser()
    if parser is None and not final and _main_uses_argparse():
        return
    text = parser.format_help() if parser is not None else help_text()
    if parser is not None and "flexflow_keras flags" not in text:
        text += "\n" + help_text()
    sys.stdout.write(text)
    sys.stdout.flush()
    raise SystemExit(0)
