"""CpuLoad: the cores other processes leave free, from host and own CPU time (counters faked)."""

from __future__ import annotations

import pytest

from runtime import cpuload


class FakeClock:
    def __init__(self):
        self.wall = 0.0
        self.host_busy = 0.0
        self.own = 0.0

    def advance(self, seconds, others, ours=0.0):
        """`seconds` pass with `others` cores busy in other processes and `ours` in this one."""
        self.wall += seconds
        self.host_busy += (others + ours) * seconds
        self.own += ours * seconds


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(cpuload, "_host_times", lambda: (c.host_busy, 0.0))
    monkeypatch.setattr(cpuload, "_own_time", lambda: c.own)
    monkeypatch.setattr(cpuload.time, "monotonic", lambda: c.wall)
    monkeypatch.setattr(cpuload.time, "sleep", lambda s: c.advance(s, c.others_now))
    return c


@pytest.mark.parametrize("others,free", [(0.0, 2), (0.3, 2), (0.7, 1), (1.0, 1), (1.9, 1), (3.0, 1)])
def test_first_reading_counts_cores_taken_by_other_processes(clock, others, free):
    clock.others_now = others
    assert cpuload.CpuLoad(2).free_cores() == free


def test_own_time_is_not_counted_and_later_readings_cover_the_whole_interval(clock):
    clock.others_now = 0.0
    load = cpuload.CpuLoad(4)
    assert load.free_cores() == 4
    clock.advance(10.0, others=0.0, ours=4.0)  # an epoch of our own training on every core
    assert load.free_cores() == 4
    clock.advance(10.0, others=2.0, ours=2.0)  # two cores taken by someone else
    assert load.free_cores() == 2
    assert load.others == pytest.approx(2.0)
    clock.advance(0.1, others=0.0)  # too short an interval: the previous figure stands
    assert load.free_cores() == 2
    clock.advance(10.0, others=0.0, ours=4.0)
    assert load.free_cores() == 4


def test_without_proc_stat_every_core_is_free(monkeypatch):
    monkeypatch.setattr(cpuload, "_host_times", lambda: None)
    assert cpuload.CpuLoad(3).free_cores() == 3
