"""kernels/space_depth.py against an element-by-element NumPy reference written from TensorFlow's
definition (out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C + c]): forward, backward (the inverse
rearrangement of the gradient), accumulation, and the shape check."""

import itertools

import numpy as np
import pytest

from kernels import space_depth as K

RNG = np.random.default_rng(0)


def reference_depth_to_space(x, b):
    n, h, w, d = x.shape
    c = d // (b * b)
    y = np.zeros((n, h * b, w * b, c), np.float64)
    for s, r, q, i, j, ch in itertools.product(range(n), range(h), range(w), range(b), range(b), range(c)):
        y[s, r * b + i, q * b + j, ch] = x[s, r, q, (i * b + j) * c + ch]
    return y


@pytest.mark.parametrize(("shape", "b"), [((2, 3, 4, 8), 2), ((1, 2, 2, 18), 3), ((2, 1, 3, 4), 2)])
def test_forward_and_backward_match_the_reference(shape, b):
    x = RNG.standard_normal(shape).astype(np.float32)
    want = reference_depth_to_space(x.astype(np.float64), b)
    y = np.full(want.shape, np.nan, np.float32)
    K.depth_to_space_cpu(x, y, b)
    np.testing.assert_array_equal(y, want.astype(np.float32))
    back = np.full(shape, np.nan, np.float32)  # space_to_depth is depth_to_space's gradient and inverse
    K.space_to_depth_cpu(y, back, b)
    np.testing.assert_array_equal(back, x)
    dy = RNG.standard_normal(want.shape).astype(np.float32)
    dx = np.ones(shape, np.float32)
    K.space_to_depth_cpu(dy, dx, b, accumulate=True)
    # the adjoint: <depth_to_space(x), dy> == <x, space_to_depth(dy)>
    np.testing.assert_allclose(np.sum(want * dy), np.sum(x.astype(np.float64) * (dx - 1.0)), rtol=1e-6)
    y2 = np.ones(want.shape, np.float32)
    K.depth_to_space_cpu(x, y2, b, accumulate=True)
    np.testing.assert_allclose(y2, want + 1.0, rtol=1e-6)


def test_integer_arrays_move_exactly():
    x = np.arange(2 * 2 * 2 * 12, dtype=np.int64).reshape(2, 2, 2, 12)
    y = np.empty((2, 4, 4, 3), np.int64)
    K.depth_to_space_cpu(x, y, 2)
    np.testing.assert_array_equal(y, reference_depth_to_space(x, 2).astype(np.int64))


def test_mismatched_buffers_are_refused():
    with pytest.raises(ValueError, match=r"expected the wide one to be \(1, 4, 4, 2\)"):
        K.depth_to_space_cpu(np.zeros((1, 2, 2, 8), np.float32), np.zeros((1, 4, 4, 3), np.float32), 2)
