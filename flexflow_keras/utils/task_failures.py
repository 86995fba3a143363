"""How a failure inside a runtime task reads on the command line.

A task body that raises (a kernel, the data loader, a layer's op) reaches the script as the runtime's
`TaskError`, whose `__cause__` is the original exception. Python would print the original traceback, then
"The above exception was the direct cause of...", then a second traceback through the training loop and
the runtime that says nothing the first did not. On the command line (not in notebooks or under pytest,
and not with `--debug`/`FF_DEBUG=1`, which show everything) the excepthook reports instead:

- a flexflow_keras error raised in a task (a `DataError` from a loader): the usual one clean block, with
  the task named;
- any other exception (the user's own code, a kernel's bug): the original exception with its traceback
  from the task body down (the runtime's dispatch frames dropped), then one line naming the task, its
  point and processor, and the call in the script that ran it.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

from flexflow_keras.errors import FlexFlowKerasError
from runtime.errors import TaskError

_PACKAGES = ("flexflow_keras", "runtime", "kernels")
_OURS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), pkg)
              + os.sep for pkg in _PACKAGES)


def _package(tb: TracebackType) -> str | None:
    """Which of our packages a frame's code belongs to (None: the user's). By the module's name first: a
    frame of a compiled module (runtime/_compiled.py) names its file relative to the package root."""
    name = tb.tb_frame.f_globals.get("__name__")
    if isinstance(name, str):
        top = name.partition(".")[0]
        if top in _PACKAGES:
            return top
    path = os.path.abspath(tb.tb_frame.f_code.co_filename)
    return next((pkg for pkg, root in zip(_PACKAGES, _OURS, strict=True) if path.startswith(root)), None)


def _ours(tb: TracebackType) -> bool:
    return _package(tb) is not None


def call_site(tb: TracebackType | None) -> str:
    """`fit() at train.py, line 12`: the last call from outside the framework into it, or ''."""
    site = None
    while tb is not None:
        if not _ours(tb) and tb.tb_next is not None and _ours(tb.tb_next):
            site = (tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_next.tb_frame.f_code.co_name)
        tb = tb.tb_next
    if site is None:
        return ""
    path, line, func = site
    return f"{func}() at {path}, line {line}"


def where(exc: TaskError) -> str:
    """The failing task in words: its name, point and processor (the root failure's, for a task that was
    not run because another failed)."""
    if exc.failed_task != exc.task or exc.failed_point != exc.point:
        return f"task '{exc.failed_task}' point {exc.failed_point}"
    return f"task '{exc.task}' point {exc.point}" + (f" on {exc.processor}" if exc.processor else "")


def _body_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without the runtime's dispatch frames at its top (they are the same for every task)."""
    while tb is not None and tb.tb_next is not None and _package(tb) == "runtime":
        tb = tb.tb_next
    return tb


def report(exc_type, exc, tb, previous, debug: bool, clean) -> None:
    """Print an exception that is not (directly) one of ours.

    Args:
        exc_type, exc, tb: what the excepthook received.
        previous: the excepthook to print a traceback with.
        debug: `--debug` or `FF_DEBUG=1`: print everything, as Python does.
        clean: the hook that prints a flexflow_keras error's one block (called with the task's cause).
    """
    cause = exc.__cause__ if isinstance(exc, TaskError) else None
    if debug or cause is None:
        previous(exc_type, exc, tb)
        return
    site = call_site(tb)
    context = f"in {where(exc)}" + (f", during {site}" if site else "")
    if isinstance(cause, FlexFlowKerasError):
        try:
            named = type(cause)(f"{cause} ({context})")
        except TypeError:  # a subclass with another constructor: its own message is still right
            named = cause
        clean(type(named), named, cause.__traceback__, previous)
        return
    trimmed = _body_frames(cause.__traceback__)
    previous(type(cause), cause.with_traceback(trimmed), trimmed)
    sys.stderr.write(f"flexflow_keras: the error above was raised {context}; the run stopped. "
                     f"Run with --debug or FF_DEBUG=1 for the runtime's frames.\n")
    sys.stderr.flush()

