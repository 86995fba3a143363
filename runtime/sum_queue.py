"""The order and number in flight of the gradient sums a process starts (`comm.Reducer`).

MPICH runs concurrent `Iallreduce`s of large buffers much slower than the same ones one after another.
Measured on a 2-core machine, 8 sums over 2 ranks, microseconds for all 8 (`benchmarks/mpi.py
--in-flight`: blocking `Allreduce`s, then at most 1, 2, 4 or 8 `Iallreduce`s in flight):

    16 KB each:    123 | 131  122  117  107      (small sums: latency, overlap helps a little)
    64 KB each:    202 | 207  190  179  254
    256 KB each:   615 | 572  593  953 1078      (from here on, one at a time is fastest)
    1 MB each:    2414 |2003 2498 4002 4823
    4 MB each:    8705 |7598 9170 15583 18088

A training step starts one sum per weight as soon as its gradient is complete, so a step had all of
them in flight. `SumQueue` issues them in the order they were started, at most `limit_bytes` in flight
(one sum of any size when it is larger: 256 KB in `runtime/comm.py`, so sums of 256 KB and more go one
at a time and small ones still overlap); the next one is issued when one completes, which the queue
notices whenever a start or a wait touches it (MPI progresses a request only while some thread calls
into MPI, with or without the queue).

Deadlock: ranks may start the same sums in different orders (the tasks that complete the gradients run
on several processors). Each sum has its own communicator, so only the issue order on each rank
matters: a rank that waits for a sum it has not issued issues it at once, with everything queued before
it, and a wait that outlasts `flush_after` issues everything queued, so every sum a rank waits for is
eventually issued by every rank that has started it.
"""

from __future__ import annotations

import threading
import time
from collections import deque


class Entry:
    """One sum: its communicator and buffer, and its request once issued."""

    __slots__ = ("comm", "buf", "req", "complete")

    def __init__(self, comm, buf):
        self.comm = comm
        self.buf = buf
        self.req = None
        self.complete = False


class SumQueue:
    """In-place `Iallreduce(SUM)`s of one process, issued in start order while fewer than `limit_bytes`
    are in flight (a larger sum goes out alone).

    Args:
        MPI: the mpi4py MPI module.
        limit_bytes: bytes in flight at most (outside a wait that flushes), or one sum of any size.
        poll_s: the sleep between polls of a long wait.
        failure: a callable returning this rank's pending failure (raised by a long wait) or None.
    """

    def __init__(self, MPI, limit_bytes: int = 256 << 10, poll_s: float = 50e-6, failure=None):
        self.MPI = MPI
        self.limit_bytes = int(limit_bytes)
        self.poll_s = poll_s
        self.failure = failure
        self._lock = threading.Lock()
        self._queue: deque = deque()
        self._flight: list = []

    def start(self, comm, buf) -> Entry:
        """Queue the sum of `buf` over `comm` (issued now if the bytes in flight allow it)."""
        e = Entry(comm, buf)
        with self._lock:
            self._queue.append(e)
            self._advance()
        return e

    def wait(self, e: Entry, spin_s: float, flush_after: float) -> None:
        """Return when `e`'s sum is in its buffer: issue it (and what was queued before it) if it is
        still queued, poll busily for `spin_s`, then with short sleeps; after `flush_after` issue every
        queued sum (see the module docstring); every quarter second raise this rank's pending failure."""
        t0 = time.perf_counter()
        spin_end, flush_at, next_probe = t0 + spin_s, t0 + flush_after, t0 + spin_s + 0.25
        flushed = False
        with self._lock:
            while e.req is None:
                self._issue(self._queue.popleft())
        while True:
            with self._lock:
                if not e.complete and e.req.Test():
                    e.complete = True
                if e.complete:
                    self._advance()
                    return
                now = time.perf_counter()
                if not flushed and now > flush_at:
                    while self._queue:
                        self._issue(self._queue.popleft())
                    flushed = True
                if self._queue:  # something waits for room: note completions and issue it when it fits
                    self._advance()
            if now > spin_end:
                time.sleep(self.poll_s)
                if now > next_probe and self.failure is not None:
                    next_probe = now + 0.25
                    err = self.failure()
                    if err is not None:
                        raise err

    def in_flight(self) -> int:
        """Sums issued and not yet seen complete."""
        with self._lock:
            return sum(not e.complete for e in self._flight)

    def queued(self) -> int:
        """Sums started and not yet issued."""
        with self._lock:
            return len(self._queue)

    def _issue(self, e: Entry) -> None:  # lock held
        e.req = e.comm.Iallreduce(self.MPI.IN_PLACE, e.buf, op=self.MPI.SUM)
        self._flight.append(e)

    def _advance(self) -> None:  # lock held: note completions, then issue queued sums up to the limit
        flight = []
        for x in self._flight:
            if not x.complete and x.req.Test():
                x.complete = True
            if not x.complete:
                flight.append(x)
        self._flight = flight
        busy = sum(_nbytes(x.buf) for x in self._flight)
        while self._queue and (not self._flight or busy + _nbytes(self._queue[0].buf) <= self.limit_bytes):
            busy += _nbytes(self._queue[0].buf)
            self._issue(self._queue.popleft())


def _nbytes(buf) -> int:
    return int(getattr(buf, "nbytes", 0))
