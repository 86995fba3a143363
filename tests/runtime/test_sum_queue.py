"""SumQueue: gradient sums issued in start order, a byte budget in flight, never withheld from a wait."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.sum_queue import SumQueue

ONE = np.zeros(4, np.float32)  # 16 bytes: more than a budget of 0, so one sum at a time
MPI = type("MPI", (), {"IN_PLACE": "in place", "SUM": "sum"})


class _Req:
    def __init__(self, log, name):
        self.log, self.name, self.done = log, name, False

    def Test(self):
        return self.done


class _Comm:
    """Records the order of Iallreduce calls; requests complete when the test says so."""

    def __init__(self, log, name):
        self.log, self.name = log, name
        self.req = None

    def Iallreduce(self, in_place, buf, op):
        assert in_place == MPI.IN_PLACE and op == MPI.SUM
        self.log.append(self.name)
        self.req = _Req(self.log, self.name)
        return self.req


def test_one_in_flight_in_start_order_and_the_next_issued_on_completion():
    log = []
    q = SumQueue(MPI, limit_bytes=0)
    comms = [_Comm(log, n) for n in "abc"]
    entries = [q.start(c, ONE) for c in comms]
    assert log == ["a"] and q.in_flight() == 1 and q.queued() == 2
    comms[0].req.done = True
    q.start(_Comm(log, "d"), ONE)  # any touch notices the completion and issues the next
    assert log == ["a", "b"]
    comms[1].req.done = True
    q.wait(entries[1], spin_s=0.0, flush_after=10.0)
    assert log == ["a", "b", "c"]  # b's completion issued c


def test_a_wait_issues_its_sum_and_what_was_started_before_it():
    log = []
    q = SumQueue(MPI, limit_bytes=0)
    comms = [_Comm(log, n) for n in "abc"]
    entries = [q.start(c, ONE) for c in comms]
    for c in comms:
        c.Iallreduce = _completing(c.Iallreduce)
    q.wait(entries[2], spin_s=0.0, flush_after=10.0)  # a is in flight, b and c queued: issue b then c
    assert log == ["a", "b", "c"]


def test_a_long_wait_issues_everything_queued():
    """Another rank may wait for a sum queued here behind the one this rank waits for: after
    `flush_after` every queued sum goes out, so neither rank waits forever."""
    log = []
    q = SumQueue(MPI, limit_bytes=0)
    a, b = _Comm(log, "a"), _Comm(log, "b")
    ea = q.start(a, ONE)
    q.start(b, ONE)
    calls = []

    def test_a():
        calls.append(1)
        return "b" in log  # a completes only once b was issued (the other rank waits for b first)

    a.req.Test = test_a
    q.wait(ea, spin_s=0.0, flush_after=0.001)
    assert log == ["a", "b"] and len(calls) > 1


def test_small_sums_share_the_byte_budget_and_a_large_one_goes_alone():
    log = []
    q = SumQueue(MPI, limit_bytes=1000)
    for n, size in (("a", 400), ("b", 400), ("c", 400)):
        q.start(_Comm(log, n), np.zeros(size // 4, np.float32))
    assert log == ["a", "b"] and q.queued() == 1  # c would pass 1000 bytes
    q2 = SumQueue(MPI, limit_bytes=1000)
    q2.start(_Comm(log, "big"), np.zeros(1000, np.float32))  # 4000 bytes: alone, but issued
    assert log[-1] == "big"


def test_the_processes_budget_sends_megabyte_sums_one_at_a_time():
    """runtime/comm.py's budget (benchmarks/mpi.py --in-flight: from 256 KB up, MPICH runs concurrent
    Iallreduce slower than the same sums one after another; small ones still overlap)."""
    from runtime.comm import SUM_BYTES_IN_FLIGHT

    log = []
    q = SumQueue(MPI)
    assert q.limit_bytes == SUM_BYTES_IN_FLIGHT
    comms = [_Comm(log, n) for n in "ab"]
    for c in comms:
        q.start(c, np.zeros((1 << 20) // 4, np.float32))  # a weight gradient of 1 MB
    assert log == ["a"] and q.queued() == 1
    comms[0].req.done = True
    for n in "cde":
        q.start(_Comm(log, n), np.zeros((16 << 10) // 4, np.float32))  # biases of 16 KB, behind b
    assert log == ["a", "b"] and q.queued() == 3
    comms[1].req.done = True
    q.start(_Comm(log, "f"), np.zeros((16 << 10) // 4, np.float32))
    assert log == ["a", "b", "c", "d", "e", "f"]  # small sums overlap


def test_a_failure_ends_a_long_wait():
    log = []
    q = SumQueue(MPI, limit_bytes=0, poll_s=1e-4, failure=lambda: RuntimeError("rank 1 failed"))
    e = q.start(_Comm(log, "a"), ONE)
    with pytest.raises(RuntimeError, match="rank 1 failed"):
        q.wait(e, spin_s=0.0, flush_after=10.0)


def _completing(issue):
    def call(*args, **kw):
        req = issue(*args, **kw)
        req.done = True
        return req
    return call
