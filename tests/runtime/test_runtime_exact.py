"""Exact pieces: a region created with `exact_pieces=True` gives a strided piece an instance of its own in
system memory, so tasks see contiguous arrays, and data stays coherent with whole-region accesses."""

import numpy as np
import pytest

from runtime import RO, RW, WD, Machine, Partition, Region, Runtime, task


@task(privileges=[RW])
def bump(a):
    if not a.flags.c_contiguous:
        raise AssertionError(f"strided view {a.strides}")
    a += 1


@task(privileges=[RO, WD])
def copy(src, dst):
    dst[...] = src


@pytest.mark.parametrize("executor", ["threaded", "sequential"])
def test_column_pieces_are_contiguous_and_coherent(executor):
    R = Region((4, 6), np.float32, name="w", exact_pieces=True)
    cols = Partition.equal(R, (1, 3))
    with Runtime(Machine(cpus=2), executor=executor) as rtm:
        rtm.write(R, np.arange(24, dtype=np.float32).reshape(4, 6))
        for _ in range(3):
            with rtm.trace("t"):
                rtm.index_launch(bump, (1, 3), cols)
        np.testing.assert_array_equal(rtm.read(R), np.arange(24).reshape(4, 6) + 3)
        rtm.index_launch(bump, (1,), R).get()  # a whole-region writer after the pieces
        rows = Partition.equal(R, (2, 1))  # row blocks are contiguous: no instance needed for them
        S = Region((4, 6), np.float32, name="s")
        rtm.index_launch(copy, (2,), rows, Partition.equal(S, (2, 1))).get()
        np.testing.assert_array_equal(rtm.read(S), np.arange(24).reshape(4, 6) + 4)
        stats = rtm.stats.snapshot()
        assert stats.instances == 3  # one per column piece, made once


def test_without_the_request_pieces_are_views_of_the_home_array():
    R = Region((4, 6), np.float32, name="w")
    cols = Partition.equal(R, (1, 2))
    seen = []

    @task(privileges=[RO])
    def look(a):
        seen.append(a.flags.c_contiguous)

    with Runtime(Machine(cpus=1)) as rtm:
        rtm.fill(R, 1.0)
        rtm.index_launch(look, (1, 2), cols).wait()
        assert seen == [False, False] and rtm.stats.snapshot().instances == 0


def test_replayed_reductions_reuse_their_private_buffers():
    @task(privileges=[RO, __import__("runtime").Reduce("+")])
    def add(x, g):
        g += x.sum()

    X = Region((4, 6), np.float32, name="x")
    G = Region((4, 6), np.float32, name="g", exact_pieces=True)
    cols = Partition.equal(G, (1, 2))
    with Runtime(Machine(cpus=2)) as rtm:
        rtm.fill(X, 1.0)
        rtm.fill(G, 0.0)
        used = []
        for _ in range(5):
            with rtm.trace("t"):
                for _ in range(3):  # three points per piece: private buffers on the second processor
                    rtm.index_launch(add, (3,), X, cols[0, 1])
            used.append(rtm.memory_usage()["sysmem"][0])
        assert len(set(used[2:])) == 1  # steady state: the same kept buffers, nothing new
        kept = [b for bufs in rtm._physical._spare.values() for b in bufs]
        assert kept and all(b.shape == (4, 3) for b in kept)  # released buffers wait for the next replay
        np.testing.assert_allclose(rtm.read(G)[:, 3:], 5 * 9 * 24.0)
        np.testing.assert_allclose(rtm.read(G)[:, :3], 0.0)
        # a forgotten trace (a strategy no longer used) gives its kept buffers back to the memory
        before = rtm.memory_usage()["sysmem"][0]
        assert rtm.forget_trace("t")
        assert not rtm._physical._spare
        assert rtm.memory_usage()["sysmem"][0] == before - sum(b.nbytes for b in kept)


def test_instances_of_a_dropped_region_give_their_memory_back():
    import gc

    @task(privileges=[RW])
    def bump(g):
        g += 1.0

    with Runtime(Machine(cpus=2)) as rtm:
        base = rtm.memory_usage()["sysmem"][0]
        G = Region((64, 64), np.float32, name="g", exact_pieces=True)
        rtm.fill(G, 0.0)
        rtm.index_launch(bump, (1, 2), Partition.equal(G, (1, 2))).wait()  # strided pieces: own instances
        assert rtm.stats.snapshot().instances >= 2 and rtm.memory_usage()["sysmem"][0] > base
        del G
        gc.collect()
        assert rtm.memory_usage()["sysmem"][0] == base  # the pool held them alive before
