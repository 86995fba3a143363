"""Capacity accounting and out-of-memory errors (region, memory, bytes requested and free, flag)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.machine import MB


@rt.task(privileges=[rt.RO])
def touch(x):
    return x.shape


@rt.task(privileges=[rt.RW])
def bump(x):
    x += 1
    return x.shape


class ZeroCopy(rt.DefaultMapper):
    def select_memory(self, task_info, point, processor, arg_index, region, privilege):
        return task_info.machine.memories(rt.MemKind.ZERO_COPY)[0]


def test_system_memory_oom_names_region_memory_bytes_and_flag(executor):
    with rt.Runtime(rt.Machine(cpus=1, csize=1), executor=executor) as rtm:
        small = rt.Region((100,), np.float64, name="small")
        rtm.fill(small, 0.0)
        big = rt.Region((512, 512), np.float32, name="activations")  # exactly 1 MB > what is left
        with pytest.raises(rt.OutOfMemoryError) as ei:
            rtm.fill(big, 0.0)
        err = ei.value
        msg = str(err)
        assert "region 'activations' needs 1048576 bytes" in msg
        assert "sysmem" in msg and "-ll:csize" in msg and f"only {MB - 800} bytes are free" in msg
        assert (err.region, err.memory, err.requested, err.free, err.flag) == (
            "activations", "sysmem", MB, MB - 800, "-ll:csize")
        assert rtm.memory_usage()["sysmem"] == (800, MB)


def test_zero_copy_oom_when_nothing_can_be_evicted(executor):
    with rt.Runtime(rt.Machine(cpus=1, zsize=1), executor=executor, mapper=ZeroCopy()) as rtm:
        half = rt.Region((MB // 2,), np.uint8, name="half")
        assert rtm.launch(bump, half).get() == (MB // 2,)   # the only valid copy now lives in zcmem
        assert rtm.memory_usage()["zcmem"][0] == MB // 2
        other = rt.Region((MB // 2 + 1,), np.uint8, name="other")
        with pytest.raises(rt.OutOfMemoryError, match=r"zcmem.*region 'other' needs 524289 bytes.*-ll:zsize"):
            rtm.launch(touch, other)
        assert (rtm.read(half) == 1).all()


def test_evicts_instances_whose_data_is_valid_elsewhere(executor):
    """An instance nobody needs and whose data is valid in its home array makes room for a new one."""
    with rt.Runtime(rt.Machine(cpus=1, zsize=1), executor=executor, mapper=ZeroCopy()) as rtm:
        a = rt.Region((MB // 2 + 16,), np.uint8, name="a")
        b = rt.Region((MB // 2 + 16,), np.uint8, name="b")
        rtm.fill(a, 1)
        rtm.fill(b, 2)
        assert rtm.launch(touch, a).get() == a.shape
        assert rtm.launch(touch, b).get() == b.shape   # needs a's zero-copy instance evicted
        assert rtm.memory_usage()["zcmem"][0] == b.nbytes
        assert (rtm.read(a) == 1).all() and (rtm.read(b) == 2).all()


def test_private_reduction_buffers_are_charged_and_released():
    @rt.task(privileges=[rt.Reduce("+")])
    def add(g, v):
        g += v

    with rt.Runtime(rt.Machine(cpus=2), executor="threaded") as rtm:
        G = rt.Region((1000,), np.float64, name="g")
        rtm.fill(G, 0.0)
        rtm.index_launch(add, 4, G, 1.0)
        np.testing.assert_array_equal(rtm.read(G), 4.0)
        assert rtm.memory_usage()["sysmem"][0] == G.nbytes  # the three private buffers were freed


def test_oom_in_the_middle_of_a_launch_never_leaves_a_hang(executor):
    @rt.task(privileges=[rt.RO, rt.RW])
    def both(x, y):
        y += x.sum()

    with rt.Runtime(rt.Machine(cpus=2, zsize=1), executor=executor, mapper=ZeroCopy()) as rtm:
        small = rt.Region((10,), np.float64, name="small")
        big = rt.Region((MB,), np.uint8, name="big")
        rtm.fill(small, 1.0)
        with pytest.raises(rt.OutOfMemoryError, match="region 'big'"):
            rtm.launch(both, small, big)    # small was bound before big failed to fit
        assert rtm.launch(touch, small).get() == (10,)   # readers of small are not held up
        with pytest.raises(rt.TaskError, match="was not run because task 'both'.*OutOfMemoryError"):
            rtm.read(big)                   # big's failed writer: its dependents report the failure
        rtm.fence()


def test_an_instance_used_at_every_step_keeps_only_its_pending_pins(executor):
    """The zero-copy instance of a region bumped a thousand times holds its unfinished users only (before,
    each launch added its node for good: a long fit kept every step's nodes alive)."""
    with rt.Runtime(rt.Machine(cpus=1, zsize=1), executor=executor, mapper=ZeroCopy()) as rtm:
        a = rt.Region((16,), np.uint8, name="a")
        for _ in range(1000):
            rtm.launch(bump, a).get()  # each finished before the next: at most one user is pending
        inst = next(i for i in a._fs0.instances if i.memory.name == "zcmem")
        assert len(inst.pins) <= 65  # the pending one plus 64 at most, never the 1000
        assert (rtm.read(a) == 1000 % 256).all()
