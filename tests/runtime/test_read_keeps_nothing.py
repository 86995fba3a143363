"""rtm.read hands its host copy to the caller and keeps no reference to it (the read's task record stays
the region's last reader until the next write)."""

from __future__ import annotations

import gc
import weakref

import numpy as np

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
