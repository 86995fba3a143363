"""The CUDA twins of tests/kernels/test_kernel_tiles.py on tiny shapes: dropout tile masks (`origin` /
`noise_shape`), embedding row pieces (`row_offset` / `total_rows` / `accumulate`) and Dense partial
products (`accumulate`), each against the whole CUDA call and the CPU kernel."""

import numpy as np
import pytest
from numba import cuda

from kernels import dropout, embedding, linear
from kernels.activations import resolve_activation

rng = np.random.default_rng(13)
KEY = dropout.dropout_key(seed=2, step=4, op_seed=9)


def pieces(size: int, parts: int) -> list[tuple[int, int]]:
    bounds = [size * p // parts for p in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


# (x shape, mask shape, split axis, tiles)
DROPOUT = [((3, 4, 5), (3, 4, 5), 1, 2), ((3, 4, 5), (3, 1, 5), 2, 3), ((2, 3, 4, 2), (2, 3, 4, 2), 2, 3),
           ((2, 3, 4, 2), (2, 3, 1, 2), 1, 2)]


@pytest.mark.parametrize("x_shape, mask_shape, axis, parts", DROPOUT)
def test_dropout_tile_masks_are_slices_of_the_whole(x_shape, mask_shape, axis, parts):
    x = rng.standard_normal(x_shape).astype(np.float32)
    whole_mask = np.empty(mask_shape, np.uint8)
    whole_y = np.empty_like(x)
    dropout.dropout_forward_cpu(x, whole_y, whole_mask, 0.5, KEY, 6)
    dmask = cuda.to_device(np.zeros(mask_shape, np.uint8))
    dy = cuda.to_device(np.zeros_like(x))
    dropout.dropout_forward_cuda(cuda.to_device(x), dy, dmask, 0.5, KEY, 6)
    np.testing.assert_array_equal(dmask.copy_to_host(), whole_mask)
    noise = mask_shape[1:]
    for a, b in pieces(x_shape[axis], parts):
        xs = [slice(1, None)] + [slice(None)] * (len(x_shape) - 1)  # the tile also starts at sample 1
        ms = list(xs)
        xs[axis] = slice(a, b)
        origin = [7] + [0] * (len(x_shape) - 1)
        if mask_shape[axis] != 1:
            ms[axis] = slice(a, b)
            origin[axis] = a
        xs, ms = tuple(xs), tuple(ms)
        mask = cuda.to_device(np.full(whole_mask[ms].shape, 9, np.uint8))
        dropout.dropout_mask_cuda(mask, 0.5, KEY, origin=tuple(origin), noise_shape=noise)
        np.testing.assert_array_equal(mask.copy_to_host(), whole_mask[ms], err_msg=f"mask at {origin}")
        y = cuda.to_device(np.full(x[xs].shape, np.nan, np.float32))
        mask = cuda.to_device(np.full(whole_mask[ms].shape, 9, np.uint8))
        dropout.dropout_forward_cuda(cuda.to_device(np.ascontiguousarray(x[xs])), y, mask, 0.5, KEY, 7,
                                     origin=tuple(origin), noise_shape=noise)
        np.testing.assert_array_equal(mask.copy_to_host(), whole_mask[ms])
        np.testing.assert_allclose(y.copy_to_host(), whole_y[xs], rtol=1e-6)


def test_dropout_tile_errors():
    with pytest.raises(ValueError, match="dropout_mask_cuda.*does not fit"):
        dropout.dropout_mask_cuda(cuda.to_device(np.zeros((2, 3), np.uint8)), 0.5, KEY, origin=(0, 1))


@pytest.mark.parametrize("parts", [2, 3])
def test_embedding_row_pieces_sum_to_the_whole(parts):
    table = rng.standard_normal((7, 3)).astype(np.float32)
    ids = np.array([[0, 6, 3], [4, 4, 1]])
    whole = np.empty(ids.shape + (3,), np.float32)
    embedding.embedding_forward_cpu(ids, table, whole)
    gy = rng.standard_normal(whole.shape).astype(np.float32)
    dtable = np.empty_like(table)
    embedding.embedding_backward_cpu(ids, gy, dtable)
    d_ids, d_gy = cuda.to_device(ids), cuda.to_device(gy)
    summed = cuda.to_device(np.zeros_like(whole))
    for r0, r1 in pieces(7, parts):
        piece = cuda.to_device(table[r0:r1])
        assert embedding.embedding_forward_cuda(d_ids, piece, summed, row_offset=r0, total_rows=7,
                                                accumulate=True) == -1
        part = cuda.to_device(np.full_like(whole, np.nan))
        assert embedding.embedding_forward_cuda(d_ids, piece, part, row_offset=r0, total_rows=7) == -1
        inside = (ids >= r0) & (ids < r1)
        np.testing.assert_array_equal(part.copy_to_host(), np.where(inside[..., None], whole, 0.0))
        dpiece = cuda.to_device(np.full((r1 - r0, 3), np.nan, np.float32))
        embedding.embedding_backward_cuda(d_ids, d_gy, dpiece, row_offset=r0)
        np.testing.assert_allclose(dpiece.copy_to_host(), dtable[r0:r1], rtol=1e-6)
    np.testing.assert_array_equal(summed.copy_to_host(), whole)


def test_embedding_piece_reports_bad_ids():
    table = rng.standard_normal((6, 2)).astype(np.float32)
    ids = np.array([1, 5, 6, -1])
    y = cuda.to_device(np.full((4, 2), 3.0, np.float32))
    assert embedding.embedding_forward_cuda(cuda.to_device(ids), cuda.to_device(table[3:]), y, row_offset=3,
                                            total_rows=6, accumulate=True) == 2
    want = np.full((4, 2), 3.0, np.float32)
    want[1] += table[5]
    np.testing.assert_allclose(y.copy_to_host(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="embedding_forward_cuda.*does not fit"):
        embedding.embedding_forward_cuda(cuda.to_device(ids), cuda.to_device(table[3:]), y, row_offset=4,
                                         total_rows=6)


@pytest.mark.parametrize("use_bias", [True, False])
def test_dense_partial_products_sum_to_the_whole(use_bias):
    x = rng.standard_normal((5, 20)).astype(np.float32)
    w = rng.standard_normal((20, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32) if use_bias else None
    whole = np.empty((5, 3), np.float32)
    linear.linear_forward_cpu(x, w, b, whole)
    y = cuda.to_device(np.zeros((5, 3), np.float32))
    for k, (c0, c1) in enumerate(pieces(20, 3)):
        bias = cuda.to_device(b) if use_bias and k == 0 else None
        xs = cuda.to_device(np.ascontiguousarray(x[:, c0:c1]))
        linear.linear_forward_cuda(xs, cuda.to_device(w[c0:c1]), bias, y, accumulate=True)
    np.testing.assert_allclose(y.copy_to_host(), whole, rtol=1e-5, atol=1e-5)


def test_dense_accumulate_needs_linear():
    x, w, y = (cuda.to_device(np.ones(s, np.float32)) for s in ((2, 3), (3, 4), (2, 4)))
    with pytest.raises(ValueError, match="linear_forward_cuda.*'tanh'"):
        linear.linear_forward_cuda(x, w, None, y, resolve_activation("tanh"), accumulate=True)
