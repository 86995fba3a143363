"""conv2d / pool2d CPU kernels with explicit padding ((top, bottom), (left, right)): against the float64
reference, and split into spatial tiles along H or W (each tile computed on its halo'd input slice with
its local pads) against the whole-array call, forward and backward (see `conv_tiles`)."""

import numpy as np
import pytest
from conv_tiles import check_tiles, split, tile_input  # noqa: I001 - test-local helper module

from kernels import conv2d as K
from kernels import pool2d as P
from kernels._conv_geometry import window_geometry

# (n, h, w, c_in, kh, kw, c_out, strides, padding)
CONV = {
    "3x3 same": (2, 9, 8, 3, 3, 3, 4, (1, 1), "same"),
    "5x5 s2 same odd": (1, 11, 9, 2, 5, 5, 3, (2, 2), "same"),
    "3x3 s2 valid unread rows": (2, 10, 10, 3, 3, 3, 2, (2, 2), "valid"),
    "5x5 s1 valid": (1, 10, 9, 2, 5, 5, 2, (1, 1), "valid"),
    "direct 1 channel": (2, 9, 7, 1, 3, 3, 4, (1, 1), "same"),
    "direct 1 channel s2 valid": (1, 8, 9, 1, 3, 3, 3, (2, 2), "valid"),
    "winograd same": (1, 9, 8, 16, 3, 3, 16, (1, 1), "same"),
    "winograd valid odd": (1, 8, 9, 16, 3, 3, 17, (1, 1), "valid"),
}
# the algorithm each geometry runs ("auto" for the rest): these images are too small for the rule's
# F(4x4, 3x3) (WINOGRAD_MIN_PIXELS), which the tiles must still compute exactly
ALGORITHM = {"winograd same": "winograd4", "winograd valid odd": "winograd4"}
# (shape, pool_size, strides, padding)
POOL = {
    "3x3 s1 same overlapping": ((2, 9, 8, 3), (3, 3), (1, 1), "same"),
    "3x3 s2 same overlapping": ((2, 10, 9, 2), (3, 3), (2, 2), "same"),
    "2x2 valid unread rows": ((1, 9, 11, 2), (2, 2), (2, 2), "valid"),
    "2x2 same border": ((1, 9, 9, 2), (2, 2), (2, 2), "same"),
    "3x2 s(2,3) valid": ((1, 11, 10, 2), (3, 2), (2, 3), "valid"),
    "3x3 s3 same tiling": ((2, 8, 8, 3), (3, 3), (3, 3), "same"),
}
SPLITS = [(1, 2), (1, 3), (2, 2), (2, 3)]  # (axis, tiles): axis 1 is H, axis 2 is W


def _conv_data(geometry, seed=0):
    n, h, w, c, kh, kw, co, strides, padding = geometry
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(np.float32)
    b = (rng.standard_normal(co) * 0.1).astype(np.float32)
    return x, k, b, strides, padding


def conv_ops(k, b, strides, activation="relu", algorithm="auto"):
    """forward / backward callables of the CPU conv for `check_tiles` (buffers start as NaN)."""
    def forward(x, padding):
        g = K.conv_geometry(x.shape, k.shape, strides, padding)
        out = np.full((g.n, g.oh, g.ow, g.co), np.nan, np.float32)
        K.conv2d_forward_cpu(x, k, b, out, strides, padding, activation, algorithm=algorithm)
        return out, None

    def backward(x, out, _saved, gy, padding):
        gx, gk, gb = (np.full(a.shape, np.nan, np.float32) for a in (x, k, b))
        K.conv2d_backward_cpu(x, k, out, gy, gx, gk, gb, strides, padding, activation,
                              algorithm="gemm" if algorithm == "direct" else algorithm)
        return gx, gk, gb
    return forward, backward


def pool_ops(pool_size, strides, mode):
    """forward / backward callables of the CPU pooling for `check_tiles` (buffers start as NaN)."""
    def forward(x, padding):
        g = P.pool_geometry(x.shape, pool_size, strides, padding, mode)
        out = np.full((x.shape[0], g[4], g[5], x.shape[3]), np.nan, np.float32)
        argmax = np.full(out.shape, -1, np.int32) if mode == "max" else None
        P.pool2d_forward_cpu(x, out, pool_size, strides, padding, mode, argmax)
        return out, argmax

    def backward(x, _out, argmax, gy, padding):
        gx = np.full(x.shape, np.nan, np.float32)
        P.pool2d_backward_cpu(x, gy, gx, pool_size, strides, padding, mode, argmax)
        return (gx,)
    return forward, backward


def test_tile_input_matches_the_examples():
    # 'same' 3x3 stride 1 over 8 rows, in two tiles: a one-row halo and the pad on the outer side
    assert tile_input(0, 4, 8, 8, 1, 3, 1) == (0, 5, 1, 0)
    assert tile_input(4, 8, 8, 8, 1, 3, 1) == (3, 8, 0, 1)
    # 'valid' 3x3 stride 2 over 10 rows (4 outputs, row 9 unread): the last tile carries row 9
    assert tile_input(2, 4, 4, 10, 2, 3, 0) == (4, 10, 0, 0)
    assert split(7, 3) == [(0, 2), (2, 4), (4, 7)]


@pytest.mark.parametrize("padding", [((1, 0), (2, 1)), ((0, 2), (1, 0)), ((3, 1), (0, 4))])
@pytest.mark.parametrize("geometry", [CONV["3x3 same"], CONV["5x5 s2 same odd"], CONV["direct 1 channel"],
                                      CONV["winograd same"]])
def test_conv_explicit_padding_matches_reference(geometry, padding):
    x, k, b, strides, _ = _conv_data(geometry)
    want = K.conv2d_reference(x, k, b, strides, padding, "relu")
    oh = (x.shape[1] + padding[0][0] + padding[0][1] - k.shape[0]) // strides[0] + 1
    assert want.shape[1] == oh
    forward, backward = conv_ops(k, b, strides, algorithm="winograd4" if geometry is CONV["winograd same"] else "auto")
    out, _ = forward(x, padding)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=2e-5)
    gy = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    for got, ref in zip(backward(x, out, None, gy, padding),
                        K.conv2d_backward_reference(x, k, b, gy, strides, padding, "relu"), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=5e-5)


def test_explicit_pads_equal_to_same_give_the_same_result():
    x, k, b, strides, _ = _conv_data(CONV["5x5 s2 same odd"])
    g = K.conv_geometry(x.shape, k.shape, strides, "same")
    _, _, pt, pb, pl, pr = window_geometry(x.shape[1], x.shape[2], (5, 5), strides, "same")
    explicit = ((pt, pb), (pl, pr))
    assert K.conv_geometry(x.shape, k.shape, strides, explicit) == g
    forward, _ = conv_ops(k, b, strides)
    np.testing.assert_array_equal(forward(x, explicit)[0], forward(x, "same")[0])


@pytest.mark.parametrize("axis, parts", SPLITS)
@pytest.mark.parametrize("name", list(CONV))
def test_conv_tiles_equal_the_whole(name, axis, parts):
    x, k, b, strides, padding = _conv_data(CONV[name])
    forward, backward = conv_ops(k, b, strides, algorithm=ALGORITHM.get(name, "auto"))
    check_tiles(forward, backward, x, k.shape[:2], strides, padding, axis, parts)


@pytest.mark.parametrize("algorithm", ["gemm", "winograd", "winograd4"])
def test_conv_tiles_per_algorithm(algorithm):
    x, k, b, strides, padding = _conv_data(CONV["winograd valid odd"], seed=3)
    forward, backward = conv_ops(k, b, strides, activation="linear", algorithm=algorithm)
    check_tiles(forward, backward, x, (3, 3), strides, padding, 1, 3)


def test_conv_tile_backward_accumulate_leaves_unread_rows_alone():
    x, k, b, strides, padding = _conv_data(CONV["3x3 s2 valid unread rows"])
    xt = np.ascontiguousarray(x[:, 4:])  # output rows [2, 4) of 4: input rows 4..9, row 9 unread
    out = np.empty((2, 2, 4, 2), np.float32)
    K.conv2d_forward_cpu(xt, k, b, out, strides, ((0, 0), (0, 0)), "relu")
    gy = np.ones_like(out)
    gx = np.full(xt.shape, 5.0, np.float32)
    K.conv2d_backward_cpu(xt, k, out, gy, gx, None, None, strides, ((0, 0), (0, 0)), "relu",
                          accumulate_x=True)
    np.testing.assert_array_equal(gx[:, 5], 5.0)
    assert (gx[:, :5] != 5.0).any()


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("padding", [((1, 0), (2, 1)), ((0, 2), (1, 0))])
def test_pool_explicit_padding_matches_reference(mode, padding):
    x = np.random.default_rng(0).standard_normal((2, 7, 8, 3)).astype(np.float32)
    want = P.pool2d_reference(x, (3, 3), (2, 1), padding, mode)
    forward, backward = pool_ops((3, 3), (2, 1), mode)
    out, argmax = forward(x, padding)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    gy = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    np.testing.assert_allclose(backward(x, out, argmax, gy, padding)[0],
                               P.pool2d_backward_reference(x, gy, (3, 3), (2, 1), padding, mode),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("axis, parts", SPLITS)
@pytest.mark.parametrize("name", list(POOL))
def test_pool_tiles_equal_the_whole(name, axis, parts, mode):
    shape, pool_size, strides, padding = POOL[name]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    forward, backward = pool_ops(pool_size, strides, mode)
    check_tiles(forward, backward, x, pool_size, strides, padding, axis, parts)


@pytest.mark.parametrize("call, message", [
    (lambda: K.conv_geometry((1, 5, 5, 1), (3, 3, 1, 1), padding=((1, -1), (0, 0))), "non-negative"),
    (lambda: K.conv_geometry((1, 5, 5, 1), (3, 3, 1, 1), padding=((1, 1),)), "explicit pads"),
    (lambda: K.conv_geometry((1, 5, 5, 1), (3, 3, 1, 1), padding=((1.5, 1), (0, 0))), "explicit pads"),
    (lambda: K.conv_geometry((1, 1, 5, 1), (3, 3, 1, 1), padding=((1, 0), (0, 0))), "does not fit"),
    (lambda: P.pool_geometry((1, 5, 5, 1), 2, padding=((2, 0), (0, 0))), "smaller than the 2x2"),
    (lambda: P.pool_geometry((1, 5, 5, 1), 3, padding=((0, 0), (0, 3))), "smaller than the 3x3"),
])
def test_explicit_padding_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
