"""Workers: independent tasks overlap on two CPU processors; dependent ones never do; thread policy."""

from __future__ import annotations

import time

import numpy as np
import pytest

import runtime as rt

SECTION = 0.2  # seconds each task spends outside the GIL


@rt.task
def sleeper(seconds):
    t0 = time.perf_counter()
    time.sleep(seconds)  # releases the GIL, like BLAS, Numba nogil or a CUDA wait
    return t0, time.perf_counter()


@rt.task(privileges=[rt.RW])
def sleepy_update(x, seconds):
    t0 = time.perf_counter()
    time.sleep(seconds)
    x += 1
    return t0, time.perf_counter()


def test_independent_tasks_run_concurrently():
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        rtm.launch(sleeper, 0.0).get()  # workers warm
        t0 = time.perf_counter()
        a, b = rtm.launch(sleeper, SECTION), rtm.launch(sleeper, SECTION)
        (a0, a1), (b0, b1) = a.get(), b.get()
        elapsed = time.perf_counter() - t0
    assert elapsed < 1.5 * SECTION, f"two {SECTION}s tasks took {elapsed:.3f}s: they did not overlap"
    assert a0 < b1 and b0 < a1


def test_index_launch_points_run_concurrently():
    R = rt.Region((4, 2), np.float64)
    P = rt.Partition.equal(R, (2, 1))
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor="threaded") as rtm:
        rtm.fill(R, 0.0)
        rtm.fence()
        t0 = time.perf_counter()
        rtm.index_launch(sleepy_update, 2, P, SECTION).get()
        elapsed = time.perf_counter() - t0
    assert elapsed < 1.5 * SECTION


def test_dependent_tasks_never_overlap(executor):
    R = rt.Region((2,), np.float64)
    with rt.Runtime(rt.Machine(cpus=2, utils=0), executor=executor) as rtm:
        rtm.fill(R, 0.0)
        spans = [rtm.launch(sleepy_update, R, 0.02) for _ in range(4)]
        spans = [f.get() for f in spans]
        assert (rtm.read(R) == 4).all()
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start


def test_sequential_executor_runs_in_issue_order_on_the_caller():
    order = []

    @rt.task
    def record(i):
        order.append(i)

    with rt.Runtime(rt.Machine(cpus=2), executor="sequential") as rtm:
        for i in range(10):
            rtm.launch(record, i)
        assert order == list(range(10))  # already ran, no fence needed


def test_threading_policy_caps_blas_threads_and_restores_them():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        return [i["num_threads"] for i in info]

    before = blas_threads()
    r = rt.Runtime(rt.Machine(cpus=2), executor="threaded")
    try:
        assert r.policy.threads_per_worker == max(1, r.policy.cores // 2)
        assert all(n <= r.policy.threads_per_worker for n in blas_threads())
    finally:
        r.shutdown()
    assert blas_threads() == before


def test_negative_priority_waits_for_the_other_ready_points():
    """On one processor busy with a long task, an update-like point (priority -1) queued before an
    ordinary one runs after it; it still runs once its queue is empty."""
    order = []

    @rt.task(priority=-1)
    def later(i):
        order.append(i)

    @rt.task
    def now(i):
        order.append(i)

    with rt.Runtime(rt.Machine(cpus=1, utils=0), executor="threaded") as rtm:
        rtm.launch(sleeper, 0.0).get()  # worker warm
        busy = rtm.launch(sleeper, SECTION)
        a = rtm.launch(later, "low")
        b = rtm.launch(now, "high")
        busy.get()
        a.get()
        b.get()
    assert order == ["high", "low"]


def test_priority_must_be_an_int():
    with pytest.raises(TypeError, match="priority must be an int"):
        rt.task(priority="low")(lambda: None)
