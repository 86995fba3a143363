"""Ctrl-C on the command line: where the run was, and a prompt, bounded exit.

`fit` records where it is (`at(epoch, step)`, `phase(...)`: a tuple store per step, nothing more). When
a KeyboardInterrupt reaches the command-line excepthook (`flexflow_keras.utils.cli_errors`), `exit_130`
prints one line, ``flexflow_keras: interrupted (Ctrl-C) at epoch E step S``, cancels the runtime (tasks
not started are dropped, workers stop after the task they run), gives the exit functions a short,
bounded time, and ends the process with status 130 (the shell's code for SIGINT). A second Ctrl-C during
that cleanup exits at once. With --debug / FF_DEBUG=1 the traceback is printed first. In notebooks and
under pytest the hook is not installed and KeyboardInterrupt propagates as usual.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading

log = logging.getLogger("flexflow_keras")

EXIT_STATUS = 130
CLEANUP_SECONDS = 2.0  # the runtime's cancel, then the exit functions: well inside the 5 s promise

_where: list = [None]  # None, a phase name (str), or (epoch, step), both 0-based


def at(epoch: int, step: int) -> None:
    """fit: training step `step` of epoch `epoch` (0-based) is being issued."""
    _where[0] = (epoch, step)


def phase(name: str | None) -> None:
    """What the run is doing outside training steps (e.g. "the strategy search"); None: nothing."""
    _where[0] = name


def where() -> str:
    """' at epoch E step S' (1-based), ' during <phase>', or '' when nothing was recorded."""
    w = _where[0]
    if isinstance(w, tuple):
        return f" at epoch {w[0] + 1} step {w[1] + 1}"
    if w:
        return f" during {w}"
    return ""


def message() -> str:
    """The one line printed on Ctrl-C."""
    return f"flexflow_keras: interrupted (Ctrl-C){where()}"


def _exit_now(signum=None, frame=None) -> None:
    _flush()
    os._exit(EXIT_STATUS)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed or detached stream: nothing to flush
            pass


def _cleanup() -> None:
    from flexflow_keras.execution import context

    if not context.cancel_runtime(CLEANUP_SECONDS / 2):
        log.debug("Ctrl-C: a task was still running when the runtime stopped waiting for it")
    atexit._run_exitfuncs()


def exit_130() -> None:
    """Print the interrupt line, stop the runtime and the exit functions within a bounded time, and
    exit with status 130. Never returns."""
    try:
        signal.signal(signal.SIGINT, _exit_now)  # a second Ctrl-C: out at once
    except ValueError:  # not on the main thread: the first interrupt's cleanup is bounded anyway
        pass
    _flush()
    sys.stderr.write(message() + "\n")
    _flush()
    worker = threading.Thread(target=_cleanup, name="flexflow-keras-interrupt-cleanup", daemon=True)
    worker.start()
    worker.join(CLEANUP_SECONDS)
    _exit_now()
