"""The CUDA twin of tests/kernels/test_conv_lstm.py on tiny shapes (under NUMBA_ENABLE_CUDASIM=1 by
tests/kernels/test_kernels_cuda_sim.py, or on a GPU): forward and backward equal the CPU kernels'."""

import numpy as np
import pytest

from kernels import conv_lstm as K

RNG = np.random.default_rng(6)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def dev(a):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(a))


@pytest.mark.parametrize("xs,taps,seq,back,acc", [((2, 3, 4, 5, 2), (3, 3), True, False, False),
                                                  ((1, 3, 5, 2), (2,), False, True, True),
                                                  ((1, 2, 3, 3, 3, 1), (2, 2, 2), True, True, False)])
def test_conv_lstm_cuda_matches_cpu(xs, taps, seq, back, acc):
    rank, f = len(taps), 2
    ones = (1,) * rank
    x, k, rk, b = rand(*xs), rand(*taps, xs[-1], 4 * f, scale=0.4), rand(*taps, f, 4 * f, scale=0.4), rand(4 * f)
    n, steps = xs[:2]
    spatial = xs[2:-1]
    kw = dict(strides=ones, padding="same", dilation=ones, go_backwards=back)
    out_shape = (n, steps, *spatial, f) if seq else (n, *spatial, f)
    shapes = [(n, steps, *spatial, m) for m in (4 * f, f, f)]
    host = [np.empty(out_shape, np.float32), np.empty((n, *spatial, f), np.float32),
            np.empty((n, *spatial, f), np.float32), tuple(np.empty(s, np.float32) for s in shapes)]
    K.conv_lstm_forward_cpu(x, k, rk, b, *host, **kw)
    devs = [dev(np.full(out_shape, np.nan, np.float32)), dev(np.zeros((n, *spatial, f), np.float32)),
            dev(np.zeros((n, *spatial, f), np.float32)), tuple(dev(np.zeros(s, np.float32)) for s in shapes)]
    K.conv_lstm_forward_cuda(dev(x), dev(k), dev(rk), dev(b), *devs, **kw)
    for d, h in zip(devs[:3] + list(devs[3]), host[:3] + list(host[3]), strict=True):
        np.testing.assert_allclose(d.copy_to_host(), h, rtol=1e-5, atol=1e-5)
    g_out, g_h, g_c = rand(*out_shape), rand(n, *spatial, f), rand(n, *spatial, f)
    start = 1.0 if acc else np.nan
    grads_h = [np.full(a.shape, start, np.float32) for a in (x, k, rk, b)]
    K.conv_lstm_backward_cpu(x, k, rk, host[3], g_out, g_h, g_c, *grads_h, **kw, accumulate_x=acc,
                             accumulate_kernel=acc, accumulate_recurrent=acc, accumulate_bias=acc)
    grads_d = [dev(np.full(a.shape, start, np.float32)) for a in (x, k, rk, b)]
    K.conv_lstm_backward_cuda(dev(x), dev(k), dev(rk), devs[3], dev(g_out), dev(g_h), dev(g_c), *grads_d, **kw,
                              accumulate_x=acc, accumulate_kernel=acc, accumulate_recurrent=acc, accumulate_bias=acc)
    for d, h in zip(grads_d, grads_h, strict=True):
        np.testing.assert_allclose(d.copy_to_host(), h, rtol=1e-4, atol=1e-4)
