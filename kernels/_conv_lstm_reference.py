"""Float64 NumPy reference of the convolutional LSTM (tests only): Keras' cell written step by step on the
plain convolution references (`_conv_family_reference.conv1d_reference`, `_conv_reference.conv2d_reference`,
`_conv3d_reference.conv3d_reference`), sharing no code with `kernels.conv_lstm`. Its gradients are taken by
central differences of `conv_lstm_loss`."""

from __future__ import annotations

import numpy as np

from kernels import reference as R


def _conv(x, k, b, strides, padding, dilation):
    rank = x.ndim - 2
    if rank == 1:
        from kernels._conv_family_reference import conv1d_reference

        return conv1d_reference(x, k, b, strides[0], padding, dilation[0])
    if rank == 2:
        from kernels._conv_reference import conv2d_reference

        return conv2d_reference(x, k, b, strides, padding, dilation=dilation)
    from kernels._conv3d_reference import conv3d_reference

    return conv3d_reference(x, k, b, strides, padding, dilation)


def conv_lstm_reference(x, kernel, recurrent_kernel, bias, strides, padding, dilation, activation="tanh",
                        recurrent_activation="sigmoid", go_backwards=False):
    """(every step's h (N, T, *spatial, F) in the order processed, the last h, the last c), float64."""
    x, k, rk = (np.asarray(a, np.float64) for a in (x, kernel, recurrent_kernel))
    ones = (1,) * (x.ndim - 3)
    steps = x.shape[1]
    f = k.shape[-1] // 4
    hs, h, c = [], None, None
    for t in range(steps):
        z = _conv(x[:, steps - 1 - t if go_backwards else t], k, bias, strides, padding, dilation)
        if h is not None:
            z = z + _conv(h, rk, None, ones, "same", ones)
        i, fg, g, o = (z[..., j * f:(j + 1) * f] for j in range(4))
        i, fg, o = (R.activation(recurrent_activation, v) for v in (i, fg, o))
        g = R.activation(activation, g)
        c = i * g if c is None else fg * c + i * g
        h = o * R.activation(activation, c)
        hs.append(h)
    return np.stack(hs, axis=1), h, c


def conv_lstm_loss(weights, x, kernel, recurrent_kernel, bias, **kw):
    """sum(seq * w0) + sum(h * w1) + sum(c * w2): a scalar whose gradients reach every output."""
    seq, h, c = conv_lstm_reference(x, kernel, recurrent_kernel, bias, **kw)
    return float((seq * weights[0]).sum() + (h * weights[1]).sum() + (c * weights[2]).sum())
