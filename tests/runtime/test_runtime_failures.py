"""Failures: a task's exception reaches its waiters with the task's name and point; dependents do not
run; nothing hangs; shutdown joins every worker."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import runtime as rt

ran: list = []


@rt.task(privileges=[rt.RW])
def explode(x, at):
    x += 1
    if at is not None and x.flat[0] >= at:
        raise ValueError(f"boom at {x.flat[0]}")


@rt.task(privileges=[rt.RO])
def observe(x):
    ran.append(float(x.sum()))
    return float(x.sum())


@rt.task
def fail_point(p):
    if p == (2,):
        raise KeyError("bad point")
    return p


@rt.task
def identity(v):
    ran.append(v)
    return v


def test_error_names_task_and_point(rtm):
    fm = rtm.index_launch(fail_point, 4, rt.POINT)
    assert fm[1].get() == (1,)
    with pytest.raises(rt.TaskError, match=r"task 'fail_point' point \(2,\) on CPU0 failed: KeyError") as ei:
        fm[2].get()
    err = ei.value
    assert err.task == "fail_point" and err.point == (2,) and isinstance(err.__cause__, KeyError)
    with pytest.raises(rt.TaskError):
        fm.get()
    assert fm[2].exception() is not None and fm[3].exception() is None


def test_dependents_are_not_run(rtm):
    ran.clear()
    R = rt.Region((2,), np.float64, name="r")
    rtm.fill(R, 0.0)
    bad = rtm.launch(explode, R, 1)        # writes R, then raises
    reader = rtm.launch(observe, R)        # depends on the failed writer: must not run
    chained = rtm.launch(identity, reader)  # depends on the reader's future
    independent = rtm.launch(identity, 7)
    assert independent.get() == 7
    for f in (bad, reader, chained):
        f.wait()
    with pytest.raises(rt.TaskError, match="explode"):
        bad.get()
    with pytest.raises(rt.TaskError, match=r"task 'observe' point \(\) was not run because task 'explode'"):
        reader.get()
    with pytest.raises(rt.TaskError, match="was not run because task 'explode'") as ei:
        chained.get()
    assert ei.value.failed_task == "explode"
    assert ran == [7]
    # overwriting the region clears the failure for later readers
    rtm.write(R, np.array([5.0, 5.0]))
    assert rtm.launch(observe, R).get() == 10.0


def test_fence_raises_unreported_failures_once(rtm):
    rtm.launch(fail_point, (2,))
    with pytest.raises(rt.TaskError, match="fail_point"):
        rtm.fence()
    rtm.fence()  # reported once


def test_failure_reaches_the_end_of_a_trace(rtm):
    R = rt.Region((1,), np.float64)
    rtm.fill(R, 0.0)
    for step in range(3):
        if step < 2:
            with rtm.trace("t"):
                rtm.launch(explode, R, None)
        else:
            with pytest.raises(rt.TaskError, match=r"task 'explode' point \(\)"):
                with rtm.trace("t"):
                    rtm.launch(explode, R, 3)
    assert rtm.stats.replayed_traces == 2


def test_waiting_inside_a_task_is_refused_not_a_hang():
    gate = threading.Event()

    @rt.task
    def blocker():
        gate.wait(10)

    @rt.task
    def waits(future):
        return future.get()

    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        pending = rtm.launch(blocker)                    # CPU0, blocked until the gate opens
        f = rtm.launch(waits, rt.Future.from_value(pending))  # CPU1 waits on it inside a body
        f.wait()
        gate.set()
        with pytest.raises(rt.TaskError, match="waited on the future of task 'blocker'"):
            f.get()


def test_shutdown_joins_every_worker():
    # Compare thread objects, not names: other runtimes of the process (the Keras tests' shared one)
    # have workers with the same names.
    before = set(threading.enumerate())
    r = rt.Runtime(rt.Machine(cpus=2, utils=1), executor="threaded")
    mine = set(threading.enumerate()) - before
    assert {t.name for t in mine} == {"runtime-CPU0", "runtime-CPU1", "runtime-UTIL0"}
    r.launch(fail_point, (2,))
    r.shutdown()  # does not raise, logs the unreported failure
    assert not any(t.is_alive() for t in mine)


def test_context_manager_raises_unreported_failure_and_still_joins():
    before = set(threading.enumerate())
    with pytest.raises(rt.TaskError, match="fail_point"):
        with rt.Runtime(rt.Machine(cpus=2)) as r:
            r.launch(fail_point, (2,))
    assert set(threading.enumerate()) <= before


def test_a_task_body_cannot_launch(rtm):
    R = rt.Region((2,), np.float64)

    @rt.task(privileges=[rt.RO])
    def nested(x):
        return rtm.read(R)

    rtm.fill(R, 1.0)
    with pytest.raises(rt.TaskError, match="only the program's thread launches"):
        rtm.launch(nested, R).get()
    assert (rtm.read(R) == 1.0).all()  # the runtime is still usable
