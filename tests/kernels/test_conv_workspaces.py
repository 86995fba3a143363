"""Per-thread conv scratch arrays: reused across calls, let go after release_workspaces()."""

from __future__ import annotations

import numpy as np

from kernels import conv2d


def test_workspaces_are_reused_until_released():
    a = conv2d._workspace("probe", (1000,), np.float32)
    b = conv2d._workspace("probe", (10,), np.float32)
    assert np.shares_memory(a, b)  # the large one serves the small request
    conv2d.release_workspaces()
    c = conv2d._workspace("probe", (10,), np.float32)
    assert not np.shares_memory(a, c) and c.base.size == 10  # a fresh array of the size asked for
