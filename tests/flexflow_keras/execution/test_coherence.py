"""The table of which ranks hold the current values of which boxes (strategies spanning MPI ranks):
the messages `need` asks for follow the writes, come from a rank that holds the values, and are asked
once."""

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
