"""pool2d / global_pool2d CPU kernels against the float64 NumPy reference (forward and backward)."""

import numpy as np
import pytest

from kernels import pool2d as P

# (input shape, pool_size, strides, padding)
GEOMETRIES = [
    ((2, 6, 7, 3), (2, 2), None, "valid"),  # MNIST-style: strides default to pool_size, odd width
    ((2, 5, 5, 2), (3, 3), (2, 2), "same"),
    ((1, 7, 6, 2), (2, 3), (1, 2), "same"),  # overlapping windows and asymmetric pads
    ((2, 4, 4, 3), (3, 3), (1, 1), "valid"),
    ((1, 5, 4, 1), 2, 1, "same"),
    ((2, 5, 7, 2), 2, None, "same"),  # 2x2/2 with border windows (the register fast path's fallback)
    ((1, 7, 8, 3), 3, 3, "same"),  # tiling windows with pads on both sides (the scatter-free backward)
]


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("shape, pool_size, strides, padding", GEOMETRIES)
def test_pool_forward_backward(shape, pool_size, strides, padding, mode):
    x = _x(shape)
    ps = P.pool_geometry(shape, pool_size, strides, padding, mode)[:2]
    st = P.pool_geometry(shape, pool_size, strides, padding, mode)[2:4]
    want = P.pool2d_reference(x, ps, st, padding, mode)
    out = np.full(want.shape, np.nan, np.float32)
    argmax = np.empty(want.shape, np.int32)
    P.pool2d_forward_cpu(x, out, pool_size, strides, padding, mode, argmax)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    gy = _x(want.shape, 1)
    gwant = P.pool2d_backward_reference(x, gy, ps, st, padding, mode)
    gx = np.full(x.shape, np.nan, np.float32)
    P.pool2d_backward_cpu(x, gy, gx, pool_size, strides, padding, mode, argmax)
    np.testing.assert_allclose(gx, gwant, rtol=1e-6, atol=1e-6)
    acc = np.ones_like(x)
    P.pool2d_backward_cpu(x, gy, acc, pool_size, strides, padding, mode, None, accumulate=True)
    np.testing.assert_allclose(acc, 1 + gwant, rtol=1e-6, atol=1e-6)


def test_max_ties_go_to_the_first_maximum():
    x = np.zeros((1, 2, 2, 1), np.float32)
    out = np.empty((1, 1, 1, 1), np.float32)
    argmax = np.empty((1, 1, 1, 1), np.int32)
    P.pool2d_forward_cpu(x, out, 2, None, "valid", "max", argmax)
    gx = np.empty_like(x)
    P.pool2d_backward_cpu(x, np.ones((1, 1, 1, 1), np.float32), gx, 2, None, "valid", "max", argmax)
    assert gx.ravel().tolist() == [1.0, 0.0, 0.0, 0.0]


def test_same_average_counts_only_valid_elements():
    x = np.ones((1, 3, 3, 1), np.float32)
    out = np.empty((1, 2, 2, 1), np.float32)
    P.pool2d_forward_cpu(x, out, 2, 2, "same", "avg")
    np.testing.assert_array_equal(out, np.ones_like(out))  # padding would have pulled these below 1


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_global_pool(mode):
    x = _x((3, 4, 5, 6))
    want = P.global_pool2d_reference(x, mode)
    out = np.empty(want.shape, np.float32)
    argmax = np.empty(want.shape, np.int32)
    P.global_pool2d_forward_cpu(x, out, mode, argmax)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    gy = _x(want.shape, 2)
    gwant = P.global_pool2d_backward_reference(x, gy, mode)
    gx = np.full(x.shape, np.nan, np.float32)
    P.global_pool2d_backward_cpu(x, gy, gx, mode, argmax)
    np.testing.assert_allclose(gx, gwant, rtol=1e-6, atol=1e-7)
    acc = np.ones_like(x)
    P.global_pool2d_backward_cpu(x, gy, acc, mode, None, accumulate=True)
    np.testing.assert_allclose(acc, 1 + gwant, rtol=1e-6, atol=1e-6)


def test_global_max_ties_share_the_gradient():
    """Positions equal to the maximum share its gradient equally (TensorFlow's reduce_max gradient)."""
    x = np.array([[[[2.0, 1.0], [2.0, -1.0]], [[0.0, -1.0], [2.0, -1.0]]]], np.float32)  # (1, 2, 2, 2)
    out, argmax = np.empty((1, 2), np.float32), np.empty((1, 2), np.int32)
    P.global_pool2d_forward_cpu(x, out, "max", argmax)
    gy = np.array([[6.0, 3.0]], np.float32)
    want = np.array([[[[2.0, 3.0], [2.0, 0.0]], [[0.0, 0.0], [2.0, 0.0]]]], np.float32)
    np.testing.assert_allclose(P.global_pool2d_backward_reference(x, gy, "max"), want)
    for am in (argmax, None):
        gx = np.full(x.shape, np.nan, np.float32)
        P.global_pool2d_backward_cpu(x, gy, gx, "max", am)
        np.testing.assert_allclose(gx, want)


NAN, INF = np.nan, np.inf
# one 2x2 window per channel, with TensorFlow 2.21's CPU MaxPool value and MaxPoolGrad position (measured)
NAN_WINDOWS = [([NAN, 1, 2, .5], 2.0, 0), ([1, NAN, 2, .5], 2.0, 2), ([1, 0, 2, NAN], 2.0, 2),
               ([NAN, NAN, NAN, NAN], "lowest", 0), ([NAN, -INF, -INF, -INF], "lowest", 0),
               ([-INF, -INF, -INF, -INF], "lowest", 0), ([NAN, NAN, 3, 1], 3.0, 0), ([3, 1, 2, 0], 3.0, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool_size, strides", [(2, 2), ((2, 2), (1, 1)), ((2, 3), (2, 1))])
def test_max_pool_skips_nan_in_its_value_and_keeps_a_first_nan_as_its_argmax(pool_size, strides, dtype):
    """TensorFlow's CPU MaxPool: the value is the largest one not NaN, from the dtype's lowest finite value
    (all NaN or -inf gives it), while the gradient goes to the scan's first maximum from the window's first
    position (a NaN there keeps it). Ours kept a first-position NaN as the value; the 2x2 fast path and the
    generic loop (strides 1; a 2x3 window) alike."""
    k = len(NAN_WINDOWS)
    x = np.array([w for w, _, _ in NAN_WINDOWS], dtype).T.reshape(1, 2, 2, k)
    x = np.concatenate([x, np.full((1, 2, 1, k), NAN, dtype)], axis=2)  # a third column of NaN changes nothing
    lowest = np.finfo(dtype).min
    value = np.array([lowest if v == "lowest" else v for _, v, _ in NAN_WINDOWS], dtype)
    flat = np.array([(q // 2) * 3 + q % 2 for _, _, q in NAN_WINDOWS], np.int32)  # row * W + col with W = 3
    geo = P.pool_geometry(x.shape, pool_size, strides)
    out, argmax = np.empty((1, geo[4], geo[5], k), dtype), np.empty((1, geo[4], geo[5], k), np.int32)
    P.pool2d_forward_cpu(x, out, pool_size, strides, "valid", "max", argmax)
    np.testing.assert_array_equal(out[0, 0, 0], value)
    np.testing.assert_array_equal(argmax[0, 0, 0], flat)
    gx = np.zeros_like(x)
    P.pool2d_backward_cpu(x, np.ones_like(out), gx, pool_size, strides, "valid", "max")  # argmax recomputed
    assert not np.isnan(gx).any()


def test_global_max_of_a_nan_is_nan_with_nan_gradients():
    """A NaN anywhere in a (sample, channel) makes its maximum NaN, wherever it lies, and every gradient
    of it NaN (TensorFlow's reduce_max and its gradient: 0 positions equal the maximum, a share of 0 / 0);
    the other channels are unchanged."""
    x = np.array([[[[1.0, 1.0], [np.nan, -1.0]], [[3.0, -1.0], [2.0, 4.0]]],
                  [[[np.nan, 5.0], [7.0, 0.0]], [[1.0, 0.0], [np.nan, 0.0]]]], np.float32)  # (2, 2, 2, 2)
    out, argmax = np.empty((2, 2), np.float32), np.empty((2, 2), np.int32)
    P.global_pool2d_forward_cpu(x, out, "max", argmax)
    np.testing.assert_array_equal(out, [[np.nan, 4.0], [np.nan, 5.0]])
    gy = np.array([[6.0, 3.0], [2.0, 4.0]], np.float32)
    want = P.global_pool2d_backward_reference(x, gy, "max")
    assert np.isnan(want[:, :, :, 0]).all() and not np.isnan(want[:, :, :, 1]).any()
    for am in (argmax, None):
        gx = np.zeros(x.shape, np.float32)
        P.global_pool2d_backward_cpu(x, gy, gx, "max", am)
        np.testing.assert_array_equal(gx, want.astype(np.float32))


@pytest.mark.parametrize("call, message", [
    (lambda: P.pool_geometry((1, 4, 4), 2), "rank 4"),
    (lambda: P.pool_geometry((1, 4, 4, 1), 2, mode="min"), "mode"),
    (lambda: P.pool_geometry((1, 4, 4, 1), 0), "pool_size"),
    (lambda: P.pool_geometry((1, 4, 4, 1), 2, padding="full"), "padding"),
    (lambda: P.pool_geometry((1, 1, 4, 1), 2), "padding='same'"),
    (lambda: P.pool2d_forward_cpu(np.zeros((1, 4, 4, 1), np.float32), np.empty((1, 3, 3, 1), np.float32), 2),
     "out must have shape"),
    (lambda: P.global_pool2d_forward_cpu(np.zeros((1, 4, 4, 1), np.float32), np.empty((1, 1), np.float32),
                                         "sum"), "mode"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
