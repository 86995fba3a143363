"""CUDA streams and events that order GPU tasks on the device instead of on the host.

Policy: each GPU processor has its own stream. A GPU task waits (on the device, `Event.wait(stream)`) for
the events of the GPU tasks it depends on, enqueues its kernels on its stream (kernels.gpu.launch's
current stream, set around the body), and records one event when its body returns; it does not
synchronize. The host waits only where it reads: a CPU task or a host-side fold waits for the events of
its GPU predecessors (`Event.synchronize()`), and a wait on a task's completion or a fence synchronizes
the streams. Copies through ``copy_to_host`` / ``to_device`` run on the legacy default stream, which the
(blocking) per-processor streams synchronize with, so they see every earlier kernel.

State: `StreamTable` maps a processor to its stream; events travel along the graph's edges (the engine
hands a node's event, or the events it waited for when it has none, to its successors).

`DeferredStream` is a deterministic stand-in for the CUDA simulator, whose streams run every launch at
once: it queues launches until an event or a host synchronization drains it, so a missing wait changes
the result (tests/runtime/test_streams.py).
"""

from __future__ import annotations

import threading


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


def record(stream):
    """An event recorded on `stream` now."""
    if isinstance(stream, DeferredStream):
        return stream.record()
    from numba import cuda

    try:
        ev = cuda.event(timing=False)
    except TypeError:  # the CUDA simulator's events take no arguments
        ev = cuda.event()
    ev.record(stream)
    return ev


def device_wait(events, stream) -> None:
    """Make `stream` wait for `events` on the device (no host blocking)."""
    for ev in events:
        ev.wait(stream)


def host_wait(events) -> None:
    """Block the host until `events` have happened."""
    for ev in events:
        ev.synchronize()


def finished(event) -> bool:
    """Whether the work before `event` has run (without blocking); the simulator's events, which run
    everything at once, have no query."""
    query = getattr(event, "query", None)
    return True if query is None else bool(query())


def gpu_pending(node) -> bool:
    """True while a completed GPU task's work may still be running on its stream: its dependents must
    still be ordered after it (the analysis keeps such a node as a predecessor). Forgets the event once
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
