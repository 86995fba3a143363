"""Float64 NumPy references for the convolution and pooling kernels (tests only).

Written as plainly as possible (a loop over window taps, each a matrix product or an elementwise op) so
they share no code path with the fast kernels in `conv2d.py` and `pool2d.py`. Activations come from
`kernels.reference` (float64; gradients by central differences).
"""

from __future__ import annotations

import numpy as np

from kernels import reference as _ref
from kernels._conv_geometry import window_geometry


def _padded(x: np.ndarray, pt: int, pb: int, pl: int, pr: int, value: float = 0.0) -> np.ndarray:
    return np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=value)


def _window(kernel_shape, dilation):
    """The (dilated) window a (kh, kw, ...) kernel spans: (k - 1) * d + 1 per dim."""
    return tuple((k - 1) * d + 1 for k, d in zip(kernel_shape[:2], dilation, strict=True))


def _pre_activation(x, kernel, bias, strides, padding, dilation=(1, 1)):
    x = np.asarray(x, np.float64)
    k = np.asarray(kernel, np.float64)
    n, h, w, _ = x.shape
    kh_, kw_, _, co = k.shape
    sh, sw = strides
    dh, dw = dilation
    oh, ow, pt, pb, pl, pr = window_geometry(h, w, _window(k.shape, dilation), strides, padding)
    xp = _padded(x, pt, pb, pl, pr)
    z = np.zeros((n, oh, ow, co))
    for i in range(kh_):
        for j in range(kw_):
            z += xp[:, i * dh:i * dh + sh * oh:sh, j * dw:j * dw + sw * ow:sw, :] @ k[i, j]
    if bias is not None:
        z += np.asarray(bias, np.float64)
    return z


def conv2d_reference(x, kernel, bias=None, strides=(1, 1), padding="valid", activation="linear",
                     dilation=(1, 1)):
    """y = activation(conv2d(x, kernel) + bias), NHWC, kernel (kh, kw, cin, cout), float64; tap (i, j) of
    the kernel reads input offset (i * dilation[0], j * dilation[1]) of the window."""
    return _ref.activation(activation or "linear", _pre_activation(x, kernel, bias, strides, padding, dilation))


def conv2d_backward_reference(x, kernel, bias, grad_y, strides=(1, 1), padding="valid", activation="linear",
                              dilation=(1, 1)):
    """(grad_x, grad_kernel, grad_bias) of `conv2d_reference` in float64."""
    x = np.asarray(x, np.float64)
    k = np.asarray(kernel, np.float64)
    n, h, w, _ = x.shape
    kh_, kw_, _, _ = k.shape
    sh, sw = strides
    dh, dw = dilation
    oh, ow, pt, pb, pl, pr = window_geometry(h, w, _window(k.shape, dilation), strides, padding)
    z = _pre_activation(x, kernel, bias, strides, padding, dilation)
    name = activation or "linear"
    dz = np.asarray(grad_y, np.float64) if name == "linear" else _ref.activation_grad(name, z, grad_y)
    xp = _padded(x, pt, pb, pl, pr)
    dxp = np.zeros_like(xp)
    dk = np.zeros_like(k)
    for i in range(kh_):
        for j in range(kw_):
            rows, cols = slice(i * dh, i * dh + sh * oh, sh), slice(j * dw, j * dw + sw * ow, sw)
            dk[i, j] = np.einsum("nhwc,nhwo->co", xp[:, rows, cols, :], dz)
            dxp[:, rows, cols, :] += dz @ k[i, j].T
    dx = dxp[:, pt:pt + h, pl:pl + w, :]
    return dx, dk, dz.sum(axis=(0, 1, 2))


def _windows(h, w, pool_size, strides, padding):
    oh, ow, pt, _, pl, _ = window_geometry(h, w, pool_size, strides, padding)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - pt, j * strides[1] - pl
            rows = range(max(r0, 0), min(r0 + pool_size[0], h))
            cols = range(max(c0, 0), min(c0 + pool_size[1], w))
            yield i, j, rows, cols


def pool2d_reference(x, pool_size, strides, padding="valid", mode="max"):
    """Max or average pooling in float64; windows cover only valid (unpadded) elements, like TF."""
    x = np.asarray(x, np.float64)
    n, h, w, c = x.shape
    oh, ow, *_ = window_geometry(h, w, pool_size, strides, padding)
    y = np.zeros((n, oh, ow, c))
    for i, j, rows, cols in _windows(h, w, pool_size, strides, padding):
        win = x[:, rows.start:rows.stop, cols.start:cols.stop, :]
        y[:, i, j, :] = win.max(axis=(1, 2)) if mode == "max" else win.mean(axis=(1, 2))
    return y


def pool2d_backward_reference(x, grad_y, pool_size, strides, padding="valid", mode="max"):
    """grad_x in float64; max sends each window's gradient to its first maximum in row-major order."""
    x = np.asarray(x, np.float64)
    gy = np.asarray(grad_y, np.float64)
    n, h, w, c = x.shape
    gx = np.zeros_like(x)
    for i, j, rows, cols in _windows(h, w, pool_size, strides, padding):
        win = x[:, rows.start:rows.stop, cols.start:cols.stop, :]
        if mode == "max":
            flat = win.reshape(n, -1, c)
            first = flat.argmax(axis=1)
            wr, wc = np.unravel_index(first, (len(rows), len(cols)))
            for b in range(n):
                for ch in range(c):
                    gx[b, rows.start + wr[b, ch], cols.start + wc[b, ch], ch] += gy[b, i, j, ch]
        else:
            gx[:, rows.start:rows.stop, cols.start:cols.stop, :] += gy[:, i:i + 1, j:j + 1, :] / (len(rows) * len(cols))
    return gx


def global_pool2d_reference(x, mode="avg"):
    """(N, C) global average or max over the spatial dims, float64."""
    x = np.asarray(x, np.float64)
    return x.max(axis=(1, 2)) if mode == "max" else x.mean(axis=(1, 2))


def global_pool2d_backward_reference(x, grad_y, mode="avg"):
    """grad_x for global pooling (grad_y of shape (N, C)); max shares it equally among the positions equal to
    the maximum (TensorFlow's reduce_max gradient, which Keras 3's global max poolings take); a NaN
    maximum equals nothing, and its 0 / 0 share is NaN everywhere, as TensorFlow's."""
    x = np.asarray(x, np.float64)
    gy = np.asarray(grad_y, np.float64).reshape(x.shape[0], x.shape[3])
    if mode == "avg":
        h, w = x.shape[1:3]
        return np.broadcast_to(gy[:, None, None, :] / (h * w), x.shape).copy()
    hit = x == x.max(axis=(1, 2), keepdims=True)
    with np.errstate(invalid="ignore"):
        return hit / hit.sum(axis=(1, 2), keepdims=True) * gy[:, None, None, :]
