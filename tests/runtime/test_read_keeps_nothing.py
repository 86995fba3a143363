"""rtm.read hands its host copy to the caller and keeps no reference to it (the read's task record stays
the region's last reader until the next write)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import runtime as rt


def test_a_read_copy_dies_with_the_callers_reference():
    with rt.Runtime(rt.Machine(cpus=1)) as rtm:
        r = rt.Region((1000,), np.float32, name="r")
        rtm.fill(r, 2.0)
        value = rtm.read(r)
        assert float(value.sum()) == 2000.0
        ref = weakref.ref(value)
        del value
        gc.collect()
        assert ref() is None


def test_read_many_gives_each_target_as_read_does_and_keeps_nothing():
    with rt.Runtime(rt.Machine(cpus=2)) as rtm:
        a = rt.Region((6,), np.float32, name="a")
        b = rt.Region((2, 3), np.float64, name="b")
        f = rt.Region.fields((4,), {"x": np.float32, "y": np.int32}, name="f")
        rtm.write(a, np.arange(6, dtype=np.float32))
        rtm.write(b, np.ones((2, 3)))
        rtm.write(f, {"x": np.full(4, 3.0, np.float32), "y": np.arange(4, dtype=np.int32)})
        part = rt.Partition.equal(a, (2,))
        got = rtm.read_many([a, b, part[1], f])
        assert [g.dtype for g in got[:3]] == [np.float32, np.float64, np.float32]
        np.testing.assert_array_equal(got[0], np.arange(6))
        np.testing.assert_array_equal(got[1], np.ones((2, 3)))
        np.testing.assert_array_equal(got[2], [3, 4, 5])
        np.testing.assert_array_equal(got[3]["y"], np.arange(4))
        np.testing.assert_array_equal(rtm.read_many([f], field="x")[0], np.full(4, 3.0))
        assert rtm.read_many([]) == []
        ref = weakref.ref(got[0])
        del got
        gc.collect()
        assert ref() is None


@rt.task(privileges=[rt.RW])
def _failing_write(a):
    raise OSError("the writer failed")


def test_a_failed_read_many_leaves_no_copy_on_the_other_reads():
    """The first read fails (its region's writer did): the reads issued after it ran all the same, and their
    task records (the regions' last readers until the next write) must not keep their host copies; a target
    refused (a field it does not have) launches none of the reads."""
    with rt.Runtime(rt.Machine(cpus=2)) as rtm:
        a = rt.Region((4,), np.float32, name="a")
        b = rt.Region((1000,), np.float32, name="b")
        f = rt.Region.fields((4,), {"x": np.float32}, name="f")
        rtm.fill(a, 1.0)
        rtm.fill(b, 2.0)
        rtm.write(f, {"x": np.ones(4, np.float32)})
        rtm.launch(_failing_write, a)
        futures = []
        launch = rtm.launch
        rtm.launch = lambda *args, **kw: futures.append(launch(*args, **kw)) or futures[-1]
        try:
            with pytest.raises(rt.TaskError, match="writer failed"):
                rtm.read_many([a, b])
            rtm.engine.fence()
            assert len(futures) == 2 and [fut._node.value for fut in futures] == [None, None]
            with pytest.raises(rt.LaunchError, match="field 'x'"):
                rtm.read_many([f, b], field="x")
            assert len(futures) == 2
        finally:
            rtm.launch = launch
        np.testing.assert_array_equal(rtm.read(b), np.full(1000, 2.0))
