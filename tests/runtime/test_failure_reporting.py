"""Which failures the runtime still logs at shutdown once one has been reported: not the other points of
the same task failing with the same exception type (the shards of one launch), but any other."""

from __future__ import annotations

import logging

import pytest

import runtime as rt


@rt.task
def every_point_fails(p):
    raise OSError(f"shard {p} cannot be read")


@rt.task
def other_task_fails(p):
    raise ZeroDivisionError("another bug")


def test_the_other_shards_of_a_reported_failure_are_not_logged_again(caplog):
    r = rt.Runtime(rt.Machine(cpus=2))
    fm = r.index_launch(every_point_fails, (4,), rt.POINT)
    r.engine.fence()
    with pytest.raises(rt.TaskError, match="cannot be read"):
        fm[0].get()
    assert r.engine.failures, "the other three points are root failures nobody was told about"
    assert r.engine.unreported_failures() == []
    other = r.launch(other_task_fails, 1)
    other.wait()
    assert [n.label()[0] for n in r.engine.unreported_failures()] == ["other_task_fails"]
    with caplog.at_level(logging.ERROR):
        r.shutdown()
    logged = [rec.getMessage() for rec in caplog.records if "unreported task failure" in rec.getMessage()]
    assert len(logged) == 1 and "another bug" in logged[0]
