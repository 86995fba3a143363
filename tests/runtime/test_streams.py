"""runtime.streams: the deferred stand-in streams order work exactly by their events (no GPU needed)."""

from runtime.streams import DeferredStream, StreamTable, device_wait, host_wait, merge, record


def test_a_device_wait_orders_two_streams():
    a, b, log = DeferredStream(), DeferredStream(), []
    a.enqueue(lambda: log.append("a1"))
    device_wait([record(a)], b)          # b's later work runs after a's work so far
    b.enqueue(lambda: log.append("b1"))
    a.enqueue(lambda: log.append("a2"))  # after the event: b does not wait for it
    b.synchronize()
    assert log == ["a1", "b1"]
    host_wait([record(a)])
    assert log == ["a1", "b1", "a2"]


def test_without_a_wait_the_other_stream_runs_first():
    a, b, log = DeferredStream(), DeferredStream(), []
    a.enqueue(lambda: log.append("a"))
    b.enqueue(lambda: log.append("b"))
    b.synchronize()
    assert log == ["b"]  # the wrong order a missing event produces: the tests above would see it


def test_stream_table_makes_one_stream_per_processor():
    table = StreamTable(DeferredStream)
    assert table.get("gpu0") is table.get("gpu0")
    assert table.get("gpu0") is not table.get("gpu1")
    assert len(table.all()) == 2


def test_merge_keeps_the_latest_mark_of_each_stream():
    a, b = DeferredStream(), DeferredStream()
    a1, b1, a2 = record(a), record(b), record(a)
    merged = merge([a1], [b1, a2])
    assert merged == [a2, b1]
    assert merge(merged, [a1]) == [a2, b1]  # an earlier mark of a stream adds nothing
    assert merge(None, [a1, a2]) == [a2]


def test_marks_passed_on_through_many_levels_stay_one_per_stream():
    # barriers and folds pass on the marks they waited for: merged, a long chain stays bounded
    streams = [DeferredStream() for _ in range(3)]
    marks = None
    for i in range(200):
        marks = merge(marks, [record(streams[i % 3]), record(streams[(i + 1) % 3])])
    assert len(marks) == 3 and {m.stream for m in marks} == set(streams)


def test_a_stream_does_not_wait_on_its_own_marks():
    a, log = DeferredStream(), []
    a.enqueue(lambda: log.append("a1"))
    device_wait([record(a)], a)  # already in a's order: nothing is enqueued
    assert len(a.queue) == 1


def test_a_streams_events_are_made_once_and_reused_in_a_ring(monkeypatch):
    from runtime import streams

    made = []

    class Event:
        def __init__(self):
            self.records = []
            made.append(self)

        def record(self, stream):
            self.records.append(id(stream))  # (a CUDA event keeps no reference to the stream)

    class Stream:  # a real (non-deferred) stream: records go to pooled events
        pass

    monkeypatch.setattr(streams, "_new_event", Event)
    monkeypatch.setattr(streams, "EVENTS_PER_STREAM", 4)
    s, t = Stream(), Stream()
    marks = [record(s) for _ in range(6)]
    other = record(t)
    assert len(made) == 5  # 4 for s (the 5th and 6th marks reuse the 1st and 2nd), 1 for t
    assert [m.event for m in marks] == made[:4] + made[:2]
    assert made[0].records == [id(s)] * 2 and other.event is made[4] and other.event.records == [id(t)]
    assert [m.seq for m in marks] == sorted(m.seq for m in marks)  # the order of the stream's marks
    import gc

    rings = len(streams._rings)
    del s, marks  # a stream that is gone takes its events with it
    gc.collect()
    assert len(streams._rings) == rings - 1 and t in streams._rings


def test_an_async_host_to_device_copy_keeps_its_own_copy_of_the_source_until_the_stream_passes(monkeypatch):
    """The caller may overwrite the source (the next batch) as soon as the copy is enqueued: the copy reads a
    private host array, released once a mark recorded after it has passed."""
    import numpy as np

    from runtime import gpu, streams

    class Event:
        done = False

        def query(self):
            return self.done

    class View:
        ndim, size, dtype = 1, 4, np.dtype(np.float32)

        def is_c_contiguous(self):
            return True

        def copy_to_device(self, data, stream=0):
            enqueued.append((data, stream))

    class Stream:
        pass

    enqueued, events = [], []

    def record(stream):
        events.append(Event())
        return streams.Mark(events[-1], stream, len(events))

    monkeypatch.setattr(streams, "record", record)
    s, src = Stream(), np.arange(4, dtype=np.float32)
    gpu._h2d(View(), src, s)
    data, stream = enqueued[0]
    assert stream is s and data is not src and data.base is None
    src[:] = -1  # the caller reuses its buffer at once
    assert data.tolist() == [0, 1, 2, 3]
    assert [d is data for _, d in gpu._staged[s]] == [True]  # kept while the stream may still read it
    gpu._h2d(View(), src, s)
    assert len(gpu._staged[s]) == 2
    events[0].done = True
    gpu._h2d(View(), src, s)
    assert len(gpu._staged[s]) == 2  # the first copy has passed: released
    gpu._h2d(View(), src, 0)  # no stream: synchronous, nothing kept
    assert enqueued[-1][1] == 0 and len(gpu._staged[s]) == 2
