"""Kernels on pieces of an op split along non-batch dims (CPU): dropout masks of tiles are slices of the
whole mask (`origin` / `noise_shape`), embedding tables split by rows sum to the whole lookup
(`row_offset` / `total_rows` / `accumulate`), and a Dense split along its input features sums its
partial products (`accumulate`)."""

import numpy as np
import pytest

from kernels import reference as ref
from kernels.activations import resolve_activation
from kernels.dropout import dropout_forward_cpu, dropout_key, dropout_mask_cpu
from kernels.embedding import embedding_backward_cpu, embedding_forward_cpu
from kernels.linear import linear_forward_cpu

rng = np.random.default_rng(11)
KEY = dropout_key(seed=3, step=7, op_seed=5)


def pieces(size: int, parts: int) -> list[tuple[int, int]]:
    bounds = [size * p // parts for p in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def mask_tiles(x_shape, mask_shape, axis, parts, batch_offset, batch=None):
    """(x slice, mask slice, origin) of each tile of a split along `axis` (and, optionally, of the batch
    rows `batch`); a broadcast noise dim (size 1) keeps size 1 and origin 0."""
    b0, b1 = batch or (0, x_shape[0])
    for a, b in pieces(x_shape[axis], parts):
        xs = [slice(b0, b1)] + [slice(None)] * (len(x_shape) - 1)
        ms = list(xs)
        xs[axis] = slice(a, b)
        origin = [batch_offset + b0] + [0] * (len(x_shape) - 1)
        if mask_shape[axis] != 1:
            ms[axis] = slice(a, b)
            origin[axis] = a
        yield tuple(xs), tuple(ms), tuple(origin)


# (x shape, mask shape)
DROPOUT = [((4, 6, 5), (4, 6, 5)), ((4, 6, 5), (4, 1, 5)), ((3, 4, 6, 2), (3, 4, 6, 2)),
           ((3, 4, 6, 2), (3, 4, 1, 2)), ((3, 4, 6, 2), (3, 1, 6, 1))]


@pytest.mark.parametrize("axis, parts", [(1, 2), (1, 3), (2, 2), (2, 3)])
@pytest.mark.parametrize("x_shape, mask_shape", DROPOUT)
def test_dropout_tile_masks_are_slices_of_the_whole(x_shape, mask_shape, axis, parts):
    x = rng.standard_normal(x_shape).astype(np.float32)
    whole_mask = np.empty(mask_shape, np.uint8)
    whole_y = np.empty_like(x)
    dropout_forward_cpu(x, whole_y, whole_mask, 0.4, KEY, 9)
    noise = mask_shape[1:]
    batches = [None, (1, x_shape[0])]  # whole batch, and a tile that also starts at a later sample
    for batch in batches:
        for xs, ms, origin in mask_tiles(x_shape, mask_shape, axis, parts, 9, batch):
            mask = np.full(whole_mask[ms].shape, 7, np.uint8)
            dropout_mask_cpu(mask, 0.4, KEY, origin=origin, noise_shape=noise)
            np.testing.assert_array_equal(mask, whole_mask[ms], err_msg=f"mask at {origin}")
            y = np.full(x[xs].shape, np.nan, np.float32)
            mask2 = np.empty_like(mask)
            dropout_forward_cpu(np.ascontiguousarray(x[xs]), y, mask2, 0.4, KEY, origin[0], origin=origin,
                                noise_shape=noise)
            np.testing.assert_array_equal(mask2, whole_mask[ms])
            np.testing.assert_array_equal(y, whole_y[xs], err_msg=f"forward at {origin}")


def test_dropout_tile_bits_follow_the_global_formula():
    mask = np.empty((2, 3, 4), np.uint8)
    dropout_mask_cpu(mask, 0.5, KEY, origin=(5, 2, 1), noise_shape=(6, 7))
    for r in range(2):
        for i in range(3):
            for j in range(4):
                e = (2 + i) * 7 + (1 + j)
                assert bool(mask[r, i, j]) == ref.dropout_keep(KEY, 5 + r, e, 0.5)


def test_dropout_origin_defaults():
    whole = np.empty((3, 4, 5), np.uint8)
    dropout_mask_cpu(whole, 0.3, KEY, 4)
    same = np.empty_like(whole)
    dropout_mask_cpu(same, 0.3, KEY, 4, noise_shape=(4, 5))  # origin defaults to (batch_offset, 0, 0)
    np.testing.assert_array_equal(same, whole)
    dropout_mask_cpu(same, 0.3, KEY, origin=(4, 0, 0))  # noise_shape defaults to the mask's
    np.testing.assert_array_equal(same, whole)


@pytest.mark.parametrize("kwargs, message", [
    ({"origin": (0, 0)}, "rank 3"),
    ({"origin": (0, 0, 0), "noise_shape": (4,)}, "rank 3"),
    ({"origin": (0, 2, 0), "noise_shape": (5, 5)}, "does not fit"),
    ({"origin": (0, -1, 0), "noise_shape": (5, 5)}, "does not fit"),
    ({"origin": (0, 1, 0)}, "does not fit"),  # a non-batch origin needs the whole noise shape
    ({"batch_offset": 3, "origin": (4, 0, 0)}, "disagrees"),
])
def test_dropout_tile_errors(kwargs, message):
    mask = np.empty((2, 4, 5), np.uint8)
    with pytest.raises(ValueError, match=message):
        dropout_mask_cpu(mask, 0.5, KEY, **kwargs)


@pytest.mark.parametrize("parts", [2, 3])
def test_embedding_row_pieces_sum_to_the_whole(parts):
    table = rng.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[0, 9, 3], [4, 4, 7], [6, 1, 2], [5, 8, 0]])
    whole = np.empty(ids.shape + (4,), np.float32)
    assert embedding_forward_cpu(ids, table, whole) == -1
    dy = rng.standard_normal(whole.shape).astype(np.float32)
    dtable = np.empty_like(table)
    embedding_backward_cpu(ids, dy, dtable)
    summed = np.zeros_like(whole)
    for r0, r1 in pieces(10, parts):
        assert embedding_forward_cpu(ids, table[r0:r1], summed, row_offset=r0, total_rows=10,
                                     accumulate=True) == -1
        part = np.full_like(whole, np.nan)
        assert embedding_forward_cpu(ids, table[r0:r1], part, row_offset=r0, total_rows=10) == -1
        inside = (ids >= r0) & (ids < r1)
        np.testing.assert_array_equal(part[inside], whole[inside])
        np.testing.assert_array_equal(part[~inside], 0.0)  # masked lookup: zeros, overwritten
        dpiece = np.full((r1 - r0, 4), np.nan, np.float32)
        embedding_backward_cpu(ids, dy, dpiece, row_offset=r0)
        np.testing.assert_allclose(dpiece, dtable[r0:r1], rtol=1e-6)
        embedding_backward_cpu(ids, dy, dpiece, accumulate=True, row_offset=r0)
        np.testing.assert_allclose(dpiece, 2 * dtable[r0:r1], rtol=1e-6)
    np.testing.assert_array_equal(summed, whole)


def test_embedding_piece_reports_bad_ids():
    table = rng.standard_normal((10, 3)).astype(np.float32)
    ids = np.array([2, 8, 10, -1, 3])
    y = np.full((5, 3), 2.0, np.float32)
    # ids 0..9 are valid for the whole table even when this piece (rows 5..9) holds none of them
    assert embedding_forward_cpu(np.array([2, 8]), table[5:], y[:2], row_offset=5, total_rows=10) == -1
    assert embedding_forward_cpu(ids, table[5:], y, row_offset=5, total_rows=10) == 2
    np.testing.assert_array_equal(y[[0, 2, 3, 4]], 0.0)
    np.testing.assert_array_equal(y[1], table[8])
    acc = np.full((5, 3), 2.0, np.float32)
    assert embedding_forward_cpu(ids, table[:5], acc, row_offset=0, total_rows=10, accumulate=True) == 2
    np.testing.assert_array_equal(acc[[1, 2, 3]], 2.0)  # other pieces' and bad ids leave y alone
    np.testing.assert_allclose(acc[0], 2.0 + table[2])
    assert embedding_forward_cpu(np.array([1, 5]), table[:5], np.empty((2, 3), np.float32)) == 1
    with pytest.raises(ValueError, match="does not fit"):
        embedding_forward_cpu(ids, table[5:], y, row_offset=6, total_rows=10)
    with pytest.raises(ValueError, match="does not fit"):
        embedding_forward_cpu(ids, table, y, row_offset=-1)


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_partial_products_sum_to_the_whole(parts, use_bias, dtype):
    x = rng.standard_normal((2, 3, 10)).astype(dtype)
    w = rng.standard_normal((10, 4)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype) if use_bias else None
    whole = np.empty((2, 3, 4), dtype)
    linear_forward_cpu(x, w, b, whole)
    y = np.zeros_like(whole)
    for k, (c0, c1) in enumerate(pieces(10, parts)):
        linear_forward_cpu(x[..., c0:c1], w[c0:c1], b if k == 0 else None, y, accumulate=True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, whole, rtol=tol, atol=tol)


def test_dense_accumulate_adds_to_what_is_there():
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((3, 2))
    y = np.ones((5, 2))
    linear_forward_cpu(x, w, np.full(2, 0.5), y, accumulate=True)
    np.testing.assert_allclose(y, 1.5 + x @ w, rtol=1e-12)


@pytest.mark.parametrize("act, z", [("relu", False), ("linear", True), ("gelu", True)])
def test_dense_accumulate_needs_linear_and_no_z(act, z):
    x, w, y = np.ones((2, 3)), np.ones((3, 4)), np.zeros((2, 4))
    with pytest.raises(ValueError, match=f"linear_forward_cpu.*'{act}'"):
        linear_forward_cpu(x, w, None, y, resolve_activation(act), np.zeros_like(y) if z else None,
                           accumulate=True)
    np.testing.assert_array_equal(y, 0.0)
