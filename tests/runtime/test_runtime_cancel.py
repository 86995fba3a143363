"""Cancelling (Ctrl-C): tasks not yet started complete at once with a 'cancelled' error, the runtime stops
within its timeout even while a body is still running, and a KeyboardInterrupt raised in a body on the
program's thread (the sequential executor) cancels what was queued, reaches the program, and the runtime
serves again afterwards (a notebook goes on)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import runtime as rt

release = threading.Event()
started = threading.Event()
ran: list = []


@rt.task(privileges=[rt.RW])
def blocker(x):
    started.set()
    release.wait(10)
    x += 1


@rt.task(privileges=[rt.RW])
def bump(x):
    ran.append(1)
    x += 1


@rt.task
def interrupted():
    raise KeyboardInterrupt


def test_cancel_drops_queued_tasks_and_returns_within_its_timeout():
    release.clear(), started.clear(), ran.clear()
    rtm = rt.Runtime(rt.Machine(cpus=1, utils=1), executor="threaded")
    r = rt.Region((4,), np.float64)
    rtm.fill(r, 0.0)
    rtm.launch(blocker, r)
    later = [rtm.launch(bump, r) for _ in range(20)]
    assert started.wait(10)
    t0 = time.monotonic()
    assert rtm.cancel(timeout=0.5) is False  # the blocker is still inside its body
    assert time.monotonic() - t0 < 2.0
    release.set()
    for f in later:
        with pytest.raises(rt.TaskError, match="cancelled"):
            f.get()
    assert ran == [] and rtm.engine.failures == []
    with pytest.raises(rt.RuntimeSystemError, match="shut down"):
        rtm.launch(bump, r)


def test_cancel_of_an_idle_runtime_stops_every_worker(executor):
    rtm = rt.Runtime(rt.Machine(cpus=2, utils=1), executor=executor)
    r = rt.Region((4,), np.float64)
    rtm.fill(r, 1.0)
    assert rtm.read(r).sum() == 4.0
    assert rtm.cancel(timeout=5.0) is True
    assert all(not t.is_alive() for t in getattr(rtm.executor, "_threads", []))
    assert rtm.cancel() is True  # a second call is a no-op


def test_keyboard_interrupt_in_a_body_on_the_programs_thread_propagates_and_the_runtime_serves_on():
    ran.clear()
    rtm = rt.Runtime(rt.Machine(cpus=1, utils=1), executor="sequential")
    r = rt.Region((4,), np.float64)
    rtm.fill(r, 0.0)
    with pytest.raises(KeyboardInterrupt):
        rtm.launch(interrupted)
    assert not rtm.engine.cancelled and rtm.engine.failures == []
    rtm.launch(bump, r).get()  # a notebook goes on after Ctrl-C
    assert ran == [1] and rtm.read(r).sum() == 4.0
    assert rtm.cancel(timeout=1.0) is True
