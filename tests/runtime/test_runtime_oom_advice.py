"""The advice of an out-of-memory error: every CPU processor shares the one system memory, so splitting the
data over more processors frees none of it, and the figure to pass is a lower bound (it used to read
'e.g. -ll:csize 2', and at 2 the next allocation failed, then 3, ...)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.instances import MemoryPool
from runtime.machine import MB


def test_system_memory_advice_is_a_lower_bound_and_no_split(executor):
    with rt.Runtime(rt.Machine(cpus=2, csize=1), executor=executor) as rtm:
        big = rt.Region((MB // 4 * 3,), np.float32, name="weights")  # 3 MB
        with pytest.raises(rt.OutOfMemoryError) as ei:
            rtm.fill(big, 0.0)
    msg = str(ei.value)
    assert "Raise -ll:csize well above 4 (this is only the first allocation that did not fit" in msg
    assert "or drop -ll:csize to use the machine's memory" in msg
    assert "split" not in msg and "e.g." not in msg


def test_a_gpu_framebuffer_may_still_be_split_over_more_gpus():
    fb = rt.Memory(rt.MemKind.GPU_FB, 0, 1, MB, "-ll:fsize", device=0)
    with pytest.raises(rt.OutOfMemoryError, match=r"Raise -ll:fsize \(to more than 3; .*split the data over more GPUs"):
        MemoryPool(fb).charge(2 * MB, "x", "its instance")
