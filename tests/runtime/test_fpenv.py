"""Denormals flushed to zero on the processors' threads (`runtime.fpenv`), and only there."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import fpenv

pytestmark = pytest.mark.skipif(not fpenv.supported(), reason="denormal control is x86-64 only")

TINY = np.float32(1e-39)  # a float32 denormal


@rt.task(privileges=[rt.RO])
def halve_first(x):
    """A denormal halved: 0 where denormals are flushed, 5e-40 where they are not."""
    return float(x[0] * np.float32(0.5)), fpenv.control_word()


def test_flush_and_restore_on_this_thread():
    before = fpenv.control_word()
    old = fpenv.flush_denormals()
    try:
        assert old == before
        assert fpenv.flushes(fpenv.control_word())
        assert np.float32(TINY * np.float32(0.5)) == 0.0
    finally:
        fpenv.restore(old)
    assert fpenv.control_word() == before
    assert np.float32(TINY * np.float32(0.5)) != 0.0


def test_tasks_run_with_denormals_flushed_and_the_caller_keeps_its_own(rtm):
    before = fpenv.control_word()
    r = rt.Region((4,), np.float32, name="tiny")
    rtm.write(r, np.full(4, TINY, np.float32))
    value, word = rtm.launch(halve_first, r).get()
    assert value == 0.0 and fpenv.flushes(word)
    assert fpenv.control_word() == before  # the sequential executor restores the issuing thread's word
    assert np.float32(TINY * np.float32(0.5)) != 0.0
