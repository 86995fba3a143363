"""Ctrl-C on the command line: where the run was, and a prompt, bounded exit.

`fit` records where it is (`at(epoch, step)`, `phase(...)`: a tuple store per step, nothing more). When
a KeyboardInterrupt reaches the command-line excepthook (`flexflow_keras.utils.cli_errors`), `exit_130`
prints one line, ``flexflow_keras: interrupted (Ctrl-C) at epoch E step S``, cancels the runtime (tasks
not started are dropped, workers stop after the task they run), gives the exit functions a short,
bounded time, and ends the process with status 130 (the shell's code for SIGINT). A second Ctrl-C during
that cleanup exits at once. With --debug / FF_DEBUG=1 the traceback is printed first. In notebooks and
under pytest the hook is not installed and KeyboardInterrupt propagates as usual.

Python swallows an exception raised inside a finalizer or a garbage-collection callback ("Exception
ignored in ..."), and a Ctrl-C lands there whenever the signal arrives while one runs (the runtime
releases memory pools from `weakref.finalize`, and strategy changes collect): the run would go on as if
nothing happened. `guard_finalizers` (installed on import, everywhere) sends such a swallowed
SIGINT again, so the main thread raises it outside the finalizer.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger("flexflow_keras")

EXIT_STATUS = 130
REARM_DELAY_S = 0.005  # a swallowed Ctrl-C is sent again this long after the finalizer ate it
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


def _resend() -> None:
    time.sleep(REARM_DELAY_S)
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def _rearm(unraisable, previous) -> None:
    """sys.unraisablehook: a KeyboardInterrupt that a finalizer swallowed is sent again as a real SIGINT
    to the main thread, from a helper thread a moment later (raised in the hook itself, it would be
    swallowed too; a real signal also wakes a main thread blocked on a lock). Should it land in another
    finalizer, this runs again. Anything else goes to the previous hook."""
    exc_type = unraisable.exc_type
    if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
        threading.Thread(target=_resend, name="flexflow-keras-resend-sigint", daemon=True).start()
        return
    previous(unraisable)


def guard_finalizers() -> None:
    """Install `_rearm` as sys.unraisablehook, keeping the hook found there for everything else. Idempotent."""
    current = sys.unraisablehook
    if getattr(current, "_flexflow", False):
        return

    def hook(unraisable):
        _rearm(unraisable, current)

    hook._flexflow = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook
