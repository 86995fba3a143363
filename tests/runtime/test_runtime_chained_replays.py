"""Replays chained to the previous replay of the same record (tracing.py, trace_record.py `_cross`): each
point waits for the nodes of that replay it depends on instead of for one barrier after all of them.
The results are those of the unchained runs (orderings that a missing edge would break), a replay
starts work while the previous one still runs, and anything between two replays unchains them."""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext

import numpy as np
import pytest

import runtime as rt


@rt.task(privileges=[rt.RO, rt.WD])
def copy_slowly(src, dst, delay):
    time.sleep(delay)
    dst[...] = src


@rt.task(privileges=[rt.RW])
def add_one(x, delay):
    time.sleep(delay)
    x += 1


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def partial(x, g):
    g += x


@rt.task(privileges=[rt.RW, rt.RO])
def apply(w, g):
    w -= 0.5 * g


def _step(rtm, w, s, g, delay):
    rtm.launch(copy_slowly, w, s, delay, tag=rtm.machine.processors(rt.ProcKind.CPU)[0])  # reads w, writes s
    rtm.fill(g, 0.0)
    for _ in range(2):
        rtm.launch(partial, s, g)
    rtm.launch(apply, w, g)
    rtm.launch(add_one, s, delay / 2)


def _run(executor, steps, between=None, delay=0.002):
    with rt.Runtime(rt.Machine(cpus=2, utils=1), executor=executor) as rtm:
        w = rt.Region((6,), np.float64, name="w")
        s = rt.Region((6,), np.float64, name="s")
        g = rt.Region((6,), np.float64, name="g")
        rtm.write(w, np.arange(6.0))
        rtm.fill(s, 0.0)
        for k in range(steps):
            with rtm.trace("step", wait=False):
                _step(rtm, w, s, g, delay)
            if between is not None:
                between(rtm, k, w)
        return rtm.read(w).copy(), rtm.read(s).copy(), rtm.stats.chained_replays


def _two_regions(rtm):
    """(cpu0, cpu1, a, b): the two CPU processors and two zeroed regions, one chain each."""
    cpu0, cpu1 = rtm.machine.processors(rt.ProcKind.CPU)
    a = rt.Region((2,), np.float64, name="a")
    b = rt.Region((2,), np.float64, name="b")
    rtm.fill(a, 0.0)
    rtm.fill(b, 0.0)
    return cpu0, cpu1, a, b


def test_chained_replays_compute_the_unchained_numbers():
    want = _run("sequential", 8)
    got = _run("threaded", 8)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == 8 - 2  # the recording and the first replay start behind the whole previous run


def test_work_between_replays_unchains_the_next_one():
    def write_sometimes(rtm, k, w):
        if k == 4:
            rtm.write(w, rtm.read(w) + 10.0)  # outside the trace: the next replay waits for it

    ref = _run("sequential", 8, write_sometimes)
    got = _run("threaded", 8, write_sometimes)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    assert got[2] == 8 - 3


def test_a_replay_starts_while_the_previous_one_still_runs():
    """Two independent chains on two processors: the fast one's next replay runs while the slow one's
    previous replay is still sleeping (behind one barrier it would wait for the slow one)."""
    spans: dict = {}
    lock = threading.Lock()

    @rt.task(privileges=[rt.RW])
    def stamp(x, key, delay):
        t0 = time.perf_counter()
        time.sleep(delay)
        x += 1
        with lock:
            spans[key] = (t0, time.perf_counter())

    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        cpu0, cpu1, a, b = _two_regions(rtm)
        for k in range(4):
            with rtm.trace("two chains", wait=False):
                rtm.launch(stamp, a, ("fast", k), 0.0, tag=cpu0)
                rtm.launch(stamp, b, ("slow", k), 0.3 if k == 2 else 0.0, tag=cpu1)
        np.testing.assert_array_equal(rtm.read(a), [4.0, 4.0])
        np.testing.assert_array_equal(rtm.read(b), [4.0, 4.0])
        assert rtm.stats.chained_replays == 2
    assert spans[("fast", 3)][0] < spans[("slow", 2)][1] - 0.1, spans


@pytest.mark.parametrize("executor", ["threaded", "sequential"])
def test_a_host_read_between_replays_sees_the_finished_step(executor):
    seen = []

    def read(rtm, k, w):
        seen.append(rtm.read(w).copy())

    _run(executor, 5, read)
    ref = []
    _run("sequential", 5, lambda rtm, k, w: ref.append(rtm.read(w).copy()))
    for a, b in zip(seen, ref, strict=True):
        np.testing.assert_array_equal(a, b)


@rt.task(privileges=[rt.RW])
def fast_add(x):
    x += 1


@rt.task(privileges=[rt.RO])
def first_value(x):
    return float(x[0])


@pytest.mark.parametrize("ending", ["mismatch", "abort"])
def test_a_chained_replay_that_ends_early_still_orders_what_follows_after_the_previous_one(ending):
    """The replayed prefix only chained to part of the previous replay (its slow branch is still
    running); whatever follows the prefix's barrier must still see that branch's write."""
    with rt.Runtime(rt.Machine(cpus=2, utils=1), executor="threaded") as rtm:
        cpu0, cpu1, a, b = _two_regions(rtm)
        for k in range(3):
            with rtm.trace("t", wait=False):
                rtm.launch(fast_add, a, tag=cpu0)
                rtm.launch(add_one, b, 0.3 if k == 2 else 0.0, tag=cpu1)
        got = None
        with pytest.raises(RuntimeError) if ending == "abort" else nullcontext():
            with rtm.trace("t", wait=False):
                rtm.launch(fast_add, a, tag=cpu0)
                if ending == "abort":
                    raise RuntimeError("the body fails")
                got = rtm.launch(first_value, b, tag=cpu0)  # differs from the record: analysed normally
        if got is None:
            got = rtm.launch(first_value, b, tag=cpu0)
        assert got.get() == 3.0
        assert rtm.stats.chained_replays == 2


@rt.task(privileges=[])
def slow_value(delay):
    time.sleep(delay)
    return 0.0


@rt.task(privileges=[rt.RO])
def read_with(c, f):
    return float(c[0])


def test_a_read_only_task_of_an_earlier_replay_runs_before_a_later_writer():
    """A trace that only reads a region: a writer after the last replay waits for every replay's
    reader, also one still waiting for its future when later replays finished."""
    with rt.Runtime(rt.Machine(cpus=2, utils=1), executor="threaded") as rtm:
        cpu0, cpu1 = rtm.machine.processors(rt.ProcKind.CPU)
        c = rt.Region((2,), np.float64, name="c")
        rtm.fill(c, 1.0)
        outs = []
        for k in range(4):
            f = rtm.launch(slow_value, 0.3 if k == 2 else 0.0, tag=cpu1 if k == 2 else cpu0)
            with rtm.trace("t", wait=False):
                outs.append(rtm.launch(read_with, c, f, tag=cpu0))
        rtm.fill(c, 99.0)
        assert [o.get() for o in outs] == [1.0] * 4
