"""Profiling: -lg:prof and the code API give Chrome trace / Perfetto JSON with one event per task."""

from __future__ import annotations

import json

import numpy as np
import pytest

import runtime as rt


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def accumulate(x, g):
    g += x.sum(axis=0)


@rt.task
def nothing(i):
    return i


def _task_events(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["displayTimeUnit"] == "ms"
    events = doc["traceEvents"]
    rows = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    return [e for e in events if e.get("cat") == "task"], rows


def test_lg_prof_flag_writes_one_event_per_task(tmp_path, executor):
    path = tmp_path / "prof.json"
    rtm = rt.Runtime.from_args(["-ll:cpu", "2", "-lg:prof", "1", "-lg:prof_logfile", str(path)], executor=executor)
    X = rt.Region((8, 2), np.float64, name="x")
    G = rt.Region((2,), np.float64, name="g")
    rtm.fill(X, 1.0)
    rtm.fill(G, 0.0)
    rtm.index_launch(accumulate, 4, rt.Partition.equal(X, (4, 1)), G)
    for i in range(3):
        rtm.launch(nothing, i)
    rtm.shutdown()  # writes the file
    events, rows = _task_events(path)
    names = sorted(e["name"] for e in events)
    assert names == ["accumulate"] * 4 + ["fill"] * 2 + ["nothing"] * 3
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0
        assert rows[e["tid"]] == e["args"]["processor"]
    assert sorted(tuple(e["args"]["point"]) for e in events if e["name"] == "accumulate") == [
        (0,), (1,), (2,), (3,)]
    assert {e["args"]["processor"] for e in events if e["name"] == "fill"} == {"UTIL0"}


def test_code_api_start_stop_and_write(tmp_path):
    with rt.Runtime(rt.Machine(cpus=2)) as rtm:
        rtm.launch(nothing, 0).get()  # ran before profiling started
        rtm.start_profiling()
        fm = rtm.index_launch(nothing, 5, rt.POINT)
        fm.wait()
        rtm.stop_profiling()
        rtm.launch(nothing, 1).get()
        path = rtm.write_profile(str(tmp_path / "sub" / "p.json"))
        assert len([e for e in rtm.profile_events() if e.get("cat") == "task"]) == 5
    events, _ = _task_events(path)
    assert len(events) == 5 and {e["name"] for e in events} == {"nothing"}


def test_machine_flag_turns_profiling_on_and_write_needs_a_profile():
    with rt.Runtime(rt.Machine.from_args(["-lg:prof", "1"])) as rtm:
        assert rtm.profiler is not None
    with rt.Runtime(rt.Machine()) as rtm:
        assert rtm.profile_events() == []
        with pytest.raises(rt.RuntimeSystemError, match="-lg:prof"):
            rtm.write_profile("x.json")


def test_traced_tasks_are_profiled_too():
    with rt.Runtime(rt.Machine(cpus=2), profile=True) as rtm:
        for i in range(3):
            with rtm.trace("t"):
                rtm.launch(nothing, i)
                rtm.index_launch(nothing, 2, i)
        events = [e for e in rtm.profile_events() if e.get("cat") == "task"]
    assert len(events) == 9
