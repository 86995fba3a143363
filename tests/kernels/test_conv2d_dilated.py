"""Dilated conv2d CPU kernels (kernels.conv2d_dilated) against the float64 NumPy reference: forward and every
gradient, odd sizes, dilation (2, 3) and large rates, "same" / "valid" / explicit pads, fused activations with
and without a saved pre-activation, accumulate vs overwrite, the sub-grid stack (one undilated call on a
3x3 kernel, never a zero-stuffed one), threads, and errors."""

import threading

import numpy as np
import pytest

from kernels import conv2d as K
from kernels import conv2d_dilated as D
from kernels._conv_reference import conv2d_backward_reference, conv2d_reference

# (n, h, w, c_in, kh, kw, c_out, dilation, padding)
GEOMETRIES = [
    (2, 9, 11, 3, 3, 3, 4, (2, 3), "same"),
    (2, 13, 10, 3, 3, 2, 5, (2, 3), "valid"),
    (1, 7, 9, 2, 2, 3, 3, (3, 2), "same"),  # even kernel height: TF's split of the dilated window's pad
    (3, 7, 7, 4, 3, 3, 4, (6, 6), "same"),  # the rate spans more than the image: most taps read padding
    (1, 11, 12, 1, 3, 3, 3, (2, 2), "same"),  # single channel 3x3: the direct forward on the sub-grids
    (2, 17, 15, 8, 3, 3, 8, (2, 2), "same"),  # 9x8 sub-grids: F(4x4, 3x3) Winograd on the stack
    # 3x4 sub-grids: F(4x4, 3x3) too (stack_algorithm), 5 samples for conv2d's WINOGRAD_MIN_PIXELS
    (5, 9, 10, 4, 3, 3, 5, (3, 3), "same"),
    (1, 9, 8, 3, 3, 3, 2, (1, 2), "valid"),  # dilated along the width only
    (2, 8, 9, 3, 3, 3, 2, (2, 3), ((2, 1), (0, 3))),  # explicit pads: a spatial tile's halo'd slice
]


def _data(rng, n, h, w, c, kh, kw, co):
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(np.float32)
    b = rng.standard_normal(co).astype(np.float32) * 0.1
    return x, k, b


def _close(got, want, what):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * scale, err_msg=what)


def _check(geometry, activation="relu", use_bias=True, keep_pre=None, accumulate=False, seed=0):
    n, h, w, c, kh, kw, co, dilation, padding = geometry
    rng = np.random.default_rng(seed)
    x, k, b = _data(rng, n, h, w, c, kh, kw, co)
    b = b if use_bias else None
    want = conv2d_reference(x, k, b, (1, 1), padding, activation, dilation)
    out = np.full(want.shape, np.nan, np.float32)
    keep_pre = K.needs_pre_activation(activation) if keep_pre is None else keep_pre
    pre = np.full(want.shape, np.nan, np.float32) if keep_pre else None
    D.conv2d_dilated_forward_cpu(x, k, b, out, 1, padding, activation, pre_activation=pre, dilation=dilation)
    _close(out, want, f"forward {geometry} {activation}")
    if pre is not None:
        _close(pre, conv2d_reference(x, k, b, (1, 1), padding, "linear", dilation), f"pre-activation {geometry}")
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, (1, 1), padding, activation, dilation)
    base = 0.5 if accumulate else np.nan
    gx = np.full(x.shape, base, np.float32)
    gk = np.full(k.shape, base, np.float32)
    gb = np.full(co, base, np.float32) if use_bias else None
    D.conv2d_dilated_backward_cpu(x, k, out, gy, gx, gk, gb, 1, padding, activation, pre_activation=pre,
                                  accumulate_x=accumulate, accumulate_kernel=accumulate,
                                  accumulate_bias=accumulate, dilation=dilation)
    shift = 0.5 if accumulate else 0.0
    _close(gx - shift, dx, f"grad_x {geometry} {activation}")
    _close(gk - shift, dk, f"grad_kernel {geometry} {activation}")
    if use_bias:
        _close(gb - shift, db, f"grad_bias {geometry} {activation}")


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_forward_backward_match_reference(geometry):
    _check(geometry)


def test_the_winograd_geometries_run_winograd():
    """GEOMETRIES[5] and [6] are there for F(4x4, 3x3) on the stack (9x8 and 3x4 sub-grids): "auto" must
    still pick it for them, or test_forward_backward_match_reference checks im2col + GEMM twice more."""
    for n, h, w, c, kh, kw, co, dilation, padding in GEOMETRIES[5:7]:
        g = D.dilated_geometry((n, h, w, c), (kh, kw, c, co), 1, padding, dilation)
        assert D.stack_algorithm(g, "forward") == D.stack_algorithm(g, "backward") == "winograd4", (g.ohs, g.ows)


@pytest.mark.parametrize("activation,keep_pre", [(None, False), ("linear", True), ("relu", True),
                                                 ("tanh", False), ("sigmoid", True), ("gelu", True),
                                                 ("silu", True)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_activations_pre_activation_and_accumulate(activation, keep_pre, accumulate):
    _check(GEOMETRIES[0], activation, keep_pre=keep_pre, accumulate=accumulate, seed=1)
    _check(GEOMETRIES[1], activation, use_bias=False, keep_pre=keep_pre, accumulate=accumulate, seed=2)


def test_dilation_one_is_the_plain_convolution():
    _check((2, 7, 6, 3, 3, 3, 4, (1, 1), "same"))
    rng = np.random.default_rng(3)
    x, k, b = _data(rng, 2, 9, 9, 3, 3, 3, 4)
    out = np.empty((2, 5, 5, 4), np.float32)
    D.conv2d_dilated_forward_cpu(x, k, b, out, (2, 2), "same", "relu", dilation=1)
    _close(out, conv2d_reference(x, k, b, (2, 2), "same", "relu"), "strides (2, 2), dilation 1")


def test_stack_algorithm_and_explicit_algorithms():
    """F(4x4, 3x3) from sub-grids of 3 outputs a side, im2col + GEMM where conv2d's rule would take
    F(2x2, 3x3) (measured slower on deep stacks of tiny images); every algorithm computes the same."""
    def algo(shape, kernel, dilation, pass_="backward"):
        return D.stack_algorithm(D.dilated_geometry(shape, kernel, 1, "same", dilation), pass_)

    assert algo((8, 64, 64, 32), (3, 3, 32, 64), 18) == "winograd4"  # 4x4 sub-grids
    assert algo((8, 64, 64, 32), (3, 3, 32, 64), 32) == "gemm"  # 2x2 sub-grids: conv2d's rule says winograd
    assert algo((8, 64, 64, 1), (3, 3, 1, 8), 2, "forward") == "direct"
    assert algo((8, 64, 64, 3), (5, 5, 3, 8), 2) == "gemm"
    rng = np.random.default_rng(8)
    x, k, b = _data(rng, 2, 11, 10, 24, 3, 3, 24)
    want = conv2d_reference(x, k, b, (1, 1), "same", "relu", (2, 3))
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, (1, 1), "same", "relu", (2, 3))
    for name in ("gemm", "winograd", "winograd4"):
        out = np.empty(want.shape, np.float32)
        D.conv2d_dilated_forward_cpu(x, k, b, out, 1, "same", "relu", dilation=(2, 3), algorithm=name)
        _close(out, want, f"forward {name}")
        gx, gk, gb = np.empty_like(x), np.empty_like(k), np.empty_like(b)
        D.conv2d_dilated_backward_cpu(x, k, out, gy, gx, gk, gb, 1, "same", "relu", dilation=(2, 3), algorithm=name)
        for got, ref, what in ((gx, dx, "grad_x"), (gk, dk, "grad_kernel"), (gb, db, "grad_bias")):
            _close(got, ref, f"{what} {name}")


def test_only_the_requested_gradients_are_written():
    n, h, w, c, kh, kw, co, dilation, padding = GEOMETRIES[0]
    rng = np.random.default_rng(4)
    x, k, b = _data(rng, n, h, w, c, kh, kw, co)
    out = np.empty((n, h, w, co), np.float32)
    D.conv2d_dilated_forward_cpu(x, k, b, out, 1, padding, "tanh", dilation=dilation)
    gy = rng.standard_normal(out.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, (1, 1), padding, "tanh", dilation)
    gk = np.empty_like(k)
    D.conv2d_dilated_backward_cpu(x, k, out, gy, None, gk, None, 1, padding, "tanh", dilation=dilation)
    _close(gk, dk, "grad_kernel alone")
    gx = np.empty_like(x)
    D.conv2d_dilated_backward_cpu(x, k, out, gy, gx, None, None, 1, padding, "tanh", dilation=dilation)
    _close(gx, dx, "grad_x alone")


def test_sub_grids_run_as_one_undilated_call(monkeypatch):
    """A 3x3 kernel at rate 18 stays 3x3: one forward call on the (18 * 18 * N)-deep stack of sub-grids, one
    backward call, and the result is the dilated convolution."""
    calls = []
    forward, backward = K.conv2d_forward_cpu, K.conv2d_backward_cpu

    def spy(name, fn):
        def wrapped(x, kernel, *args, **kwargs):
            calls.append((name, x.shape, kernel.shape))
            return fn(x, kernel, *args, **kwargs)
        return wrapped

    monkeypatch.setattr(K, "conv2d_forward_cpu", spy("forward", forward))
    monkeypatch.setattr(K, "conv2d_backward_cpu", spy("backward", backward))
    _check((2, 20, 21, 3, 3, 3, 4, (18, 18), "same"))
    g = D.dilated_geometry((2, 20, 21, 3), (3, 3, 3, 4), 1, "same", 18)
    assert (g.ohs, g.ows) == (2, 2)
    assert calls == [("forward", (18 * 18 * 2, 4, 4, 3), (3, 3, 3, 4)),
                     ("backward", (18 * 18 * 2, 4, 4, 3), (3, 3, 3, 4))]


def test_threads_keep_their_own_stacks():
    """Shards of one op run concurrently on several CPU processors: each thread's sub-grid stacks are its
    own (different shapes per thread, so a shared buffer would be overwritten)."""
    errors = []

    def run(seed, geometry):
        try:
            for _ in range(3):
                _check(geometry, "gelu", seed=seed)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s, g)) for s, g in enumerate(GEOMETRIES[:3])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("call,message", [
    (lambda x, k, o: D.conv2d_dilated_forward_cpu(x, k, None, o, (2, 1), "same", dilation=(2, 2)),
     r"conv2d_dilated_forward_cpu: strides=\(2, 1\) with dilation=\(2, 2\): a dilated convolution takes "
     r"strides \(1, 1\), as in TensorFlow; use strides=1"),
    (lambda x, k, o: D.conv2d_dilated_forward_cpu(x, k, None, o, 1, "valid", dilation=5),
     r"the 3x3 kernel dilated by \(5, 5\) spans 11x11, which does not fit the 9x9 input with "
     r"padding='valid'; use padding='same'"),
    (lambda x, k, o: D.conv2d_dilated_forward_cpu(x, k, None, o[:, :8], 1, "same", dilation=2),
     r"out must have shape \(1, 9, 9, 2\), received \(1, 8, 9, 2\)"),
    (lambda x, k, o: D.conv2d_dilated_forward_cpu(x, k, None, o, 1, "same", "gelu", dilation=2),
     r"needs the pre-activation; pass a pre_activation buffer of shape \(1, 9, 9, 2\)"),
    (lambda x, k, o: D.conv2d_dilated_backward_cpu(x, k, o, o, x, None, None, 1, "same", "gelu", dilation=2),
     r"conv2d_dilated_backward_cpu: the gradient of activation .* needs the pre-activation"),
    (lambda x, k, o: D.conv2d_dilated_forward_cpu(x, k[:, :, :2], None, o, 1, "same", dilation=2),
     r"the input has 3 channels .* but the kernel expects 2"),
    (lambda x, k, o: D.conv2d_dilated_forward_cpu(x, k, None, o, 1, "same", dilation=(0, 2)),
     r"expects positive values for dilation"),
])
def test_errors(call, message):
    x = np.zeros((1, 9, 9, 3), np.float32)
    k = np.zeros((3, 3, 3, 2), np.float32)
    with pytest.raises(ValueError, match=message):
        call(x, k, np.zeros((1, 9, 9, 2), np.float32))
