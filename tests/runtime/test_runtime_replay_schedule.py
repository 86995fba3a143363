"""Trace replay as a flat schedule: the exit barrier over the recorded sinks, failures at the trace end,
pipelined (wait=False) replays, and the launch fast paths (domain cache, region-argument comparison)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import runtime as rt
from runtime.futures import domain_points


@rt.task(privileges=[rt.RW])
def inc(x):
    x += 1


@rt.task(privileges=[rt.RO])
def slow_total(x, gate):
    gate.wait(5.0)
    return float(x.sum())


@rt.task(privileges=[rt.RO])
def total(x):
    return float(x.sum())


@rt.task(privileges=[rt.RW])
def maybe_fail(x, fail):
    if fail:
        raise ValueError("planned failure")
    x += 1


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def grad(x, g):
    g += x.sum(axis=0)


@rt.task(privileges=[rt.RW, rt.RO])
def sgd(w, g, lr):
    w -= lr * g


def test_exit_barrier_waits_for_sinks_and_writers_only(rtm):
    A = rt.Region((4,), np.float64, name="a")
    B = rt.Region((4,), np.float64, name="b")
    rtm.fill(A, 0.0)
    rtm.fill(B, 0.0)
    with rtm.trace("two chains"):
        rtm.launch(total, A)  # 0: read-only, followed by 1
        rtm.launch(inc, A)    # 1: a writer, after 0
        rtm.launch(total, B)  # 2: read-only, followed by nothing: a sink
        rtm.launch(total, A)  # 3: read-only sink, after 1
    rec = rtm._traces["two chains"]
    assert rec.exits == (1, 2, 3)
    assert rec.launches[0].points[0].put is not None  # queues resolved when the record was sealed
    with rtm.trace("two chains"):
        first = rtm.launch(total, A)
        rtm.launch(inc, A)
        rtm.launch(total, B)
        last = rtm.launch(total, A)
    assert first.get() == 4.0 and last.get() == 8.0 and rtm.stats.replayed_traces == 1


def test_trace_end_waits_for_a_node_that_is_not_an_exit(executor):
    # a read-only task followed by a writer is not among the exit barrier's predecessors: the trace end
    # and the next trace still wait for it (through the writer)
    if executor == "sequential":
        pytest.skip("the sequential executor runs each task as it is issued")
    A = rt.Region((4,), np.float64, name="a")
    B = rt.Region((4,), np.float64, name="b")
    with rt.Runtime(rt.Machine(cpus=2, utils=1), executor=executor) as rtm:
        rtm.fill(A, 0.0)
        rtm.fill(B, 0.0)
        for k in range(3):
            gate = threading.Event()
            with rtm.trace("slow branch", wait=False):
                slow = rtm.launch(slow_total, A, gate)
                rtm.launch(inc, A)
                rtm.launch(inc, B)
            assert not slow.done()
            gate.set()
            assert slow.get() == 4.0 * 2 * k
            gate = threading.Event()
            timer = threading.Timer(0.05, gate.set)
            timer.start()
            with rtm.trace("slow branch"):           # wait=True: returns only once every node is done
                slow = rtm.launch(slow_total, A, gate)
                rtm.launch(inc, A)
                rtm.launch(inc, B)
            assert slow.done() and slow.get() == 4.0 * (2 * k + 1)
            timer.join()
        assert rtm._traces["slow branch"].exits == (1, 2)
        assert rtm.stats.replayed_traces == 5
        assert (rtm.read(A) == 6).all() and (rtm.read(B) == 6).all()


def test_a_failure_inside_a_replay_surfaces_at_the_trace_end(rtm):
    A = rt.Region((4,), np.float64, name="a")
    rtm.fill(A, 0.0)
    for fail in (False, False):
        with rtm.trace("may fail"):
            rtm.launch(maybe_fail, A, fail)
            rtm.launch(inc, A)
    with pytest.raises(rt.TaskError, match="planned failure"):
        with rtm.trace("may fail"):
            rtm.launch(maybe_fail, A, True)  # not a sink: its successor is the recorded sink
            rtm.launch(inc, A)
    assert rtm.stats.replayed_traces == 2
    rtm.fill(A, 0.0)  # A's contents are lost with the failed writer: later readers would not run
    # wait=False: the failure surfaces at the next fence instead
    with rtm.trace("may fail", wait=False):
        rtm.launch(maybe_fail, A, True)
        rtm.launch(inc, A)
    with pytest.raises(rt.TaskError, match="planned failure"):
        rtm.fence()


def test_pipelined_replays_equal_the_untraced_run(rtm):
    X = rt.Region((8, 3), np.float64, name="x")
    P = rt.Partition.equal(X, (4, 1))
    W = rt.Region((3,), np.float64, name="w")
    G = rt.Region((3,), np.float64, name="g")
    rtm.write(X, np.arange(24.0).reshape(8, 3))
    rtm.fill(W, 0.0)
    for _ in range(6):
        with rtm.trace("step", wait=False):
            rtm.fill(G, 0.0)
            rtm.index_launch(grad, P.color_shape, P, G)
            rtm.launch(sgd, W, G, 0.5)
    assert rtm.stats.replayed_traces == 5 and rtm.stats.trace_mismatches == 0
    np.testing.assert_allclose(rtm.read(W), -6 * 0.5 * np.arange(24.0).reshape(8, 3).sum(axis=0))


def test_an_array_where_a_region_was_recorded_is_a_launch_error(rtm):
    # the replay's one-comparison match must not trip over an array's elementwise ==
    A = rt.Region((4,), np.float64, name="a")
    rtm.fill(A, 0.0)
    with rtm.trace("t"):
        rtm.launch(inc, A)
    with pytest.raises(rt.LaunchError, match="must be a Region"):
        with rtm.trace("t"):
            rtm.launch(inc, np.zeros(4))
    with rtm.trace("t"):  # the aborted replay was sealed: the record still replays
        rtm.launch(inc, A)
    assert (rtm.read(A) == 2).all() and rtm.stats.replayed_traces == 1


def test_launch_domains_are_normalised_the_same_with_the_cache():
    assert domain_points(3) == ((3,), ((0,), (1,), (2,)))
    assert domain_points((3,)) == domain_points(3)
    assert domain_points((2, 1)) == ((2, 1), ((0, 0), (1, 0)))
    assert domain_points([2]) == ((2,), ((0,), (1,)))
    with pytest.raises(TypeError):
        domain_points(3.0)  # a float is not a domain, even once 3 is cached


def test_data_of_a_failed_writer_is_not_read_after_the_trace(rtm):
    # the failed writer is no sink (a reader follows it inside the trace); whatever reads its data after
    # the trace must still not run, exactly as without tracing
    A = rt.Region((4,), np.float64, name="a")
    rtm.fill(A, 0.0)
    for fail in (False, False, True):
        with rtm.trace("fail then read", wait=False):
            rtm.launch(maybe_fail, A, fail)
            inside = rtm.launch(total, A)
    after = rtm.launch(total, A)
    with pytest.raises(rt.TaskError, match="was not run because task 'maybe_fail'"):
        after.get()
    with pytest.raises(rt.TaskError, match="was not run because task 'maybe_fail'"):
        inside.get()
    assert rtm.stats.replayed_traces == 2
    rtm.fence()  # the failure was reported through the futures above


@rt.task(privileges=[rt.WD, rt.RO])
def write_point(y, w, scale, point):
    y[...] = w.sum() * scale + point[0]


def test_replayed_points_receive_their_own_point(rtm):
    Y = rt.Region((4, 2), np.float64, name="y")
    P = rt.Partition.equal(Y, (4, 1))
    W = rt.Region((2,), np.float64, name="w")
    rtm.fill(W, 1.0)
    for scale in (1.0, 10.0, 100.0):
        with rtm.trace("points", wait=False):
            fm = rtm.index_launch(write_point, P.color_shape, P, W, scale, rt.POINT)
        np.testing.assert_allclose(rtm.read(Y)[:, 0], 2 * scale + np.arange(4))
    assert fm.get() == [None] * 4 and rtm.stats.replayed_traces == 2
    assert rtm._traces["points"].launches[0].points[3].fixed is not None  # the flat path took it


def test_an_equal_placement_tag_rebuilt_per_run_matches_quickly(rtm):
    A = rt.Region((4,), np.float64, name="a")
    rtm.fill(A, 0.0)
    cpus = rtm.machine.processors(rt.ProcKind.CPU)
    for _ in range(3):
        with rtm.trace("placed"):
            rtm.launch(inc, A, tag=(cpus[1],))  # a new tuple each run, equal to the recorded one
    lt = rtm._traces["placed"].launches[0]
    assert lt.quick_match(inc, False, (), (A,), (cpus[1],)) is not None
    assert lt.quick_match(inc, False, (), (A,), (cpus[0],)) is None
    assert rtm.stats.replayed_traces == 2 and rtm.stats.trace_mismatches == 0
    assert rtm.last_writer(A) is cpus[1] and (rtm.read(A) == 3).all()
