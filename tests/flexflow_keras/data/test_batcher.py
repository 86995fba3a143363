"""Batcher: epoch order (shuffle, 'batch', none), reproducibility, the gather kernel and buffers."""

import numpy as np
import pytest

from flexflow_keras.data import ArraySource, Batcher, gather_rows


def _src(n=10):
    x = np.arange(n * 3, dtype=np.uint8).reshape(n, 3)
    return ArraySource([x, np.arange(n, dtype=np.int32)], np.arange(n, dtype=np.float64), sample_weight=np.arange(n))


def test_order_modes_and_reproducibility():
    b = Batcher(_src(), 4, shuffle=False)
    np.testing.assert_array_equal(b.order(0), np.arange(10))
    s = Batcher(_src(), 4, shuffle=True, seed=7)
    o0, o1 = s.order(0), s.order(1)
    assert sorted(o0) == list(range(10)) and not np.array_equal(o0, o1)
    np.testing.assert_array_equal(Batcher(_src(), 4, seed=7).order(1), o1)
    c = Batcher(_src(), 4, shuffle="batch", seed=1).order(0)
    chunks = [tuple(c[i:i + 4]) for i in range(0, 10, 4)]
    assert sorted(chunks) == sorted([(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)])
    np.random.seed(5)
    a = Batcher(_src(), 4).order(0)
    np.random.seed(5)
    np.testing.assert_array_equal(Batcher(_src(), 4).order(0), a)


def test_batches_fill_contiguous_buffers_with_casts():
    b = Batcher(_src(), 4, shuffle=True, seed=3, x_dtypes=["float32", None])
    order = b.order(0)
    seen = []
    for batch in b.batches(0):
        rows = order[batch.index * 4:(batch.index + 1) * 4]
        np.testing.assert_array_equal(batch.rows, rows)
        assert batch.x[0].dtype == np.float32 and batch.x[0].flags.c_contiguous
        assert batch.x[1].dtype == np.int32
        np.testing.assert_array_equal(batch.x[0], np.arange(30).reshape(10, 3)[rows].astype(np.float32))
        np.testing.assert_array_equal(batch.y[0], rows.astype(np.float32))
        np.testing.assert_array_equal(batch.sample_weight, rows)
        seen.append(batch.size)
    assert seen == [4, 4, 2] and b.num_batches == 3
    assert Batcher(_src(), 4, drop_remainder=True).num_batches == 2


def test_gather_rows_checks():
    src = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = np.empty((2, 3), np.float32)
    np.testing.assert_array_equal(gather_rows(src, np.array([3, 0]), out), src[[3, 0]])
    with pytest.raises(IndexError, match="row index 4 at position 1"):
        gather_rows(src, np.array([0, 4]), out)
    with pytest.raises(ValueError, match="does not fit"):
        gather_rows(src, np.array([0]), out)
    with pytest.raises(ValueError, match="batch_size"):
        Batcher(_src(), 0)
    with pytest.raises(ValueError, match="shuffle"):
        Batcher(_src(), 2, shuffle="yes")
