"""Clean errors on the command line.

A user error (`FlexFlowKerasError`: a bad flag, a strategy file that does not fit, a shape mismatch)
raised by a script run from a shell prints one block, `flexflow_keras: error: <message>`, and exits with
status 2 for usage errors (flags, configuration, strategy files) and 1 for the others. The traceback is
shown with `--debug` on the command line or `FF_DEBUG=1`. In notebooks and under pytest the exception
propagates as usual (the hook is not installed there).
"""

from __future__ import annotations

import atexit
import os
import sys

from flexflow_keras.errors import ConfigError, FlexFlowKerasError, StrategyError
from flexflow_keras.utils import task_failures

USAGE_ERRORS = (ConfigError, StrategyError)


def _debug() -> bool:
    return os.environ.get("FF_DEBUG", "") not in ("", "0") or "--debug" in sys.argv


def exit_code(exc: BaseException) -> int:
    """2 for usage errors (flags, configuration, strategy files), 1 for other user errors."""
    return 2 if isinstance(exc, USAGE_ERRORS) else 1


def hook(exc_type, exc, tb, previous=sys.__excepthook__) -> None:
    """The excepthook: one clean block for our errors, the usual traceback for anything else."""
    if not issubclass(exc_type, FlexFlowKerasError) or _debug():
        task_failures.report(exc_type, exc, tb, previous, _debug(), hook)  # a task's error: its cause
        return
    sys.stderr.write(f"flexflow_keras: error: {exc}\n(run with --debug or FF_DEBUG=1 for the traceback)\n")
    sys.stderr.flush()
    try:
        atexit._run_exitfuncs()  # shut the runtime down as a normal exit would
    finally:
        os._exit(exit_code(exc))


def install() -> None:
    """Install the hook for scripts run from a shell (not in notebooks or under pytest)."""
    from flexflow_keras.config import _in_notebook

    if _in_notebook() or sys.excepthook is not sys.__excepthook__:
        return
    previous = sys.excepthook
    sys.excepthook = lambda t, e, tb: hook(t, e, tb, previous)
