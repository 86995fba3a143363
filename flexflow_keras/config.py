"""Run configuration: defaults < environment < code (`config.set`) < command line.

The command line is read once, lazily, from `sys.argv`; FlexFlow and Legion flags are recognised and
everything else is left for the script's own argparse. `config.get()` returns the merged `Config`;
`Config.from_cli` records which fields came from the command line so the training loop can say, in one
log line, that a flag overrode the script's argument.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from flexflow_keras.errors import ConfigError
from flexflow_keras.utils import flag_checks

log = logging.getLogger("flexflow_keras")


@dataclass
class Config:
    """Every setting the framework reads. Field docs give the flag."""

    epochs: int = 1  # -e / --epochs
    batch_size: int = 64  # -b / --batch-size (global)
    print_freq: int = 10  # -p / --print-freq
    dataset: str | None = None  # -d / --dataset
    gpus: int = 0  # -ll:gpu
    cpus: int = 4  # -ll:cpu (CPU processors / data-loading workers)
    utils: int = 1  # -ll:util
    fsize: int | None = None  # -ll:fsize MB per GPU
    zsize: int = 256  # -ll:zsize MB zero-copy per node
    csize: int | None = None  # -ll:csize MB system memory
    profile: bool = False  # -lg:prof
    profile_path: str = "flexflow_profile.json"  # --profile-path
    only_data_parallel: bool = False  # --only-data-parallel
    data_parallel_degree: int | None = None  # --data-parallel-degree (default: chosen by measured cost)
    search_budget: int = 500  # --search-budget (MCMC proposals)
    search_alpha: float = 0.05  # --search-alpha
    search_only: bool = False  # --search-only
    search_num_nodes: int | None = None  # --search-num-nodes
    search_num_workers: int | None = None  # --search-num-workers (devices per node)
    import_strategy: str | None = None  # --import-strategy
    export_strategy: str | None = None  # --export-strategy
    machine_model: str | None = None  # --machine-model-file
    seed: int | None = None  # --seed
    strategy: object = None  # code only: a Strategy or a strategy file path (see execution/choice.py)
    executor: str = "threaded"  # --executor threaded|sequential
    debug: bool = False  # --debug (or FF_DEBUG=1): show the traceback of a flexflow_keras error
    from_cli: frozenset[str] = field(default_factory=frozenset)
    from_code: frozenset[str] = field(default_factory=frozenset)  # set with config.set

    def given(self, name: str) -> bool:
        """Whether `name` was set on the command line or from code (not a default or the environment)."""
        return name in self.from_cli or name in self.from_code

    def legion_args(self) -> list[str]:
        """The runtime flags in Legion's spelling (for `runtime.Machine.from_args`)."""
        args = ["-ll:cpu", str(self.cpus), "-ll:gpu", str(self.gpus), "-ll:util", str(self.utils),
                "-ll:zsize", str(self.zsize)]
        if self.fsize is not None:
            args += ["-ll:fsize", str(self.fsize)]
        if self.csize is not None:
            args += ["-ll:csize", str(self.csize)]
        return args


# flag -> (field, type); "bool" flags take no value
_FLAGS: dict[str, tuple[str, str]] = {
    "-e": ("epochs", "int"), "--epochs": ("epochs", "int"),
    "-b": ("batch_size", "int"), "--batch-size": ("batch_size", "int"),
    "-p": ("print_freq", "int"), "--print-freq": ("print_freq", "int"),
    "-d": ("dataset", "str"), "--dataset": ("dataset", "str"),
    "-ll:gpu": ("gpus", "int"), "-ll:cpu": ("cpus", "int"), "-ll:util": ("utils", "int"),
    "-ll:fsize": ("fsize", "int"), "-ll:zsize": ("zsize", "int"), "-ll:csize": ("csize", "int"),
    "-lg:prof": ("profile", "bool"), "--profile-path": ("profile_path", "str"),
    "-lg:prof_logfile": ("profile_path", "str"),
    "--only-data-parallel": ("only_data_parallel", "bool"),
    "--data-parallel-degree": ("data_parallel_degree", "int"),
    "--search-budget": ("search_budget", "int"), "--budget": ("search_budget", "int"),
    "--search-alpha": ("search_alpha", "float"), "--alpha": ("search_alpha", "float"),
    "--import-strategy": ("import_strategy", "str"), "--import": ("import_strategy", "str"),
    "--export-strategy": ("export_strategy", "str"), "--export": ("export_strategy", "str"),
    "--machine-model-file": ("machine_model", "str"), "--machine-model": ("machine_model", "str"),
    "--search-only": ("search_only", "bool"), "--search-num-nodes": ("search_num_nodes", "int"),
    "--search-num-workers": ("search_num_workers", "int"),
    "--seed": ("seed", "int"), "--executor": ("executor", "str"), "--debug": ("debug", "bool"),
}
# Legion's profiler flag takes a count in Legion (-lg:prof 1); accept both forms.
_OPTIONAL_VALUE = {"-lg:prof"}

_ENV = {"FF_EPOCHS": "epochs", "FF_BATCH_SIZE": "batch_size", "FF_PRINT_FREQ": "print_freq",
        "FF_DATASET": "dataset", "FF_GPUS": "gpus", "FF_CPUS": "cpus", "FF_FSIZE": "fsize",
        "FF_ZSIZE": "zsize", "FF_EXECUTOR": "executor", "FF_SEED": "seed", "FF_SEARCH_BUDGET": "search_budget"}

_code_overrides: dict[str, object] = {}
_cli_cache: tuple[dict[str, object], list[str]] | None = None
_argv_used: list[str] | None = None


def _convert(flag: str, kind: str, raw, example: str | None = None, message: str | None = None):
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        return raw
    except (TypeError, ValueError):
        article = "an" if kind == "int" else "a"
        raise ConfigError(message or f"{flag} expects {article} {kind} value, received {raw!r}. "
                                     f"Example: {example or flag + ' 4'}") from None


# a value for each field's "Example:" in the messages (a number where none is listed)
_EXAMPLES = {"dataset": "~/data/mnist.npz", "profile_path": "profile.json", "import_strategy": "strategy.json",
             "export_strategy": "strategy.json", "machine_model": "dgx1_v100", "executor": "sequential",
             "search_alpha": "0.05"}


def _example(flag: str, fname: str) -> str:
    return f"{flag} {_EXAMPLES.get(fname, '4')}"


_KINDS = {fname: kind for fname, kind in _FLAGS.values()}
_NAMES = {fname: flag for flag, (fname, _) in reversed(_FLAGS.items())}  # field -> its first flag
_SPELLINGS = {fname: "/".join(f for f, (n, _) in _FLAGS.items() if n == fname and not f.startswith("-lg:prof_"))
              for fname in _KINDS}  # field -> "-e/--epochs"
_VARS = {fname: var for var, fname in _ENV.items()}


def _flag_name(name: str) -> str:
    return _SPELLINGS.get(name, name)


def _code_name(name: str) -> str:
    return f"config.set({name}=)"


def _source_name(cfg: Config) -> Callable[[str], str]:
    """Field -> how `cfg` got it: the flag, the config.set argument or the environment variable."""
    def who(name: str) -> str:
        if name in cfg.from_cli:
            return _NAMES.get(name, name)
        if name in cfg.from_code:
            return _code_name(name)
        return _VARS.get(name, name)
    return who


def _numbers(settings: dict[str, object]) -> None:
    """Convert numeric settings given from code in place (a clear error for what is not a number)."""
    for name, value in settings.items():
        kind = _KINDS.get(name)
        if kind in ("int", "float") and value is not None and not isinstance(value, bool):
            settings[name] = _convert(f"{_NAMES[name]} ({name}=)", kind, value, f"config.set({name}=4)")


def _code_types(settings: dict[str, object]) -> None:
    """Settings from `config.set`: what int() or truthiness would silently change is an error (epochs=2.5
    would train 2 epochs, epochs=True 1, only_data_parallel="no" would turn it on); a path is a non-empty
    string (an empty one would mean "none" and train on synthetic data), os.PathLike taken as its str."""
    for name, value in settings.items():
        kind, call = _KINDS.get(name), f"config.set({name}=)"
        if value is None or kind is None:
            continue
        if kind == "bool" and not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"{call} expects True or False, received {type(value).__name__} {value!r}. "
                              f"Example: config.set({name}=True)")
        if kind == "int" and (isinstance(value, (bool, np.bool_)) or (
                isinstance(value, (float, np.floating)) and not float(value).is_integer())):
            raise ConfigError(f"{call} expects an integer, received {type(value).__name__} {value!r}. "
                              f"Example: config.set({name}=4)")
        if kind == "str" and name != "executor":
            if isinstance(value, os.PathLike):
                value = settings[name] = os.fspath(value)
            if not isinstance(value, str) or not value:
                got = "an empty string" if value == "" else f"{type(value).__name__} {value!r}"
                raise ConfigError(f"{call} expects a path (a non-empty string), received {got}. Example: "
                                  f"config.set({name}={_EXAMPLES.get(name, 'path')!r}); None leaves it unset.")


def parse_args(argv: Sequence[str]) -> tuple[dict[str, object], list[str]]:
    """Split `argv` into (recognised settings, the remaining arguments for the script).

    Accepts `-e 3`, `--epochs 3`, `--epochs=3` and, as argparse does, a number glued to a one-letter
    flag (`-b128`, `-e3`). Raises ConfigError for a flag missing its value or
    out of range, and for an unknown `-ll:*` / `-lg:*` flag (near misses of long flags are checked when
    the runtime is built, see `check_script_args`, once the script's argparse has declared its own).
    """
    settings: dict[str, object] = {}
    typed: dict[str, str] = {}  # field -> the flag as typed (`--budget`), for the messages
    rest: list[str] = []
    i = 0
    argv = list(argv)
    while i < len(argv):
        arg = argv[i]
        key, eq, inline = arg.partition("=")
        if key not in _FLAGS and _glued_number(arg):  # `-b128` is `-b 128`, as argparse reads it
            key, eq, inline = arg[:2], "=", arg[2:]
        if key in _FLAGS:
            fname, kind = _FLAGS[key]
            if kind == "bool":
                value: object = True
                if key in _OPTIONAL_VALUE and i + 1 < len(argv) and argv[i + 1].isdigit():
                    value = int(argv[i + 1]) > 0
                    i += 1
                elif eq:
                    value = inline.lower() not in ("0", "false", "no")
            else:
                if eq:
                    raw = inline
                else:
                    if i + 1 >= len(argv):
                        raise ConfigError(f"Flag {key} needs a value ({kind}); received nothing. "
                                          f"Example: {_example(key, fname)}")
                    raw = argv[i + 1]
                    i += 1
                if kind == "str" and not raw:  # `-d ""` would read as no -d: synthetic data, silently
                    raise ConfigError(f"Flag {key} needs a value ({'a path' if fname != 'executor' else kind}); "
                                      f"received an empty string. Example: {_example(key, fname)}")
                value = _convert(f"Flag {key}", kind, raw, _example(key, fname))
            settings[fname] = value
            typed[fname] = key
        else:
            rest.append(arg)
        i += 1
    wrong = flag_checks.unknown_flag(rest, _FLAGS, flag_checks.declared, near_misses=False)
    if wrong is not None:
        raise wrong
    _validate(settings, lambda name: _flag_name(name) if len(typed.get(name, "")) <= 2 else typed[name])
    return settings, rest


def _validate(settings: dict[str, object], who: Callable[[str], str] = _flag_name) -> None:
    """Check `settings` in place: numbers converted, ranges (flag_checks.RANGES), files, choices.

    `who` names a field as its source spells it (a flag, an environment variable, a config.set argument).
    """
    _numbers(settings)
    flag_checks.check_ranges(settings, who)
    path = settings.get("import_strategy")
    if path and not os.path.isfile(str(path)):
        what = "is a folder" if os.path.isdir(str(path)) else (
            "exists but is not a regular file (a FIFO, socket or device)" if os.path.exists(str(path)) else
            "does not exist")
        raise ConfigError(f"--import-strategy {path}: the file {what}. Give a strategy JSON file written by "
                          f"--export-strategy.")
    out = settings.get("export_strategy")
    if out:
        out = str(out)
        folder = os.path.dirname(os.path.abspath(out))
        if out.lower().endswith(".svg"):
            raise ConfigError(f"--export-strategy {out}: the strategy is written as JSON and its picture goes "
                              f"beside it (FILE.svg); give a .json path, e.g. --export-strategy "
                              f"{out[:-4]}.json.")
        if os.path.isdir(out) or not os.path.isdir(folder):
            what = "is a folder" if os.path.isdir(out) else (
                f"is under {folder}, which is not a folder" if os.path.exists(folder) else
                f"is in a folder that does not exist ({folder})")
            raise ConfigError(f"--export-strategy {out}: the path {what}. Give a file path in an existing "
                              f"folder.")
    profile = settings.get("profile_path")
    if profile:
        profile = os.path.expanduser(str(profile))
        parent = os.path.dirname(os.path.abspath(profile))
        while parent and not os.path.exists(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)  # the profiler creates missing folders
        if os.path.isdir(profile) or not os.path.isdir(parent):
            what = "is a folder" if os.path.isdir(profile) else f"is under {parent}, which is not a folder"
            flag = who("profile_path")
            example = "config.set(profile_path='profile.json')" if flag.startswith("config.set(") else \
                f"{flag} profile.json"
            raise ConfigError(f"{flag} {settings['profile_path']}: the path {what}. Give the file -lg:prof writes "
                              f"its timeline to, e.g. {example}.")
    if "executor" in settings and settings["executor"] not in ("threaded", "sequential"):
        raise ConfigError(f"{who('executor')} must be 'threaded' or 'sequential', received "
                          f"{settings['executor']!r}.")


def _env_settings() -> dict[str, object]:
    """The FF_* environment variables' settings, with the same checks as flags (naming the variable)."""
    out: dict[str, object] = {}
    for var, fname in _ENV.items():
        if var in os.environ:
            kind, raw = _KINDS.get(fname, "str"), os.environ[var]
            article = "an" if kind == "int" else "a"
            out[fname] = _convert(var, kind, raw, message=(
                f"{var}={raw}: expected {article} {kind} (as for {_NAMES[fname]}), received {raw!r}. "
                f"Set e.g. {var}=4, or unset it."))
    _validate(out, lambda name: _VARS.get(name, name))
    return out


def _glued_number(arg: str) -> bool:
    """`-b128`: one of our one-letter number flags with its value glued on (not `-bs`, a script's own)."""
    flag = _FLAGS.get(arg[:2]) if len(arg) > 2 and arg[0] == "-" and arg[1] != "-" else None
    return flag is not None and flag[1] == "int" and arg[2:].isdigit()


def _cli() -> tuple[dict[str, object], list[str]]:
    global _cli_cache, _argv_used
    if _cli_cache is None or _argv_used != sys.argv:
        if _in_notebook():
            parsed: tuple[dict[str, object], list[str]] = ({}, [])
        else:
            from flexflow_keras import flags_help

            flags_help.maybe_exit(sys.argv[1:])  # --help: print the flags and exit, before any work
            parsed = parse_args(sys.argv[1:])  # raises on a bad flag, every time
        _argv_used, _cli_cache = list(sys.argv), parsed
    return _cli_cache


def check_script_args() -> None:
    """Before the runtime is built: `--help` exits here at the latest, and an argument that is a near miss
    of one of our long flags (`--epoch`) and that no ArgumentParser of the script declares is an error."""
    if _in_notebook():
        return
    from flexflow_keras import flags_help

    flags_help.maybe_exit(sys.argv[1:], final=True)
    wrong = flag_checks.unknown_flag(_cli()[1], _FLAGS, flag_checks.declared)
    if wrong is not None:
        raise wrong


def check_no_effect(cfg: Config) -> None:
    """Before work starts: a setting that only qualifies another one that is off is an error, never
    silently ignored (`--profile-path` says where -lg:prof writes; without -lg:prof nothing is written)."""
    if cfg.given("profile_path") and not cfg.profile:
        cli = "profile_path" in cfg.from_cli
        flag = f"--profile-path {cfg.profile_path}" if cli else f"config.set(profile_path={cfg.profile_path!r})"
        on = "-lg:prof" if cli else "config.set(profile=True)"
        raise ConfigError(f"{flag} says where -lg:prof writes its timeline, but no profile is recorded (-lg:prof "
                          f"is off), so it would have no effect. Add {on} to record one, or drop it.")


def _in_notebook() -> bool:
    """True when sys.argv belongs to a host program (a notebook kernel, pytest), not to a training script.

    ipykernel passes its own `-f connection.json` and pytest its own `-p plugin`; never read those as
    our flags (code sets the configuration there, with `config.set`)."""
    prog = os.path.basename(sys.argv[0]) if sys.argv else ""
    if prog in ("pytest", "py.test", "ipykernel_launcher.py") or (
            prog == "__main__.py" and os.path.basename(os.path.dirname(sys.argv[0])) in ("pytest", "ipykernel")):
        return True
    return "ipykernel" in sys.modules and any(a.endswith(".json") for a in sys.argv)


def get() -> Config:
    """The merged configuration (recomputed on each call; cheap)."""
    cli, _ = _cli()
    merged: dict[str, object] = {}
    env = _env_settings()
    merged.update(env)
    merged.update(_code_overrides)
    merged.update(cli)
    cfg = Config(**merged, from_cli=frozenset(cli), from_code=frozenset(_code_overrides))
    flag_checks.advise(cfg, _source_name(cfg), given={*env, *cli, *_code_overrides})
    return cfg


def set(**settings) -> None:  # noqa: A001 - mirrors keras.config.set_* for notebooks
    """Set configuration from code (notebooks). Command-line flags still win.

    Example:
        >>> import flexflow_keras as keras
        >>> keras.config.set(epochs=2, batch_size=128, cpus=2)
    """
    names = {f.name for f in dataclasses.fields(Config)} - {"from_cli", "from_code"}
    unknown = sorted(k for k in settings if k not in names)
    if unknown:
        raise ConfigError(f"config.set got unknown settings {unknown}; valid names: {sorted(names)}.")
    _code_types(settings)
    _validate(settings, _code_name)
    _code_overrides.update(settings)


def reset() -> None:
    """Forget settings made from code (tests)."""
    global _dataset_read
    _code_overrides.clear()
    _dataset_read = None


_dataset_read: str | None = None  # the -d path a loader or a fit/evaluate without data has read


def note_dataset_read(path: str) -> None:
    """Record that `path` (the -d value) was read, by a keras.datasets loader or a fit without data."""
    global _dataset_read
    _dataset_read = path


def check_dataset_used(call: str, received: str) -> None:
    """A `call` (fit) that received its own data (`received`, e.g. "arrays") while -d, given on the command
    line or by config.set, was never read: -d would have no effect, so it is an error saying so."""
    cfg = get()
    if not cfg.dataset or not cfg.given("dataset") or _dataset_read == cfg.dataset:
        return
    if "dataset" in cfg.from_cli and {"-d", "--dataset"} & flag_checks.declared:
        return  # the script's own argparse declares -d: the value is the script's (its data folder, ...)
    flag = f"-d/--dataset {cfg.dataset}" if "dataset" in cfg.from_cli else f"config.set(dataset={cfg.dataset!r})"
    raise ConfigError(f"{flag} is never read: {call} received {received} from the script, and nothing before it "
                      f"read -d (a keras.datasets loader such as mnist.load_data(), or fit()/evaluate() called "
                      f"without data), so training would ignore it. Drop -d to train on the script's data, or "
                      f"call {call} without x and y to train on -d's training part.")


def remaining_argv() -> list[str]:
    """`sys.argv` without the flags this module consumed (for the script's own argparse)."""
    return [sys.argv[0], *_cli()[1]] if sys.argv else []


# command-line settings that only training reads, and what reads them (see note_used / _warn_unused)
_FIT_SETTINGS = ("epochs", "batch_size", "print_freq")  # fit (resolve)
_STRATEGY_SETTINGS = ("only_data_parallel", "data_parallel_degree", "search_budget", "search_alpha",
                      "import_strategy", "export_strategy", "machine_model", "search_only", "search_num_nodes",
                      "search_num_workers")  # the strategy choice of a compiled training step (execution/choice.py)
_used: dict[str, None] = {}  # a set (this module's set() is config.set)


def note_used(*names: str) -> None:
    """Record that the settings `names` were read where they act (for the end-of-run check of flags that
    never did)."""
    _used.update(dict.fromkeys(names))


def _warn_unused() -> None:
    """At exit: training flags given on the command line that nothing read (a script that never trains, or
    trains only in its own train_step) had no effect; say so rather than let the run look as asked."""
    if _cli_cache is None or _argv_used != sys.argv or _in_notebook() or getattr(sys, "last_value", None) is not None:
        return  # not this process's command line (a test's), or the run ended on an error or Ctrl-C
    from runtime import comm

    w = comm.world()
    if w is not None and w.rank != 0:
        return
    cli = _cli_cache[0]
    unused = [n for n in (*_FIT_SETTINGS, *_STRATEGY_SETTINGS) if n in cli and n not in _used]
    if not unused:
        return
    flags = ", ".join(f"{_NAMES[n]}" + ("" if _KINDS[n] == "bool" else f" {cli[n]}") for n in unused)
    fit = [n for n in unused if n in _FIT_SETTINGS]
    why = ("this script never called fit()" if fit else
           "no training step chose a strategy (no fit() or train_on_batch() of a compiled step: a custom "
           "train_step that computes its own gradients runs as written, on this process's CPU)")
    log.warning("warning: %s given on the command line had no effect: %s. Drop %s.", flags, why,
                "it" if len(unused) == 1 else "them")


atexit.register(_warn_unused)


def resolve(name: str, script_value, flag: str):
    """The value to use for `name` given the script's own argument: a CLI flag wins, and we log it."""
    note_used(name, "print_freq") if name == "epochs" else note_used(name)  # a fit reads -p too
    cfg = get()
    value = getattr(cfg, name)
    if script_value is None:
        return value
    if name in cfg.from_cli and value != script_value:
        log.info("%s %s on the command line overrides the script's %s=%s", flag, value, name, script_value)
        return value
    if name in cfg.from_code and name not in cfg.from_cli and value != script_value:  # never silently unused
        log.info("the call's %s=%s is used, not config.set(%s=%s), which gives the default for calls without "
                 "it (the command line's %s wins over both)", name, script_value, name, value, flag)
    return script_value


# Keras 3's keras.config functions that are not run settings (traceback filtering, floatx, epsilon, ...).
from flexflow_keras.keras_config_api import *  # noqa: E402,F401,F403
