"""Test helper: the suite's long single-threaded subprocess checks (the CUDA simulator drivers, the wheel
install) run on a background thread beside the main test process.

A driver test module declares its command as a ``Command`` and marks its test with
``@pytest.mark.background(COMMAND)``. When collection ends, conftest.py hands the selected tests'
commands to ``start``: one thread runs them one at a time, in collection order, at a lower CPU priority
(``nice`` 10), so they fill the core the main process leaves idle and yield it when the main process's
own tests need both. The test then waits for its own command's result. A command that no one started
(the test run alone, collection-only plugins, or a pytest-xdist worker, whose tests already share the
cores with the other worker) runs when its test asks for it, as ``subprocess.run``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

NICE = 10


@dataclass(eq=False)
class Command:
    """``make(work)`` returns ``subprocess.run``'s arguments (``args``, ``env``, ``cwd``, ``timeout``) for a
    fresh scratch folder ``work``; ``result()`` gives the finished process and that folder."""

    make: Callable[[Path], dict]
    _done: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _claimed: bool = field(default=False, init=False)
    _outcome: tuple | None = field(default=None, init=False, repr=False)
    _proc: subprocess.Popen | None = field(default=None, init=False, repr=False)
    _work: Path | None = field(default=None, init=False, repr=False)
    _spec: dict | BaseException | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _times: list = field(default_factory=list, init=False, repr=False)  # [started, ended] (perf_counter)
    _waited: float = field(default=0.0, init=False)  # seconds its test waited for it
    label: str = field(default="", init=False)  # the test it runs for (set by conftest.py), for the summary

    def _claim(self) -> bool:
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def _prepare(self) -> None:
        """Build the command now, in the calling thread: its environment and folder are those of this
        moment, not of whichever test has patched os.environ or changed directory when it starts."""
        self._work = Path(tempfile.mkdtemp(prefix="ff_bg_"))
        _commands.append(self)
        try:
            self._spec = dict(self.make(self._work))
            self._spec.setdefault("cwd", os.getcwd())
            self._spec.setdefault("env", dict(os.environ))
        except Exception as exc:  # noqa: BLE001 - handed to the test, which raises it
            self._spec = exc

    def _run(self, nice: int) -> None:
        work, spec = self._work, self._spec
        self._times = [time.perf_counter()]
        try:
            if isinstance(spec, BaseException):
                raise spec
            spec = dict(spec)
            timeout = spec.pop("timeout", 900)
            proc = subprocess.Popen(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **spec)
            self._proc = proc
            if nice:
                try:
                    os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
                except OSError:  # gone already, or not permitted: it runs at our priority
                    pass
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                out, err = proc.communicate()
                exc.stdout, exc.stderr = out, err
                self._outcome = (exc, work)
                return
            self._outcome = (subprocess.CompletedProcess(proc.args, proc.returncode, out, err), work)
        except Exception as exc:  # noqa: BLE001 - handed to the test, which raises it
            self._outcome = (exc, work)
        finally:
            self._times.append(time.perf_counter())
            self._done.set()

    def result(self) -> tuple[subprocess.CompletedProcess, Path]:
        """Wait for the command (running it now if no one started it); raise what running it raised."""
        if self._claim():
            self._prepare()
            self._run(nice=0)
        t0 = time.perf_counter()
        self._done.wait()
        self._waited += time.perf_counter() - t0
        outcome, work = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome, work

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()


_commands: list[Command] = []  # every command that ran or runs, for stop_all
_stopping = threading.Event()
_started_at: list[float] = []  # when `start` handed commands to the background thread


def start(commands: list[Command]) -> None:
    """Build ``commands`` now, then run them one after another on a daemon thread at a lower priority."""
    mine = [c for c in dict.fromkeys(commands) if c._claim()]
    if not mine:
        return
    for command in mine:
        command._prepare()
    _started_at.append(time.perf_counter())

    def loop():
        for command in mine:
            if _stopping.is_set():
                command._outcome = (RuntimeError("the test session ended before this command ran"), command._work)
                command._done.set()
            else:
                command._run(NICE)

    threading.Thread(target=loop, name="background-runs", daemon=True).start()


def stop_all() -> None:
    """End the runs still going (the session ended early) and remove their scratch folders."""
    _stopping.set()
    for command in _commands:
        command.stop()
    for command in _commands:
        if command._done.wait(timeout=10) and command._work is not None:
            shutil.rmtree(command._work, ignore_errors=True)


def records() -> list[tuple[str, float]]:
    """(test, seconds) of each command that ran in this process, for a pytest-xdist worker's report."""
    return [(c.label or "?", c._times[1] - c._times[0]) for c in _commands if len(c._times) == 2]


def summary_of_workers(runs: list[tuple[str, float]]) -> str | None:
    """The line for the commands the pytest-xdist workers ran inline, each in its own test."""
    if not runs:
        return None
    label, slowest = max(runs, key=lambda r: r[1])
    return (f"long subprocess commands (run by their tests in the workers): {len(runs)}, "
            f"{sum(t for _, t in runs):.0f} s in all (slowest {label}: {slowest:.0f} s)")


def summary() -> str | None:
    """One line on the background runs of this session (for the terminal summary): how many ran, their
    total time, when the last one ended after the thread started, and how long tests waited for them
    (a long wait means the background thread, not the main process, set the suite's end)."""
    ran = [c for c in _commands if len(c._times) == 2]
    if not ran or not _started_at:
        return None
    busy = sum(c._times[1] - c._times[0] for c in ran)
    last = max(c._times[1] for c in ran) - _started_at[0]
    waited = sum(c._waited for c in ran)
    slowest = max(ran, key=lambda c: c._times[1] - c._times[0])
    return (f"background runs: {len(ran)} commands, {busy:.0f} s in all (slowest {slowest.label or '?'}: "
            f"{slowest._times[1] - slowest._times[0]:.0f} s), "
            f"the last ended {last:.0f} s after they started; tests waited {waited:.0f} s for them")
