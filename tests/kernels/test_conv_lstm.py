"""kernels.conv_lstm on the CPU against the float64 reference of kernels/_conv_lstm_reference.py: 1-D to 3-D,
the whole sequence or the last step, go_backwards, other activations, strides and dilation; the backward by
central differences of the reference, overwrite and accumulate."""

import numpy as np
import pytest

from kernels import _conv_lstm_reference as R
from kernels import conv_lstm as K

RNG = np.random.default_rng(5)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


CASES = [  # rank, x shape, kernel taps, strides, padding, dilation, seq, backwards, act, rec
    (2, (2, 3, 5, 4, 2), (3, 3), (1, 1), "same", (1, 1), True, False, "tanh", "sigmoid"),
    (2, (1, 4, 5, 6, 2), (2, 3), (2, 1), "valid", (1, 1), False, True, "tanh", "hard_sigmoid"),
    (2, (2, 3, 6, 5, 1), (3, 2), (1, 1), "same", (2, 1), True, True, "relu", "sigmoid"),
    (1, (2, 4, 7, 2), (3,), (1,), "same", (1,), True, False, "tanh", "sigmoid"),
    (3, (1, 3, 3, 4, 4, 2), (2, 2, 3), (1, 1, 1), "same", (1, 1, 1), False, False, "tanh", "sigmoid"),
]


def _run(case, accumulate):
    rank, xs, taps, strides, padding, dilation, seq, back, act, rec = case
    f = 2
    x = rand(*xs)
    k = rand(*taps, xs[-1], 4 * f, scale=0.4)
    rk = rand(*taps if padding == "same" else taps, f, 4 * f, scale=0.4)
    b = rand(4 * f, scale=0.3)
    kw = dict(strides=strides, padding=padding, dilation=dilation, activation=act, recurrent_activation=rec,
              go_backwards=back)
    want_seq, want_h, want_c = R.conv_lstm_reference(x, k, rk, b, **kw)
    n, steps = xs[:2]
    out = np.full(want_seq.shape if seq else want_h.shape, np.nan, np.float32)
    h, c = np.full(want_h.shape, np.nan, np.float32), np.full(want_c.shape, np.nan, np.float32)
    spatial = want_h.shape[1:-1]
    saved = tuple(np.full((n, steps, *spatial, m), np.nan, np.float32) for m in (4 * f, f, f))
    K.conv_lstm_forward_cpu(x, k, rk, b, out, h, c, saved, **kw)
    np.testing.assert_allclose(out, want_seq if seq else want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-5)
    w = [rand(*want_seq.shape) if seq else np.zeros(want_seq.shape, np.float32), rand(*want_h.shape),
         rand(*want_c.shape)]
    grad_out = w[0] if seq else w[1]
    start = 1.0 if accumulate else np.nan
    bufs = [np.full(a.shape, start, np.float32) for a in (x, k, rk, b)]
    # not seq: the output is the last h, whose gradient adds to grad_h's
    K.conv_lstm_backward_cpu(x, k, rk, saved, grad_out, w[1], w[2], *bufs, **kw, accumulate_x=accumulate,
                             accumulate_kernel=accumulate, accumulate_recurrent=accumulate, accumulate_bias=accumulate)
    weights = [w[0], w[1] * (1 if seq else 2), w[2]]
    args = dict(x=x, kernel=k, recurrent_kernel=rk, bias=b)
    for got, name in zip(bufs, args, strict=True):

        def loss(v, name=name):
            return np.float64(R.conv_lstm_loss(weights, **{**args, name: v}, **kw))

        want = R.R.numerical_grad(loss, args[name], np.ones(()), h=1e-4)
        np.testing.assert_allclose(got - (1.0 if accumulate else 0.0), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("case", CASES, ids=[f"rank{c[0]}-{c[4]}-seq{c[6]}-back{c[7]}-{c[8]}" for c in CASES])
def test_conv_lstm_matches_reference(case):
    _run(case, accumulate=False)


def test_conv_lstm_accumulates():
    _run(CASES[0], accumulate=True)
