"""Regions, partitions, subregions and privileges: construction, colors, disjointness, errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runtime as rt
from runtime import geometry
from runtime.regions import contains, overlaps


def test_region_basics():
    R = rt.Region((64, 784), np.float32, name="x")
    assert R.shape == (64, 784) and R.dtype == np.float32 and R.name == "x"
    assert R.ndim == 2 and R.size == 64 * 784 and R.nbytes == 64 * 784 * 4
    assert "x" in repr(R)
    F = rt.Region.fields((3, 4), {"a": np.float32, "b": np.int64}, name="f")
    assert F.field_names == ("a", "b") and F.dtype is None and F.nbytes == 12 * 12


def test_region_rejects_bad_shape():
    with pytest.raises(ValueError, match="non-negative"):
        rt.Region((4, -1))
    with pytest.raises(TypeError, match="shape"):
        rt.Region("abc")
    with pytest.raises(ValueError, match="at least one field"):
        rt.Region.fields((3,), {})


def test_equal_partition_blocks_and_colors():
    R = rt.Region((10, 6))
    P = rt.Partition.equal(R, (4, 2))
    assert P.color_shape == (4, 2) and len(P) == 8 and P.disjoint
    assert P.colors[0] == (0, 0) and P.colors[-1] == (3, 1)
    # sizes differ by at most one, larger first, and the blocks tile the region
    rows = [P[i, 0].shape[0] for i in range(4)]
    assert rows == [3, 3, 2, 2]
    assert P[1, 1].box == ((3, 3), (6, 6))
    cover = np.zeros(R.shape, int)
    for s in P:
        cover[s._slices] += 1
    assert (cover == 1).all()
    assert P[2, 1] is P[(2, 1)]


def test_partition_index_pads_trailing_unit_colors():
    R = rt.Region((8, 5))
    P = rt.Partition.equal(R, (4, 1))
    assert P[2] is P[2, 0]
    with pytest.raises(IndexError, match="color shape"):
        P[4]
    Q = rt.Partition.equal(R, (2, 2))
    with pytest.raises(IndexError):
        Q[1]


def test_equal_partition_int_degree_splits_dim0():
    R = rt.Region((8, 3))
    assert rt.Partition.equal(R, 4).color_shape == (4, 1)
    with pytest.raises(ValueError, match="one positive degree per dim"):
        rt.Partition.equal(R, (2,))
    with pytest.raises(ValueError):
        rt.Partition.equal(R, (0, 1))


def test_replicate_is_aliased():
    R = rt.Region((4, 4))
    Q = rt.Partition.replicate(R, 3)
    assert not Q.disjoint and Q.color_shape == (3,)
    assert all(s.box == R.box and s._whole for s in Q)
    assert rt.Partition.replicate(R, 1).disjoint


def test_by_boxes_overlap_detected():
    R = rt.Region((10,))
    halo = rt.Partition.by_boxes(R, [slice(0, 6), slice(4, 10)])
    assert not halo.disjoint
    assert overlaps(halo[0], halo[1])
    tiles = rt.Partition.by_boxes(R, [slice(0, 5), slice(5, 10)])
    assert tiles.disjoint and not overlaps(tiles[0], tiles[1])
    grid = rt.Partition.by_boxes(rt.Region((4, 4)), {(0, 0): (slice(0, 2),), (1, 0): (slice(2, 4),)})
    assert grid.color_shape == (2, 1) and grid[1, 0].box == ((2, 0), (4, 4))


def test_nested_partition_in_root_coordinates():
    R = rt.Region((8, 8))
    P = rt.Partition.equal(R, (2, 1))
    Q = rt.Partition.equal(P[1], (2, 2))
    assert Q.root is R
    assert Q[1, 1].box == ((6, 4), (8, 8))
    assert contains(P[1], Q[0, 1]) and not overlaps(P[0], Q[0, 0])


def test_privileges_are_small_immutable_values():
    assert repr(rt.RO) == "RO" and repr(rt.RW) == "RW" and repr(rt.WD) == "WD"
    assert repr(rt.Reduce("+")) == "Reduce('+')"
    assert repr(rt.RW("a", "b")) == "RW('a', 'b')"
    assert repr(rt.Reduce("max", "g")) == "Reduce('max', 'g')"
    assert rt.Reduce("min") == rt.Reduce("min") and hash(rt.RO) == hash(rt.Privilege("RO"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        rt.RO.mode = "RW"
    with pytest.raises(ValueError, match="Reduce expects an operator"):
        rt.Reduce("-")
    assert not rt.RO.writes and rt.WD.writes and not rt.WD.reads and rt.RW.reads


def test_task_declaration_errors():
    with pytest.raises(TypeError, match="Reduce\\('\\+'\\), not Reduce"):
        rt.task(privileges=[rt.Reduce])(lambda g: None)
    with pytest.raises(TypeError, match="privilege 0"):
        rt.task(privileges=["RO"])(lambda x: None)

    @rt.task(privileges=[rt.RO])
    def direct(x):
        return x.sum()
    assert direct(np.ones(3)) == 3.0  # calling a task runs its CPU body
    assert "direct" in repr(direct)


@st.composite
def _box(draw, shape=(5, 4)):
    lo = tuple(draw(st.integers(0, e)) for e in shape)
    hi = tuple(draw(st.integers(low, e)) for low, e in zip(lo, shape, strict=True))
    return (lo, hi)


def _mask(box, shape=(5, 4)):
    m = np.zeros(shape, bool)
    m[geometry.box_slices(box)] = True
    return m


@settings(max_examples=200, derandomize=True)
@given(a=_box(), b=_box())
def test_box_algebra_matches_masks(a, b):
    ma, mb = _mask(a), _mask(b)
    assert geometry.box_overlaps(a, b) == bool((ma & mb).any())
    assert geometry.box_contains(a, b) == bool((mb & ~ma).sum() == 0)
    inter = geometry.box_intersect(a, b)
    assert (_mask(inter) if inter else np.zeros_like(ma)).tolist() == (ma & mb).tolist()
    pieces = geometry.box_subtract(a, b)
    total = np.zeros(ma.shape, int)
    for p in pieces:
        total += _mask(p)
    assert total.max(initial=0) <= 1                      # disjoint
    assert (total.astype(bool) == (ma & ~mb)).all()       # exactly a minus b
