"""The CUDA twins of tests/kernels/test_conv_pool_tiles.py on tiny shapes: conv2d / pool2d with explicit
padding against the float64 reference, and spatial tiles (halo'd input slices with local pads) against
the whole-array CUDA call, forward and backward."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/kernels: the shared tile helper
from conv_tiles import check_tiles  # noqa: E402, I001 - test-local helper module

from kernels import conv2d as K  # noqa: E402
from kernels import pool2d as P  # noqa: E402


def _dev(a):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(a))


def _nan_dev(shape, dtype=np.float32):
    return _dev(np.full(shape, np.nan if dtype == np.float32 else -1, dtype))


def conv_ops(k, b, strides, activation="relu"):
    """forward / backward callables of the CUDA conv for `check_tiles` (host in, host out)."""
    dk, db = _dev(k), _dev(b)

    def forward(x, padding):
        g = K.conv_geometry(x.shape, k.shape, strides, padding)
        out = _nan_dev((g.n, g.oh, g.ow, g.co))
        K.conv2d_forward_cuda(_dev(x), dk, db, out, strides, padding, activation)
        return out.copy_to_host(), None

    def backward(x, out, _saved, gy, padding):
        gx, gk, gb = _nan_dev(x.shape), _nan_dev(k.shape), _nan_dev(b.shape)
        K.conv2d_backward_cuda(_dev(x), dk, _dev(out), _dev(gy), gx, gk, gb, strides, padding, activation)
        return gx.copy_to_host(), gk.copy_to_host(), gb.copy_to_host()
    return forward, backward


def pool_ops(pool_size, strides, mode):
    """forward / backward callables of the CUDA pooling for `check_tiles`."""
    def forward(x, padding):
        g = P.pool_geometry(x.shape, pool_size, strides, padding, mode)
        shape = (x.shape[0], g[4], g[5], x.shape[3])
        out, argmax = _nan_dev(shape), _nan_dev(shape, np.int32)
        P.pool2d_forward_cuda(_dev(x), out, pool_size, strides, padding, mode, argmax)
        return out.copy_to_host(), argmax.copy_to_host() if mode == "max" else None

    def backward(x, _out, argmax, gy, padding):
        gx = _nan_dev(x.shape)
        am = _dev(argmax) if argmax is not None else None
        P.pool2d_backward_cuda(_dev(x), _dev(gy), gx, pool_size, strides, padding, mode, am)
        return (gx.copy_to_host(),)
    return forward, backward


def _conv_data(n, h, w, c, kh, kw, co, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(np.float32)
    b = (rng.standard_normal(co) * 0.1).astype(np.float32)
    return x, k, b


def test_conv_explicit_padding_matches_reference():
    x, k, b = _conv_data(1, 5, 4, 2, 3, 3, 3)
    padding = ((3, 1), (0, 2))  # a top pad larger than the kernel's reach: whole rows of zeros
    forward, backward = conv_ops(k, b, (2, 1))
    out, _ = forward(x, padding)
    want = K.conv2d_reference(x, k, b, (2, 1), padding, "relu")
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    gy = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    for got, ref in zip(backward(x, out, None, gy, padding),
                        K.conv2d_backward_reference(x, k, b, gy, (2, 1), padding, "relu"), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


# (n, h, w, c_in, kh, kw, c_out, strides, padding, axis, tiles)
CONV = [
    (1, 6, 4, 2, 3, 3, 3, (1, 1), "same", 1, 2),
    (1, 5, 7, 1, 5, 5, 2, (2, 2), "same", 2, 3),  # 5x5 stride 2, odd sizes, 1 channel
    (1, 8, 4, 2, 3, 3, 2, (2, 2), "valid", 1, 2),  # row 7 is read by no window
    (1, 5, 4, 17, 3, 3, 2, (1, 1), "valid", 1, 2),  # depths and input channels span several 16-wide tiles
]


@pytest.mark.parametrize("geometry", CONV)
def test_conv_tiles_equal_the_whole(geometry):
    n, h, w, c, kh, kw, co, strides, padding, axis, parts = geometry
    x, k, b = _conv_data(n, h, w, c, kh, kw, co)
    forward, backward = conv_ops(k, b, strides)
    check_tiles(forward, backward, x, (kh, kw), strides, padding, axis, parts)


# (shape, pool_size, strides, padding, axis, tiles)
POOL = [
    ((1, 7, 6, 2), (3, 3), (1, 1), "same", 1, 3),  # overlapping windows
    ((1, 7, 8, 2), (3, 3), (2, 2), "same", 2, 2),
    ((1, 9, 5, 2), (2, 2), (2, 2), "valid", 1, 2),  # row 8 is read by no window
    ((1, 7, 7, 1), (3, 2), (2, 3), "same", 2, 3),
]


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("geometry", POOL)
def test_pool_tiles_equal_the_whole(geometry, mode):
    shape, pool_size, strides, padding, axis, parts = geometry
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    forward, backward = pool_ops(pool_size, strides, mode)
    check_tiles(forward, backward, x, pool_size, strides, padding, axis, parts)


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pool_explicit_padding_matches_reference(mode):
    x = np.random.default_rng(2).standard_normal((1, 6, 5, 2)).astype(np.float32)
    padding = ((2, 0), (1, 2))
    forward, backward = pool_ops((3, 3), (2, 1), mode)
    out, argmax = forward(x, padding)
    want = P.pool2d_reference(x, (3, 3), (2, 1), padding, mode)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    gy = np.random.default_rng(3).standard_normal(out.shape).astype(np.float32)
    np.testing.assert_allclose(backward(x, out, argmax, gy, padding)[0],
                               P.pool2d_backward_reference(x, gy, (3, 3), (2, 1), padding, mode),
                               rtol=1e-6, atol=1e-6)
