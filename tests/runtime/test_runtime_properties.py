"""Property: random task programs over random, overlapping partitions give exactly the sequential result.

Each program has 1-3 integer regions, 1-2 partitions per region (equal blocks, replicated, or random
possibly-overlapping boxes) and a list of single and index launches with every privilege kind. The
reference runs the same operations one at a time on NumPy arrays, in issue order (index launches point
by point). Integer arithmetic keeps reductions exact in any fold order. Programs also run under a
trace (recorded once, replayed twice) and with a mapper that scatters arguments over SYSTEM and
ZERO_COPY memory, which exercises instances, copies and invalidation.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtime as rt

SHAPES = [(6, 4), (8,), (5, 3)]
MOD = 1009


@rt.task(privileges=[rt.RW])
def affine(x, a, b):
    x[...] = (x * a + b) % MOD


@rt.task(privileges=[rt.WD])
def setv(x, c):
    x[...] = c


@rt.task(privileges=[rt.RO, rt.RW])
def copysum(s, x, a):
    x[...] = (x + int(s.sum()) * a) % MOD


@rt.task(privileges=[rt.Reduce("+")])
def red_add(g, c):
    g += c


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def red_add_from(s, g, c):
    g += (int(s.sum()) + c) % 13


@rt.task(privileges=[rt.Reduce("max")])
def red_max(g, c):
    np.maximum(g, c, out=g)


@rt.task(privileges=[rt.RO])
def readsum(x):
    return int(x.sum())


ONE = {"affine": affine, "set": setv, "red_add": red_add, "red_max": red_max, "read": readsum}
TWO = {"copysum": copysum, "red_add_from": red_add_from}


def _boxes(draw, shape):
    n = draw(st.integers(2, 3))
    out = []
    for _ in range(n):
        sl = []
        for ext in shape:
            lo = draw(st.integers(0, ext - 1))
            hi = draw(st.integers(lo + 1, ext))
            sl.append((lo, hi))
        out.append(tuple(sl))
    return out


@st.composite
def programs(draw):
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(draw(st.integers(1, 3)))]
    parts = []
    for shape in shapes:
        ps = []
        for _ in range(draw(st.integers(1, 2))):
            kind = draw(st.sampled_from(["equal", "replicate", "boxes"]))
            if kind == "equal":
                ps.append(("equal", tuple(draw(st.integers(1, min(3, e))) for e in shape)))
            elif kind == "replicate":
                ps.append(("replicate", draw(st.integers(2, 3))))
            else:
                ps.append(("boxes", _boxes(draw, shape)))
        parts.append(ps)
    ops = []
    for _ in range(draw(st.integers(2, 12))):
        name = draw(st.sampled_from(sorted(ONE) + sorted(TWO)))
        r = draw(st.integers(0, len(shapes) - 1))
        p = draw(st.integers(0, len(parts[r]) - 1))
        where = draw(st.sampled_from(["whole", "sub", "index"]))
        color = draw(st.integers(0, 8))
        src = draw(st.integers(0, len(shapes) - 1))
        a, b = draw(st.integers(1, 5)), draw(st.integers(0, 50))
        ops.append((name, r, p, where, color, src, a, b))
    return shapes, parts, ops


class Built:
    """The program's regions and partitions as runtime objects."""

    def __init__(self, shapes, parts):
        self.regions = [rt.Region(s, np.int64, name=f"r{i}") for i, s in enumerate(shapes)]
        self.parts = []
        for R, ps in zip(self.regions, parts, strict=True):
            built = []
            for kind, arg in ps:
                if kind == "equal":
                    built.append(rt.Partition.equal(R, arg))
                elif kind == "replicate":
                    built.append(rt.Partition.replicate(R, arg))
                else:
                    built.append(rt.Partition.by_boxes(R, [tuple(slice(lo, hi) for lo, hi in b) for b in arg]))
            self.parts.append(built)


def _initial(shapes):
    return [np.arange(int(np.prod(s)), dtype=np.int64).reshape(s) % 17 for s in shapes]


def run_reference(shapes, parts, ops, repeats=1):
    built = Built(shapes, parts)
    data = _initial(shapes)
    values = []

    def view(region_index, sub):
        return data[region_index][sub._slices]

    for _ in range(repeats):
        for name, r, p, where, color, src, a, b in ops:
            P = built.parts[r][p]
            if where == "whole":
                subs = [built.regions[r]]
            elif where == "sub":
                subs = [P.subregions[color % len(P)]]
            else:
                subs = list(P.subregions)
            for sub in subs:
                x = view(r, sub)
                if name == "affine":
                    x[...] = (x * a + b) % MOD
                elif name == "set":
                    x[...] = b
                elif name == "red_add":
                    x += b
                elif name == "red_max":
                    np.maximum(x, b, out=x)
                elif name == "read":
                    values.append(int(x.sum()))
                elif name == "copysum":
                    s = int(data[src].sum())
                    x[...] = (x + s * a) % MOD
                elif name == "red_add_from":
                    x += (int(data[src].sum()) + b) % 13
    return data, values


def run_runtime(rtm, shapes, parts, ops, repeats=1, traced=False):
    built = Built(shapes, parts)
    for R, init in zip(built.regions, _initial(shapes), strict=True):
        rtm.write(R, init)
    futures = []
    for _ in range(repeats):
        scope = rtm.trace("program") if traced else None
        if scope is not None:
            scope.__enter__()
        for name, r, p, where, color, src, a, b in ops:
            P = built.parts[r][p]
            R = built.regions[r]
            target = R if where == "whole" else (P.subregions[color % len(P)] if where == "sub" else P)
            if name in ONE:
                t = ONE[name]
                extra = () if name == "read" else ((a, b) if name == "affine" else (b,))
                lead = (target,)
            else:
                t = TWO[name]
                extra = (a,) if name == "copysum" else (b,)
                lead = (built.regions[src], target)
            if where == "index":
                fm = rtm.index_launch(t, P.color_shape, *lead, *extra)
                if name == "read":
                    futures.extend(fm)
            else:
                f = rtm.launch(t, *lead, *extra)
                if name == "read":
                    futures.append(f)
        if scope is not None:
            scope.__exit__(None, None, None)
    values = [f.get() for f in futures]
    return [rtm.read(R) for R in built.regions], values


class ScatterMapper(rt.DefaultMapper):
    """Places each argument in SYSTEM or ZERO_COPY memory by a hash of the decision."""

    def select_memory(self, task_info, point, processor, arg_index, region, privilege):
        mems = task_info.machine.addressable(processor)
        return mems[zlib.crc32(repr((task_info.name, point, arg_index, region.name)).encode()) % len(mems)]


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)
EXECUTORS = pytest.mark.parametrize("executor", ["threaded", "sequential"])


def _check(executor, program, traced=False, mapper=None, repeats=1):
    shapes, parts, ops = program
    ref_data, ref_values = run_reference(shapes, parts, ops, repeats)
    with rt.Runtime(rt.Machine(cpus=2, utils=1), executor=executor, mapper=mapper) as rtm:
        data, values = run_runtime(rtm, shapes, parts, ops, repeats, traced)
        stats = rtm.stats
    for got, want in zip(data, ref_data, strict=True):
        np.testing.assert_array_equal(got, want)
    assert values == ref_values
    return stats


@EXECUTORS
@SETTINGS
@given(program=programs())
def test_random_programs_match_sequential(executor, program):
    _check(executor, program)


@EXECUTORS
@SETTINGS
@given(program=programs())
def test_random_programs_traced_match_sequential(executor, program):
    stats = _check(executor, program, traced=True, repeats=3)
    assert stats.replayed_traces == 2 and stats.trace_mismatches == 0


@EXECUTORS
@SETTINGS
@given(program=programs())
def test_random_programs_across_memories_match_sequential(executor, program):
    _check(executor, program, mapper=ScatterMapper(), traced=True, repeats=2)
