"""runtime.streams: the deferred stand-in streams order work exactly by their events (no GPU needed)."""

from runtime.streams import DeferredStream, StreamTable, device_wait, host_wait, record


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
