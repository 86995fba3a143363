"""Tracing: the first run records, later runs replay without analysis, a changed sequence is detected."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import runtime as rt


@rt.task(privileges=[rt.RO, rt.Reduce("+")])
def grad(x, g, scale):
    g += x.sum(axis=0) * scale


@rt.task(privileges=[rt.RW, rt.RO])
def sgd(w, g, lr, step):
    w -= lr * g
    return step


@rt.task(privileges=[rt.RO])
def norm(w):
    return float(np.abs(w).sum())


@rt.task(privileges=[rt.WD])
def load(x, batch):
    x[...] = batch


@rt.task
def double(v):
    return 2 * v


def _step(rtm, X, P, W, G, batch, lr, step):
    rtm.launch(load, X, batch)
    rtm.fill(G, 0.0)
    rtm.index_launch(grad, P.color_shape, P, G, 1.0)
    s = rtm.launch(sgd, W, G, lr, step)
    return s, rtm.launch(norm, W)


def _regions(degree=2):
    X = rt.Region((8, 3), np.float64, name="x")
    W = rt.Region((3,), np.float64, name="w")
    G = rt.Region((3,), np.float64, name="g")
    return X, rt.Partition.equal(X, (degree, 1)), W, G


def _reference(batches, lrs):
    w = np.zeros(3)
    norms = []
    for batch, lr in zip(batches, lrs, strict=True):
        w = w - lr * batch.sum(axis=0)
        norms.append(float(np.abs(w).sum()))
    return w, norms


@pytest.mark.parametrize("degree", [1, 4])
def test_replay_skips_analysis_and_uses_new_arguments(rtm, degree):
    X, P, W, G = _regions(degree)
    rtm.fill(W, 0.0)
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 5, size=(8, 3)).astype(float) for _ in range(5)]
    lrs = [0.5, 0.25, 0.125, 1.0, 2.0]
    norms, steps = [], []
    analyzed = []
    for i, (batch, lr) in enumerate(zip(batches, lrs, strict=True)):
        before = rtm.stats.snapshot()
        with rtm.trace("train_step"):
            s, n = _step(rtm, X, P, W, G, batch, lr, i)
        steps.append(s.get())
        norms.append(n.get())
        analyzed.append(rtm.stats.analyzed_points - before.analyzed_points)
    w, ref_norms = _reference(batches, lrs)
    np.testing.assert_allclose(rtm.read(W), w)
    assert norms == pytest.approx(ref_norms) and steps == [0, 1, 2, 3, 4]
    points = 4 + degree
    assert analyzed == [points, 0, 0, 0, 0]           # only the recording ran the analysis
    assert rtm.stats.replayed_points == 4 * points
    assert rtm.stats.recorded_traces == 1 and rtm.stats.replayed_traces == 4


def test_futures_inside_and_outside_a_trace(rtm):
    outside = rtm.launch(double, 5)
    results = []
    for k in range(3):
        with rtm.trace("futures"):
            a = rtm.launch(double, outside)
            b = rtm.launch(double, a)
            fm = rtm.index_launch(double, 2, b)
            fm2 = rtm.index_launch(double, 2, fm)
        results.append((a.get(), b.get(), fm2.get()))
        outside = rtm.launch(double, k)
    assert results[0] == (20, 40, [160, 160])
    assert results[1] == (0, 0, [0, 0])
    assert results[2] == (4, 8, [32, 32])
    assert rtm.stats.replayed_traces == 2


def test_changed_sequence_is_detected_and_not_replayed(rtm, caplog):
    X, P, W, G = _regions()
    rtm.fill(W, 0.0)
    batch = np.ones((8, 3))
    with rtm.trace("step"):
        _step(rtm, X, P, W, G, batch, 1.0, 0)
    with caplog.at_level(logging.WARNING, logger="runtime"), rtm.trace("step"):
        rtm.launch(load, X, batch)
        rtm.fill(G, 0.0)
        rtm.launch(grad, X, G, 3.0)          # single launch where an index launch was recorded
        rtm.launch(sgd, W, G, 1.0, 1)
        rtm.launch(norm, W)
    assert rtm.stats.trace_mismatches == 1
    assert "differs from its recording at launch 2" in caplog.text
    np.testing.assert_allclose(rtm.read(W), -(1 + 3) * batch.sum(axis=0))
    # the next run records afresh, the one after replays the new sequence
    for _ in range(2):
        with rtm.trace("step"):
            _step(rtm, X, P, W, G, batch, 1.0, 2)
    assert rtm.stats.recorded_traces == 2 and rtm.stats.replayed_traces == 1
    np.testing.assert_allclose(rtm.read(W), -6 * batch.sum(axis=0))


@pytest.mark.parametrize("change", ["shorter", "longer", "other_region", "value_for_future"])
def test_every_kind_of_change_is_a_mismatch(rtm, change):
    A = rt.Region((4,), np.float64, name="a")
    B = rt.Region((4,), np.float64, name="b")
    rtm.fill(A, 0.0)
    rtm.fill(B, 0.0)

    @rt.task(privileges=[rt.RW])
    def inc(x, v):
        x += v

    def body(variant):
        rtm.launch(inc, A, 1.0)
        if variant == "shorter":
            return
        f = rtm.launch(double, 1)
        rtm.launch(inc, B if variant == "other_region" else A, 2.0)
        rtm.launch(double, 3 if variant == "value_for_future" else f)
        if variant == "longer":
            rtm.launch(inc, A, 4.0)

    with rtm.trace("t"):
        body("recorded")
    with rtm.trace("t"):
        body(change)
    assert rtm.stats.trace_mismatches == 1
    expect_a = {"shorter": 4.0, "longer": 10.0, "other_region": 4.0, "value_for_future": 6.0}[change]
    assert (rtm.read(A) == expect_a).all()
    assert (rtm.read(B) == (2.0 if change == "other_region" else 0.0)).all()


def test_strict_trace_raises_on_mismatch(rtm):
    with rtm.trace("s", strict=True):
        rtm.launch(double, 1)
    with pytest.raises(rt.TraceError, match="differs from its recording at launch 0: task 'norm'"):
        with rtm.trace("s", strict=True):
            rtm.launch(norm, rt.Region((2,)))
    rtm.fence()


def test_traces_do_not_nest(rtm):
    with rtm.trace("outer"):
        with pytest.raises(rt.TraceError, match="do not nest"):
            with rtm.trace("inner"):
                pass


def test_work_after_a_trace_is_ordered_after_it(rtm):
    R = rt.Region((3,), np.float64)
    rtm.fill(R, 0.0)

    @rt.task(privileges=[rt.RW])
    def inc(x):
        x += 1

    for _ in range(3):
        with rtm.trace("inc", wait=False):
            for _ in range(5):
                rtm.launch(inc, R)
        rtm.launch(inc, R)
    assert (rtm.read(R) == 18).all()


def test_trace_records_again_when_a_field_moves_to_another_memory(executor):
    @rt.task(privileges=[rt.RW])
    def inc(x):
        x += 1

    @rt.task(privileges=[rt.RO])
    def peek(x):
        return float(x.sum())

    class PeekInZeroCopy(rt.DefaultMapper):
        def select_memory(self, task_info, point, processor, arg_index, region, privilege):
            if task_info.name == "peek":
                return task_info.machine.memories(rt.MemKind.ZERO_COPY)[0]
            return super().select_memory(task_info, point, processor, arg_index, region, privilege)

    R = rt.Region((4,), np.float64, name="r")
    with rt.Runtime(rt.Machine(cpus=2), executor=executor, mapper=PeekInZeroCopy()) as rtm:
        rtm.fill(R, 0.0)
        for _ in range(2):
            with rtm.trace("inc"):
                rtm.launch(inc, R)
        assert rtm.launch(peek, R).get() == 8.0   # R now also lives in zero-copy memory
        for _ in range(2):
            with rtm.trace("inc"):
                rtm.launch(inc, R)
        assert rtm.launch(peek, R).get() == 16.0
        assert rtm.stats.recorded_traces == 2 and rtm.stats.replayed_traces == 2
