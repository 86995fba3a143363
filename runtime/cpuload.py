"""How many of this host's cores other processes leave free, from the kernel's CPU counters.

Multi-threaded BLAS (OpenBLAS's pthreads pool) synchronises its threads inside every GEMM; when another
process holds one of the cores a GEMM's threads were given, each call waits for the descheduled thread
and a step becomes 5-20 times slower instead of proportionally slower (measured on 2 cores: 64x784x512
sgemm 0.8 ms on one thread, 3-25 ms on two with one core busy). So the runtime sizes the threads of a
kernel to the cores that are actually free, not to the cores that exist.

`CpuLoad` keeps the last reading of /proc/stat (every core's busy and idle time) and of this process's
own CPU time; `free_cores()` compares them with the current ones: the busy time of the host minus this
process's own, over the interval, is what the other processes used. A core counts as taken when the
others keep more than `TAKEN` of one busy. The first reading samples a short interval (`FIRST_S`);
later ones cover the whole time since the previous reading (an epoch of training; at least
`MIN_SPAN_S`, else the previous figure stands), so a momentary burst does not move the figure. Where /proc/stat is missing (not Linux) every core counts as free.
"""

from __future__ import annotations

import logging
import math
import os
import resource
import time

log = logging.getLogger("runtime")
TAKEN = 0.6  # of one core kept busy by other processes: the core counts as taken
FIRST_S = 0.1  # the first reading's sampling interval
MIN_SPAN_S = 0.5  # later readings: an interval shorter than this keeps the previous figure


def _host_times() -> tuple[float, float] | None:
    """(busy, total) seconds of all cores since boot, or None where /proc/stat is not there."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:]]
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    # guest time is already counted in user time
    total = sum(ticks[:8]) if len(ticks) >= 8 else sum(ticks)
    return (total - idle) / hz, total / hz


def _own_time() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CpuLoad:
    """Free cores of this host, for `cores` cores (this process's share of the host)."""

    def __init__(self, cores: int):
        self.cores = max(1, int(cores))
        self._last: tuple[float, float, float] | None = None  # (host busy, wall, own) at the last reading
        self._first = True
        self.others = 0.0  # cores' worth of time the other processes used over the last interval

    def _read(self):
        host = _host_times()
        if host is None:
            return None
        return host[0], time.monotonic(), _own_time()

    def free_cores(self) -> int:
        """The cores not taken by other processes over the time since the last call (the first call
        samples `FIRST_S` seconds); at least 1."""
        if self._last is None:
            self._last = self._read()
            if self._last is None:
                return self.cores
            time.sleep(FIRST_S)
        now = self._read()
        if now is None or self._last is None:
            return self.cores
        busy0, wall0, own0 = self._last
        busy1, wall1, own1 = now
        span = wall1 - wall0
        if span < (FIRST_S if self._first else MIN_SPAN_S):
            return self._free()
        self._last, self._first = now, False
        # counters tick at 1/HZ: on short intervals the figure is coarse, which TAKEN's margin absorbs
        self.others = max(0.0, ((busy1 - busy0) - (own1 - own0)) / span)
        return self._free()

    def _free(self) -> int:
        taken = math.floor(self.others + (1.0 - TAKEN))
        return max(1, self.cores - max(0, taken))
