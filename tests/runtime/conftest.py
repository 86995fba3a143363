"""Shared fixtures for the runtime tests: every conformance test runs on both executors."""

from __future__ import annotations

import pytest

import runtime as rt

EXECUTORS = ("threaded", "sequential")


@pytest.fixture(params=EXECUTORS)
def executor(request) -> str:
    return request.param


@pytest.fixture
def rtm(executor):
    """A runtime on 2 CPUs + 1 UTIL processor, shut down (workers joined) after the test."""
    r = rt.Runtime(rt.Machine(cpus=2, utils=1), executor=executor)
    yield r
    r.shutdown()
