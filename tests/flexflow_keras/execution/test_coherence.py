"""The table of which ranks hold the current values of which boxes (strategies spanning MPI ranks):
the messages `need` asks for follow the writes, come from a rank that holds the values, and are asked
once."""

import numpy as np

from flexflow_keras.execution.spanning import Coherence
from runtime import Region


def test_a_write_is_current_on_its_rank_only_until_another_rank_reads_it():
    r = Region((8, 4), "float32", name="x")
    c = Coherence(3)
    assert c.need(r, r.box, [0, 1, 2]) == []  # a new region: current everywhere
    top, bottom = ((0, 0), (4, 4)), ((4, 0), (8, 4))
    c.wrote(r, top, [1])
    c.wrote(r, bottom, [2])
    assert c.need(r, top, [1]) == []  # the writer holds it
    assert c.need(r, ((2, 0), (6, 4)), [0]) == [(1, 0, ((2, 0), (4, 4))), (2, 0, ((4, 0), (6, 4)))]
    assert c.need(r, ((2, 0), (6, 4)), [0]) == []  # arrived: not sent twice
    moves = c.need(r, r.box, [0, 1, 2])
    # rows 2..4 and 4..6 are on rank 0 now too, and the lowest rank holding a box sends it
    assert sorted(moves) == sorted([(1, 0, ((0, 0), (2, 4))), (1, 2, ((0, 0), (2, 4))), (0, 2, ((2, 0), (4, 4))),
                                    (0, 1, ((4, 0), (6, 4))), (2, 0, ((6, 0), (8, 4))), (2, 1, ((6, 0), (8, 4)))])
    assert c.need(r, r.box, [0, 1, 2]) == [] and r.uid not in c.table  # current everywhere again


def test_a_later_write_replaces_what_it_covers():
    r = Region((6,), "float32", name="y")
    c = Coherence(2)
    c.wrote(r, ((0,), (6,)), [0])
    c.wrote(r, ((2,), (4,)), [1])
    assert c.need(r, r.box, [1]) == [(0, 1, ((0,), (2,))), (0, 1, ((4,), (6,)))]
    c.wrote(r, r.box, [0, 1])
    assert r.uid not in c.table


class _Req:
    def Test(self):  # noqa: N802 - mpi4py's spelling
        return True


class _Control:
    def __init__(self):
        self.sums = 0

    def Iallreduce(self, sendbuf, recvbuf, op=None):  # noqa: N802
        self.sums += 1
        return _Req()


class _Rtm:
    """The runtime calls Spanning makes: launches (recorded) and host reads and writes of whole regions."""

    def __init__(self):
        self.values, self.launches, self.fills = {}, [], []

    def read(self, region):
        return self.values.setdefault(region.uid, np.zeros(region.shape, np.float32))

    def write(self, region, arr):
        self.values[region.uid] = np.array(arr)

    def fill(self, region, value):
        self.fills.append(region.uid)
        self.values[region.uid] = np.full(region.shape, value, np.float32)

    def launch(self, task, *args, tag=None):
        self.launches.append(tag)

    def index_launch(self, task, domain, *args, tag=None):
        self.launches.append(tag)


def test_a_region_two_arguments_reduce_into_is_summed_over_the_ranks_once():
    """Self-attention's mha(x, x) reduces both input gradients into one region: with the points on two
    nodes, that region is summed over the ranks once (twice would count every contribution twice)."""
    from types import SimpleNamespace

    from flexflow_keras.execution.spanning import RemoteProcessor, Spanning
    from runtime import Machine, ProcKind, Task
    from runtime.privileges import Reduce

    local = Machine(cpus=1).processors(ProcKind.CPU)
    control = _Control()
    world = SimpleNamespace(rank=1, size=2, control=control, MPI=SimpleNamespace(IN_PLACE=None, SUM="+"))
    rtm = _Rtm()
    sp = Spanning(rtm, world, local)
    grad = Region((4,), "float32", name="d:x")
    task = Task(lambda a, b, point: None, [Reduce("+"), Reduce("+")], name="mha.backward")
    lay = SimpleNamespace(placement=[RemoteProcessor(ProcKind.CPU, 0, 0, -1), local[0]], colors=[(0,), (1,)],
                          domain=(2,))
    sp.launch(task, lay, [grad, grad], ())
    assert control.sums == 1
    assert rtm.fills == [grad.uid]  # rank 1 starts the sum from zero, once
    assert rtm.launches == [local[0]]  # only this rank's point runs here
    assert grad.uid not in sp.coherence.table  # the sum is current on every rank
