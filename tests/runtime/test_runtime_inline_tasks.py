"""Inline tasks (`task(inline=True)`, the start of an MPI sum): a CPU point runs on the thread that makes
it ready, without going through its processor's queue, launched or replayed, on both executors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import runtime as rt
from runtime import comm


@rt.task(privileges=[rt.RW], inline=True)
def mark(x):
    x += 1
    return threading.current_thread().name


@rt.task(privileges=[rt.RW])
def slow_bump(x):
    x += 1
    return threading.current_thread().name


def _count_puts(rtm):
    """Wrap the executor's queues: the list of nodes put on them from now on."""
    seen = []
    ex = rtm.executor
    real = list(ex._put)

    def wrap(put):
        def counted(node):
            seen.append(node)
            put(node)
        return counted

    ex._put = [wrap(p) for p in real]
    return seen, real


def test_the_task_flag_is_checked_and_kept():
    assert mark.inline and not slow_bump.inline
    with pytest.raises(TypeError, match="inline must be True or False"):
        rt.Task(lambda x: None, [rt.RW], name="bad", inline=1)


def test_a_ready_inline_point_runs_in_its_launch_on_the_launching_thread():
    R = rt.Region((4,), np.float64)
    with rt.Runtime(rt.Machine(cpus=1), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        rtm.read(R)
        seen, real = _count_puts(rtm)
        try:
            f = rtm.launch(mark, R)
            assert f.done()  # ran before launch returned
            assert f.get() == threading.current_thread().name
            assert not any(getattr(n, "task", None) is mark for n in seen)
        finally:
            rtm.executor._put = real
        assert (rtm.read(R) == 1).all()


def test_an_inline_point_runs_on_the_thread_that_completes_its_predecessor():
    R = rt.Region((4,), np.float64)
    with rt.Runtime(rt.Machine(cpus=1), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        seen, real = _count_puts(rtm)
        try:
            started, gate = threading.Event(), threading.Event()

            def held(x):
                started.set()
                gate.wait(5.0)
                return threading.current_thread().name

            first = rtm.launch(rt.Task(held, [rt.RW], name="hold"), R)
            assert started.wait(5.0)  # its worker runs it
            f = rtm.launch(mark, R)
            after = rtm.launch(slow_bump, R)
            assert not f.done()
            gate.set()
            after.get()
            worker = first.get()
            assert f.get() == worker != threading.current_thread().name
            assert not any(getattr(n, "task", None) is mark for n in seen)
        finally:
            rtm.executor._put = real
        assert (rtm.read(R) == 2).all()


@pytest.mark.parametrize("executor", ["threaded", "sequential"])
def test_replayed_inline_points_run_where_they_are_ready(executor):
    R = rt.Region((4,), np.float64)
    with rt.Runtime(rt.Machine(cpus=2), executor=executor) as rtm:
        rtm.fill(R, 0.0)
        seen, real = _count_puts(rtm) if executor == "threaded" else ([], None)
        try:
            for _ in range(4):
                with rtm.trace("step"):
                    rtm.launch(slow_bump, R)
                    f = rtm.launch(mark, R)
                    rtm.launch(slow_bump, R)
                assert f.done()
        finally:
            if real is not None:
                rtm.executor._put = real
        assert rtm.stats.replayed_traces == 3 and rtm.stats.trace_mismatches == 0
        assert (rtm.read(R) == 12).all()
        if executor == "threaded":  # the replays' other points went through the queues, never `mark`'s
            assert seen and not any(getattr(n, "task", None) is mark for n in seen)


def test_the_start_of_a_sum_over_ranks_is_inline_and_its_wait_is_not():
    class Stub:
        name = "g"

        def start(self, buf):
            buf += 1

        def finish(self, buf):
            buf *= 2

    start, finish = comm.sum_tasks(Stub())
    assert start.inline and not finish.inline
    R = rt.Region((3,), np.float64)
    with rt.Runtime(rt.Machine(cpus=1), executor="threaded") as rtm:
        rtm.fill(R, 1.0)
        rtm.read(R)
        rtm.launch(start, R)
        rtm.launch(finish, R)
        assert (rtm.read(R) == 4).all()
