"""Clean errors on the command line.

A user error raised by a script run from a shell prints one block, `flexflow_keras: error: <message>`
(the message names the flag or call to change), and exits with status 2 for usage errors (flags,
configuration, strategy files, a machine the flags ask for that this host cannot give) and 1 for the
others. User errors are ours (`FlexFlowKerasError`: DataError, ShapeError, ...), the runtime's
(`runtime.errors.RuntimeSystemError`; the runtime cannot import flexflow_keras, so its base class is named
here), and the ValueError / TypeError / NotImplementedError that our argument checks raise with a message,
as Keras raises them for a bad layer argument; a runtime `TaskError` counts when its root cause is one of them (otherwise it is a bug in a task
body or a callback, and its traceback is what helps). The traceback is shown with `--debug` on the
command line or `FF_DEBUG=1`, with the same exit status. In notebooks and under pytest the exception
propagates as usual (the hook is not installed there). `install` also sets up the argparse side of the
command line (`--help`, recording the script's own flags; see `flags_help` and `utils/flag_checks`).
"""

from __future__ import annotations

import atexit
import os
import sys

from flexflow_keras.errors import ConfigError, FlexFlowKerasError, StrategyError
from flexflow_keras.utils import task_failures
from runtime.errors import MachineError, RuntimeSystemError, TaskError

USAGE_ERRORS = (ConfigError, StrategyError, MachineError)
USER_ERRORS = (FlexFlowKerasError, RuntimeSystemError)


def _debug() -> bool:
    return os.environ.get("FF_DEBUG", "") not in ("", "0") or any(
        a == "--debug" or a.startswith("--debug=") for a in sys.argv)


def root_cause(exc: BaseException) -> BaseException:
    """The user error a runtime TaskError carries (its `__cause__` chain), or `exc` itself."""
    seen = 0
    while isinstance(exc, TaskError) and exc.__cause__ is not None and seen < 32:
        exc, seen = exc.__cause__, seen + 1
    return exc


_OURS = os.path.dirname(os.path.abspath(sys.modules["flexflow_keras"].__file__)) + os.sep


def _raised_by_us(exc: BaseException) -> bool:
    """Whether `exc` (a ValueError, TypeError, ... as Keras raises for a bad argument) comes from a `raise`
    statement of this package with a message: a check of the user's arguments that names what to fix. An
    error Python raises inside our code, a bare re-raise, and a kernel's or the runtime's own check (a task
    body's failure: a bug of ours) keep their traceback."""
    import linecache

    tb = exc.__traceback__
    if tb is None or not str(exc):
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = os.path.abspath(tb.tb_frame.f_code.co_filename)
    line = linecache.getline(path, tb.tb_lineno).strip()
    return path.startswith(_OURS) and line.startswith("raise ") and not line.startswith("raise exc")


def is_user_error(exc: BaseException) -> bool:
    """Whether `exc` is a user error that one clean block explains (see the module docstring)."""
    cause = root_cause(exc)
    return isinstance(cause, USER_ERRORS) or (cause is exc and isinstance(exc, (ValueError, TypeError,
                                                                                NotImplementedError))
                                              and _raised_by_us(exc))


def exit_code(exc: BaseException) -> int:
    """2 for usage errors (flags, configuration, strategy files, the machine asked for), 1 for others."""
    return 2 if isinstance(root_cause(exc), USAGE_ERRORS) else 1


def message(exc: BaseException) -> str:
    """The clean block for a user error."""
    cause = root_cause(exc)
    text = str(cause)
    if cause is not exc:  # a task failed on a user error: say which task
        text += f"\n(raised in task {getattr(exc, 'failed_task', '?')})"
    lines = [f"flexflow_keras: error: {text}"]
    if isinstance(cause, USAGE_ERRORS):
        script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "SCRIPT"
        lines.append(f"(python {script} --help lists the flags; run with --debug or FF_DEBUG=1 for the traceback)")
    else:
        lines.append("(run with --debug or FF_DEBUG=1 for the traceback)")
    return "\n".join(lines) + "\n"


def _unsupported_layer(exc: BaseException) -> BaseException:
    """`from keras.layers import TextVectorization` (or `from keras.utils import text_dataset_from_directory`,
    `from keras.optimizers import Muon`): Python turns the module's clear AttributeError (layers/unsupported.py,
    utils/__init__.py, optimizers/__init__.py) into a bare "cannot import name"; give the clear one back."""
    import importlib
    import re

    if type(exc) is ImportError:
        m = re.match(r"cannot import name '(\w+)' from '(flexflow_keras\.(?:layers|utils|preprocessing|optimizers))'",
                     str(exc))
        if m:  # (keras.preprocessing exports utils' dataset makers: utils says what it lacks)
            module = "flexflow_keras.utils" if m.group(2).endswith("preprocessing") else m.group(2)
            try:
                getattr(importlib.import_module(module), m.group(1))
            except FlexFlowKerasError as clear:  # the module's own message for a Keras name it lacks
                return clear
            except AttributeError:
                pass
    return exc


def hook(exc_type, exc, tb, previous=sys.__excepthook__) -> None:
    """The excepthook: one clean block for user errors, the usual traceback for anything else."""
    if issubclass(exc_type, KeyboardInterrupt):
        _interrupted(exc_type, exc, tb, previous)
    if exc is not None:
        exc = _unsupported_layer(exc)
        exc_type = type(exc)
    if exc is None or not is_user_error(exc):
        task_failures.report(exc_type, exc, tb, previous, _debug(), hook)  # a task's error: its cause
        return
    if _debug():
        previous(exc_type, exc, tb)  # the traceback, and the same exit status as without --debug
    else:
        sys.stderr.write(message(exc))
    sys.stderr.flush()
    try:
        atexit._run_exitfuncs()  # shut the runtime down as a normal exit would
    finally:
        os._exit(exit_code(exc))


def _interrupted(exc_type, exc, tb, previous) -> None:
    """Ctrl-C: one line (the traceback first with --debug), the runtime stopped, exit status 130."""
    from flexflow_keras.utils import interrupts

    if _debug():
        previous(exc_type, exc, tb)
    interrupts.exit_130()


def install() -> None:
    """Install the hook and the argparse helpers for scripts run from a shell (not notebooks or pytest).

    A hook installed earlier by another library is kept and called for everything that is not ours.
    """
    from flexflow_keras import flags_help
    from flexflow_keras.config import _in_notebook
    from flexflow_keras.utils import flag_checks

    if _in_notebook() or getattr(sys.excepthook, "_flexflow", False):
        return
    previous = sys.excepthook

    def excepthook(t, e, tb):
        hook(t, e, tb, previous)

    excepthook._flexflow = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook
    flag_checks.watch_argparse()
    flags_help.install()
