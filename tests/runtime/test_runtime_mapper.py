"""Mappers: the default policy, custom mappers, and the runtime's validation of every answer."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


@rt.task(privileges=[rt.RO])
def where(x):
    return None


@rt.task
def nothing():
    return None


class Fixed(rt.Mapper):
    """Maps everything to one processor and one memory (possibly wrong ones)."""

    def __init__(self, proc=None, mem=None):
        self.proc, self.mem = proc, mem

    def select_processor(self, task_info, point, machine):
        return self.proc or machine.processors(rt.ProcKind.CPU)[0]

    def select_memory(self, task_info, point, processor, arg_index, region, privilege):
        return self.mem or task_info.machine.local_memory(processor)


def _procs_of(rtm):
    events = sorted((e for e in rtm.profile_events() if e.get("cat") == "task"),
                    key=lambda e: (e["args"]["launch"], e["args"]["point"]))
    return [(e["name"], tuple(e["args"]["point"]), e["args"]["processor"]) for e in events]


def test_default_mapper_spreads_points_and_single_launches():
    with rt.Runtime(rt.Machine(cpus=2, utils=1), profile=True) as rtm:
        rtm.index_launch(nothing, 4)
        rtm.launch(nothing)
        rtm.launch(nothing)
        procs = _procs_of(rtm)
    assert [p for _, pt, p in procs[:4]] == ["CPU0", "CPU1", "CPU0", "CPU1"]
    assert {p for _, _, p in procs[4:]} == {"CPU0", "CPU1"}


def test_default_mapper_keeps_update_chains_on_the_owner():
    @rt.task(privileges=[rt.RW])
    def bump(x):
        x += 1

    R = rt.Region((2,))
    with rt.Runtime(rt.Machine(cpus=2), profile=True) as rtm:
        for _ in range(4):
            rtm.launch(bump, R)
        procs = {p for n, _, p in _procs_of(rtm) if n == "bump"}
        assert len(procs) == 1 and rtm.last_writer(R).name in procs


def test_tag_processor_is_honoured():
    m = rt.Machine(cpus=2)
    cpu1 = m.processors(rt.ProcKind.CPU)[1]
    with rt.Runtime(m, profile=True) as rtm:
        for _ in range(3):
            rtm.launch(nothing, tag=cpu1)
        assert {p for _, _, p in _procs_of(rtm)} == {"CPU1"}


def test_processor_without_variant_is_a_mapping_error(rtm):
    util = rtm.machine.processors(rt.ProcKind.UTIL)[0]
    r = rt.Runtime(rtm.machine, executor="sequential", mapper=Fixed(proc=util))
    try:
        with pytest.raises(rt.MappingError, match=r"Mapper Fixed\.select_processor chose UTIL0 for task "
                                                  r"'nothing' point \(\), but the task has no UTIL variant"):
            r.launch(nothing)
    finally:
        r.shutdown()


def test_foreign_processor_or_memory_is_a_mapping_error():
    other = rt.Machine(cpus=4)
    foreign_cpu = other.processors(rt.ProcKind.CPU)[3]
    with rt.Runtime(rt.Machine(cpus=2), executor="sequential", mapper=Fixed(proc=foreign_cpu)) as r:
        with pytest.raises(rt.MappingError, match="not a processor of this machine"):
            r.launch(nothing)
    with rt.Runtime(rt.Machine(cpus=2), executor="sequential", mapper=Fixed(mem="sysmem")) as r:
        with pytest.raises(rt.MappingError, match=r"Fixed\.select_memory returned 'sysmem' for argument 0"):
            r.launch(where, rt.Region((2,)))


def test_unaddressable_memory_is_a_mapping_error(monkeypatch):
    from runtime import gpu
    from runtime.machine import MB

    monkeypatch.setattr(gpu, "device_count", lambda: (1, ""))
    monkeypatch.setattr(gpu, "compiler_problem", lambda: "")
    monkeypatch.setattr(gpu, "device_info", lambda i: {"name": "FakeGPU", "free": 1024.0 * MB,
                                                       "total": 1024.0 * MB, "bandwidth": 1e12})
    m = rt.Machine(cpus=1, gpus=1, utils=0, fsize=64)
    fb = m.memories(rt.MemKind.GPU_FB)[0]
    mapper = Fixed(proc=m.processors(rt.ProcKind.CPU)[0], mem=fb)
    r = rt.Runtime(m, executor="sequential", mapper=mapper)
    try:
        with pytest.raises(rt.MappingError, match=r"placed argument 0 \(x\) of task 'where' point \(\) in "
                                                  r"gpu0_fb, which CPU0 cannot address.*sysmem"):
            r.launch(where, rt.Region((2,), name="x"))
    finally:
        r.shutdown()


def test_mapper_sees_tag_and_launch_shape():
    seen = []

    class Spy(rt.DefaultMapper):
        def select_processor(self, task_info, point, machine):
            seen.append((task_info.name, task_info.tag, task_info.index_launch, task_info.domain, point))
            return super().select_processor(task_info, point, machine)

    with rt.Runtime(rt.Machine(cpus=2), executor="sequential", mapper=Spy()) as rtm:
        rtm.index_launch(nothing, (2,), tag="fwd")
        rtm.launch(nothing, tag=7)
    assert seen == [("nothing", "fwd", True, (2,), (0,)), ("nothing", "fwd", True, (2,), (1,)),
                    ("nothing", 7, False, (), ())]


def test_zero_copy_placement_copies_and_invalidates():
    """A CPU can address ZERO_COPY: the runtime copies in, and a write elsewhere invalidates it."""

    @rt.task(privileges=[rt.RO])
    def total(x):
        return float(x.sum())

    @rt.task(privileges=[rt.RW])
    def inc(x):
        x += 1

    class ZeroCopyReads(rt.DefaultMapper):
        def select_memory(self, task_info, point, processor, arg_index, region, privilege):
            if task_info.name == "total":
                return task_info.machine.memories(rt.MemKind.ZERO_COPY)[0]
            return super().select_memory(task_info, point, processor, arg_index, region, privilege)

    R = rt.Region((1000,), np.float64, name="v")
    with rt.Runtime(rt.Machine(cpus=2), executor="sequential", mapper=ZeroCopyReads()) as rtm:
        rtm.fill(R, 1.0)
        assert rtm.launch(total, R).get() == 1000.0
        assert rtm.stats.copies == 1 and rtm.stats.copy_bytes == 8000
        assert rtm.launch(total, R).get() == 1000.0
        assert rtm.stats.copies == 1            # still valid there: no copy
        rtm.launch(inc, R)                      # a write in SYSTEM memory invalidates the zero-copy one
        assert rtm.launch(total, R).get() == 2000.0
        assert rtm.stats.copies == 2
        used, cap = rtm.memory_usage()["zcmem"]
        assert used == 8000 and cap == 64 << 20
