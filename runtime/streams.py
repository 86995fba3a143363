"""CUDA streams and events that order GPU tasks on the device instead of on the host.

Policy: each GPU processor has its own stream. A GPU task waits (on the device, `Event.wait(stream)`) for
the events of the GPU tasks it depends on, enqueues its kernels on its stream (kernels.gpu.launch's
current stream, set around the body), and records one event when its body returns; it does not
synchronize. The host waits only where it reads: a CPU task or a host-side fold waits for the events of
its GPU predecessors (`Event.synchronize()`), and a wait on a task's completion or a fence synchronizes
the streams. A GPU task's copies into its own device run on its stream after its waits (runtime.gpu
`task_copies`); every other copy runs on the legacy default stream, which the (blocking) per-processor
streams synchronize with, so it sees every earlier kernel.

State: `StreamTable` maps a processor to its stream; events travel along the graph's edges as `Mark`s (the
engine hands a node's mark, or the marks it waited for when it has none, to its successors), merged to one
per stream: without that, barriers and folds, which pass on what they waited for, multiplied the lists
at every level of a step's graph (a 3-step fit on one GPU had a task wait on 1176 events).

`DeferredStream` is a deterministic stand-in for the CUDA simulator, whose streams run every launch at
once: it queues launches until an event or a host synchronization drains it, so a missing wait changes
the result (tests/runtime/test_streams.py).
"""

from __future__ import annotations

import itertools
import threading
import weakref


class StreamTable:
    """One stream per processor key, made on first use (on the processor's device)."""

    def __init__(self, make_stream):
        self._make = make_stream
        self._streams: dict[object, object] = {}
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            s = self._streams.get(key)
            if s is None:
                s = self._streams[key] = self._make()
            return s

    def all(self) -> list:
        with self._lock:
            return list(self._streams.values())


def cuda_stream():
    """A new (blocking) Numba CUDA stream on the current device."""
    from numba import cuda

    return cuda.stream()


class Mark:
    """An event recorded on a stream, with the stream and its place in the order of every mark: of two
    marks of one stream, the later one covers the earlier (a stream runs its work in order), so a node
    keeps at most one mark per stream however many GPU predecessors it inherits them from."""

    __slots__ = ("event", "stream", "seq")

    def __init__(self, event, stream, seq: int):
        self.event, self.stream, self.seq = event, stream, seq


_seq = itertools.count()


EVENTS_PER_STREAM = 256  # the ring of reusable events each stream records on


class _Ring:
    """A stream's reusable events (making an event costs about 20 us on an H200, recording one 3 us).
    An event is recorded again EVENTS_PER_STREAM marks later; a mark older than that then stands for a
    later point of its stream, so waiting on it waits longer than needed, never less (the stream's work
    never waits on the host, so that wait still ends)."""

    __slots__ = ("events", "next")

    def __init__(self):
        self.events, self.next = [None] * EVENTS_PER_STREAM, 0


_rings: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # stream -> _Ring


def _new_event():
    from numba import cuda

    try:
        return cuda.event(timing=False)
    except TypeError:  # the CUDA simulator's events take no arguments
        return cuda.event()


def record(stream) -> Mark:
    """A mark recorded on `stream` now (a stream is recorded on by one thread at a time: its processor's
    worker, so the numbering follows the stream's order)."""
    if isinstance(stream, DeferredStream):
        return Mark(stream.record(), stream, next(_seq))
    ring = _rings.get(stream)
    if ring is None:
        ring = _rings[stream] = _Ring()
    i = ring.next
    ring.next = (i + 1) % EVENTS_PER_STREAM
    ev = ring.events[i]
    if ev is None:
        ev = ring.events[i] = _new_event()
    ev.record(stream)
    return Mark(ev, stream, next(_seq))


def merge(marks: list | None, more) -> list:
    """`marks` and `more` with one mark per stream, the latest (a new list; the inputs are not changed)."""
    out = list(marks) if marks else []
    for m in more:
        for i, o in enumerate(out):
            if o.stream is m.stream:
                if m.seq > o.seq:
                    out[i] = m
                break
        else:
            out.append(m)
    return out


def device_wait(marks, stream) -> None:
    """Make `stream` wait for `marks` on the device (no host blocking); a mark of `stream` itself is
    already in its order."""
    for m in marks:
        if m.stream is not stream:
            m.event.wait(stream)


def host_wait(marks) -> None:
    """Block the host until `marks` have happened."""
    for m in marks:
        m.event.synchronize()


def finished(mark) -> bool:
    """Whether the work before `mark` has run (without blocking); the simulator's events, which run
    everything at once, have no query."""
    query = getattr(mark.event, "query", None)
    return True if query is None else bool(query())


def gpu_pending(node) -> bool:
    """True while a completed GPU task's work may still be running on its stream: its dependents must
    still be ordered after it (the analysis keeps such a node as a predecessor). Forgets the mark once
    it has happened."""
    ev = node.gpu_event
    if ev is None:
        return False
    if finished(ev):
        node.gpu_event = None
        return False
    return True


def synchronize(streams) -> None:
    """Block the host until every stream in `streams` is idle."""
    for s in streams:
        s.synchronize()


class DeferredEvent:
    """A point in a `DeferredStream`'s queue."""

    def __init__(self, stream: DeferredStream, position: int):
        self.stream = stream
        self.position = position

    def wait(self, stream) -> None:
        if stream is not self.stream:
            stream.enqueue(lambda: self.stream.drain(self.position))

    def synchronize(self) -> None:
        self.stream.drain(self.position)

    def query(self) -> bool:
        return self.stream.done >= self.position


class DeferredStream:
    """Queues launches until drained: the asynchronous behaviour the simulator's streams lack."""

    def __init__(self):
        self.queue: list = []
        self.done = 0  # how many queued items have run
        self.lock = threading.RLock()

    def enqueue(self, fn) -> None:
        with self.lock:
            self.queue.append(fn)

    def record(self) -> DeferredEvent:
        with self.lock:
            return DeferredEvent(self, len(self.queue))

    def drain(self, upto: int | None = None) -> None:
        with self.lock:
            stop = len(self.queue) if upto is None else upto
            while self.done < stop:
                fn = self.queue[self.done]
                self.done += 1
                fn()

    def synchronize(self) -> None:
        self.drain()
