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
