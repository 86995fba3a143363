"""Deep transposed convolutions (KH*KW*F >= PHASE_DK_MIN_DEPTH) take their kernel gradient per stride phase
(`_conv_taps.kernel_grad`): equal to the im2col path's, bit for bit, and to a float64 reference, with and
without accumulation, with an activation, for "same" and "valid" padding and strides 1, 2 and 3."""

import numpy as np
import pytest

from kernels import conv_transpose2d as CT


def _reference_grad_kernel(x, gy, kh, kw, s, pad_top, pad_left):
    """d(sum(gy * convT(x, k)))/dk in float64: out[n, i*s + a - pt, j*s + b - pl, f] += x[n, i, j, c] k[a, b, f, c]."""
    n, h, w, c = x.shape
    _, oh, ow, f = gy.shape
    gk = np.zeros((kh, kw, f, c))
    for a in range(kh):
        for b in range(kw):
            for i in range(h):
                for j in range(w):
                    oi, oj = i * s + a - pad_top, j * s + b - pad_left
                    if 0 <= oi < oh and 0 <= oj < ow:
                        gk[a, b] += gy[:, oi, oj, :].astype(np.float64).T @ x[:, i, j, :].astype(np.float64)
    return gk


@pytest.mark.parametrize("stride, padding, kernel", [(2, "same", 4), (1, "same", 3), (3, "valid", 4), (2, "valid", 5)])
def test_phase_kernel_gradient_equals_im2col(monkeypatch, stride, padding, kernel):
    rng = np.random.default_rng(stride * 10 + kernel)
    filters = -(-CT.PHASE_DK_MIN_DEPTH // (kernel * kernel))
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    k = (rng.standard_normal((kernel, kernel, filters, 5)) * 0.1).astype(np.float32)
    oh = CT.transpose_output_length(3, kernel, stride, padding)
    ow = CT.transpose_output_length(4, kernel, stride, padding)
    gy = rng.standard_normal((2, oh, ow, filters)).astype(np.float32)
    start = rng.standard_normal(k.shape).astype(np.float32)

    def grads(accumulate, activation=None):
        out = np.empty((2, oh, ow, filters), np.float32)
        pre = np.empty_like(out)
        CT.conv2d_transpose_forward_cpu(x, k, None, out, stride, padding, activation, pre)
        gk = start.copy() if accumulate else np.full(k.shape, np.nan, np.float32)
        CT.conv2d_transpose_backward_cpu(x, k, gy, None, gk, None, stride, padding, accumulate_kernel=accumulate,
                                         activation=activation, out=out, pre_activation=pre)
        return gk

    phase = {(acc, act): grads(acc, act) for acc in (False, True) for act in (None, "tanh")}
    monkeypatch.setattr(CT, "PHASE_DK_MIN_DEPTH", 1 << 40)  # the im2col path
    for (acc, act), got in phase.items():
        assert np.array_equal(got, grads(acc, act)), (acc, act)
    if padding == "same":
        pt = max(0, (3 - 1) * stride + kernel - oh) // 2
        pl = max(0, (4 - 1) * stride + kernel - ow) // 2
    else:
        pt = pl = 0
    want = _reference_grad_kernel(x, gy, kernel, kernel, stride, pt, pl)
    np.testing.assert_allclose(phase[(False, None)], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(phase[(True, None)], want + start, rtol=1e-4, atol=1e-4)
