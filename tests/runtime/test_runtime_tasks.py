"""Launches, futures, index launches, data access and reductions, on both executors."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


@rt.task(privileges=[rt.RO, rt.WD])
def scale(x, y, factor):
    y[...] = x * factor


@rt.task(privileges=[rt.RO])
def total(x):
    return float(x.sum())


@rt.task(privileges=[rt.RW])
def add_one(x):
    x += 1


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def colsum(x, g):
    g += x.sum(axis=0)


@rt.task(privileges=[rt.RO, rt.Reduce("max")])
def colmax(x, g):
    np.maximum(g, x.max(axis=0), out=g)


@rt.task(privileges=[rt.RO, rt.Reduce("min")])
def colmin(x, g):
    np.minimum(g, x.min(axis=0), out=g)


@rt.task(privileges=[rt.RO, rt.Reduce("*")])
def colprod(x, g):
    g *= x.prod(axis=0)


@rt.task
def plus(a, b):
    return a + b


def test_single_launch_future(rtm):
    R = rt.Region((4, 3), np.float64, name="x")
    S = rt.Region((4, 3), np.float64, name="y")
    rtm.write(R, np.arange(12.0).reshape(4, 3))
    rtm.launch(scale, R, S, 2.0)
    f = rtm.launch(total, S)
    assert f.get() == 2 * 66.0 and f.done()
    np.testing.assert_array_equal(rtm.read(S), 2 * np.arange(12.0).reshape(4, 3))
    assert "total" in repr(f)


def test_index_launch_projects_partitions(rtm):
    R = rt.Region((8, 3), np.float32, name="x")
    S = rt.Region((8, 3), np.float32, name="y")
    P, Q = rt.Partition.equal(R, (4, 1)), rt.Partition.equal(S, (4, 1))
    rtm.write(R, np.arange(24, dtype=np.float32).reshape(8, 3))
    rtm.index_launch(scale, P.color_shape, P, Q, 3.0)
    fm = rtm.index_launch(total, 4, Q)  # a (4,) domain projects onto (4, 1) colors
    expect = [float(3 * np.arange(24).reshape(8, 3)[2 * i:2 * i + 2].sum()) for i in range(4)]
    assert fm.get() == expect
    assert fm[2].get() == expect[2] and fm[(3,)].get() == expect[3] and len(fm) == 4
    assert [c for c, _ in fm.items()] == [(0,), (1,), (2,), (3,)]


def test_region_argument_is_whole_for_every_point(rtm):
    R = rt.Region((6,), np.int64)
    rtm.write(R, np.arange(6))
    fm = rtm.index_launch(total, 3, R)
    assert fm.get() == [15.0, 15.0, 15.0]


def test_futures_as_arguments(rtm):
    a = rtm.launch(plus, 1, 2)
    b = rtm.launch(plus, a, 10)
    c = rtm.launch(plus, a, b)
    assert c.get() == 16
    fm = rtm.index_launch(plus, 3, rt.Future.from_value(5), 1)
    fm2 = rtm.index_launch(plus, 3, fm, 100)  # a FutureMap is projected point by point
    assert fm2.get() == [106, 106, 106]


@rt.task
def point_id(p):
    return p


def test_point_sentinel(rtm):
    assert rtm.index_launch(point_id, (2, 2), rt.POINT).get() == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_fill_read_write_subregions(rtm):
    R = rt.Region((6, 2), np.float64)
    P = rt.Partition.equal(R, (3, 1))
    rtm.fill(R, 7.0)
    rtm.write(P[1], np.ones((2, 2)))
    rtm.fill(P[2], -1.0)
    np.testing.assert_array_equal(rtm.read(P[1]), np.ones((2, 2)))
    np.testing.assert_array_equal(rtm.read(R)[:, 0], [7, 7, 1, 1, -1, -1])
    rtm.write(R, 5.0)  # broadcast
    assert (rtm.read(R) == 5).all()
    with pytest.raises(rt.LaunchError, match=r"expected an array of shape \(6, 2\).*received shape \(3,\)"):
        rtm.write(R, np.ones(3))


def test_chain_of_updates_is_ordered(rtm):
    R = rt.Region((5,), np.int64)
    rtm.fill(R, 0)
    for _ in range(50):
        rtm.launch(add_one, R)
    assert (rtm.read(R) == 50).all()


@pytest.mark.parametrize("degree", [1, 2, 4])
@pytest.mark.parametrize("body, op, init", [(colsum, np.add, 0.0), (colmax, np.maximum, -5.0),
                                            (colmin, np.minimum, 100.0), (colprod, np.multiply, 1.0)])
def test_reductions_fold_before_readers(rtm, degree, body, op, init):
    x = (np.arange(24.0).reshape(8, 3) % 7) + 1
    X = rt.Region(x.shape, np.float64, name="x")
    G = rt.Region((3,), np.float64, name="g")
    rtm.write(X, x)
    rtm.fill(G, init)
    P = rt.Partition.equal(X, (degree, 1))
    rtm.index_launch(body, degree, P, G)
    expect = op.reduce(np.concatenate([[np.full(3, init)], x]), axis=0)
    np.testing.assert_allclose(rtm.read(G), expect)
    # the first reducer's processor reduces in place; each other processor (2 CPUs here) shares one
    # buffer: D points cost min(D, 2) - 1 folds, a lone reducer none
    assert rtm.stats.folds == min(degree, 2) - 1


def test_reduction_epochs_across_launches(rtm):
    X = rt.Region((4, 2), np.int64)
    G = rt.Region((2,), np.int64)
    rtm.write(X, np.arange(8).reshape(4, 2))
    rtm.fill(G, 0)
    P = rt.Partition.equal(X, (2, 1))
    rtm.index_launch(colsum, 2, P, G)
    rtm.launch(colsum, X, G)               # joins the same epoch
    rtm.index_launch(colmax, 2, P, G)      # a different operator starts a new epoch after the first
    rtm.launch(colsum, X, G)
    s = np.arange(8).reshape(4, 2).sum(0)
    np.testing.assert_array_equal(rtm.read(G), np.maximum(2 * s, [6, 7]) + s)


def test_fielded_regions(rtm):
    F = rt.Region.fields((4,), {"a": np.float64, "b": np.int32}, name="f")

    @rt.task(privileges=[rt.RO("a"), rt.WD("b")])
    def copy_a_to_b(src, dst):
        dst.b[...] = src["a"] * 2

    rtm.write(F, {"a": np.arange(4.0), "b": np.zeros(4)})
    rtm.launch(copy_a_to_b, F, F)
    out = rtm.read(F)
    np.testing.assert_array_equal(out["b"], [0, 2, 4, 6])
    assert out["b"].dtype == np.int32
    np.testing.assert_array_equal(rtm.read(F, field="a"), np.arange(4.0))
    rtm.fill(F, 1, field="b")
    assert (rtm.read(F, "b") == 1).all()
    with pytest.raises(rt.LaunchError, match="field 'c'"):
        rtm.fill(F, 1, field="c")


def test_launch_argument_errors(rtm):
    R = rt.Region((4,))
    P = rt.Partition.equal(R, 2)
    with pytest.raises(rt.LaunchError, match="declares 2 region privilege"):
        rtm.launch(scale, R)
    with pytest.raises(rt.LaunchError, match="is a Partition; a single launch takes"):
        rtm.launch(total, P)
    with pytest.raises(rt.LaunchError, match="must be a Region"):
        rtm.launch(total, np.ones(3))
    with pytest.raises(rt.LaunchError, match="cannot be projected onto the launch domain"):
        rtm.index_launch(total, 3, P)
    with pytest.raises(rt.LaunchError, match="declares only 1 privilege"):
        rtm.launch(total, R, R)
    with pytest.raises(rt.LaunchError, match="expects a Task"):
        rtm.launch(lambda x: x, R)


def test_region_belongs_to_one_live_runtime(rtm):
    R = rt.Region((3,), np.float64)
    rtm.fill(R, 2.0)
    other = rt.Runtime(rt.Machine(cpus=1), executor="sequential")
    try:
        with pytest.raises(rt.LaunchError, match="in use by another Runtime"):
            other.read(R)
    finally:
        other.shutdown()
    rtm.shutdown()
    with rt.Runtime(rt.Machine(cpus=1), executor="sequential") as third:
        np.testing.assert_array_equal(third.read(R), [2.0, 2.0, 2.0])  # data carried over


def test_shutdown_runtime_refuses_work(rtm):
    rtm.shutdown()
    with pytest.raises(rt.RuntimeSystemError, match="shut down"):
        rtm.launch(plus, 1, 2)
