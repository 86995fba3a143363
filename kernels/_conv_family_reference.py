"""Float64 NumPy references for the convolution-family kernels beyond conv2d/pool2d (tests only): conv1d
(strides, dilation, causal padding), conv2d_transpose, depthwise conv2d, nearest/bilinear resize and
spatial pad/crop.

Written as plainly as possible (loops over taps and pixels, scatter-adds) so they share no code path with
the fast kernels. Each backward is the exact adjoint of its forward; tests check that with random inner
products, which makes the references themselves testable.
"""

from __future__ import annotations

import numpy as np

from kernels._conv_geometry import out_size, pads


def _f64(*arrays):
    return tuple(None if a is None else np.asarray(a, np.float64) for a in arrays)


def conv1d_pads(width: int, window: int, stride: int, padding: str) -> tuple[int, int]:
    """(left, right) pads of a 1-D window op: "valid", "same" (TensorFlow's split) or "causal" (all left)."""
    if padding == "causal":
        return window - 1, 0
    return pads(width, window, stride, padding)


def conv1d_reference(x, kernel, bias=None, stride=1, padding="valid", dilation=1):
    """y (N, OW, CO) of x (N, W, C) and kernel (K, C, CO) with `dilation` and padding valid/same/causal."""
    x, k, bias = _f64(x, kernel, bias)
    n, w, _ = x.shape
    taps, _, co = k.shape
    keff = (taps - 1) * dilation + 1
    left, right = conv1d_pads(w, keff, stride, padding)
    ow = (w + left + right - keff) // stride + 1
    y = np.zeros((n, ow, co)) + (0.0 if bias is None else bias)
    for j in range(ow):
        for t in range(taps):
            iw = j * stride + t * dilation - left
            if 0 <= iw < w:
                y[:, j] += x[:, iw] @ k[t]
    return y


def conv1d_backward_reference(x, kernel, grad_y, stride=1, padding="valid", dilation=1):
    """(grad_x, grad_kernel, grad_bias) of `conv1d_reference`."""
    x, k, gy = _f64(x, kernel, grad_y)
    n, w, _ = x.shape
    taps = k.shape[0]
    keff = (taps - 1) * dilation + 1
    left, _ = conv1d_pads(w, keff, stride, padding)
    gx, gk = np.zeros_like(x), np.zeros_like(k)
    for j in range(gy.shape[1]):
        for t in range(taps):
            iw = j * stride + t * dilation - left
            if 0 <= iw < w:
                gx[:, iw] += gy[:, j] @ k[t].T
                gk[t] += x[:, iw].T @ gy[:, j]
    return gx, gk, gy.sum(axis=(0, 1))


def transpose_out_size(size: int, window: int, stride: int, padding: str, output_padding) -> int:
    """Keras' output length of a transposed convolution along one dim."""
    if padding == "valid":
        extra = max(window, stride) - window if output_padding is None else output_padding
        return (size - 1) * stride + window + extra
    if output_padding is None:
        return size * stride
    return (size - 1) * stride + window % 2 + output_padding


def conv2d_transpose_reference(x, kernel, bias=None, strides=(1, 1), padding="valid", output_padding=None):
    """y (N, OH, OW, F) of x (N, H, W, C) and kernel (KH, KW, F, C): each input pixel scatters
    ``x[h, w] @ kernel[a, b].T`` to output pixel (h*sh + a - top, w*sw + b - left)."""
    x, k, bias = _f64(x, kernel, bias)
    n, h, w, _ = x.shape
    kh, kw, f, _ = k.shape
    op = (None, None) if output_padding is None else output_padding
    oh = transpose_out_size(h, kh, strides[0], padding, op[0])
    ow = transpose_out_size(w, kw, strides[1], padding, op[1])
    top, left = pads(oh, kh, strides[0], padding)[0], pads(ow, kw, strides[1], padding)[0]
    y = np.zeros((n, oh, ow, f))
    for i in range(h):
        for j in range(w):
            for a in range(kh):
                for b in range(kw):
                    r, c = i * strides[0] + a - top, j * strides[1] + b - left
                    if 0 <= r < oh and 0 <= c < ow:
                        y[:, r, c] += x[:, i, j] @ k[a, b].T
    return y + (0.0 if bias is None else bias)


def conv2d_transpose_backward_reference(x, kernel, grad_y, strides=(1, 1), padding="valid"):
    """(grad_x, grad_kernel, grad_bias) of `conv2d_transpose_reference` (the output size comes from grad_y)."""
    x, k, gy = _f64(x, kernel, grad_y)
    n, h, w, _ = x.shape
    kh, kw, _, _ = k.shape
    oh, ow = gy.shape[1:3]
    top, left = pads(oh, kh, strides[0], padding)[0], pads(ow, kw, strides[1], padding)[0]
    gx, gk = np.zeros_like(x), np.zeros_like(k)
    for i in range(h):
        for j in range(w):
            for a in range(kh):
                for b in range(kw):
                    r, c = i * strides[0] + a - top, j * strides[1] + b - left
                    if 0 <= r < oh and 0 <= c < ow:
                        gx[:, i, j] += gy[:, r, c] @ k[a, b]
                        gk[a, b] += gy[:, r, c].T @ x[:, i, j]
    return gx, gk, gy.sum(axis=(0, 1, 2))


def _dw_taps(x, k, strides, padding, dilation):
    """(out row, out col, tap row, tap col, in row, in col) of every tap that reads inside the input."""
    _, h, w, _ = x.shape
    kh, kw = k.shape[:2]
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh, ow = out_size(h, eh, strides[0], padding), out_size(w, ew, strides[1], padding)
    top, left = pads(h, eh, strides[0], padding)[0], pads(w, ew, strides[1], padding)[0]
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r, q = i * strides[0] + a * dilation[0] - top, j * strides[1] + b * dilation[1] - left
                    if 0 <= r < h and 0 <= q < w:
                        yield i, j, a, b, r, q


def depthwise_conv2d_reference(x, kernel, bias=None, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """y[..., c*M + m] = sum over taps of x[..., c] * kernel[a, b, c, m] (+ bias), kernel (KH, KW, C, M)."""
    x, k, bias = _f64(x, kernel, bias)
    n, h, w, c = x.shape
    kh, kw, _, dm = k.shape
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh, ow = out_size(h, eh, strides[0], padding), out_size(w, ew, strides[1], padding)
    y = np.zeros((n, oh, ow, c, dm))
    for i, j, a, b, r, q in _dw_taps(x, k, strides, padding, dilation):
        y[:, i, j] += x[:, r, q, :, None] * k[a, b]
    y = y.reshape(n, oh, ow, c * dm)
    return y + (0.0 if bias is None else bias)


def depthwise_conv2d_backward_reference(x, kernel, grad_y, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """(grad_x, grad_kernel, grad_bias) of `depthwise_conv2d_reference`."""
    x, k, gy = _f64(x, kernel, grad_y)
    n, _, _, c = x.shape
    dm = k.shape[3]
    gy5 = gy.reshape(gy.shape[:3] + (c, dm))
    gx, gk = np.zeros_like(x), np.zeros_like(k)
    for i, j, a, b, r, q in _dw_taps(x, k, strides, padding, dilation):
        gx[:, r, q] += (gy5[:, i, j] * k[a, b]).sum(axis=-1)
        gk[a, b] += (x[:, r, q, :, None] * gy5[:, i, j]).sum(axis=0)
    return gx, gk, gy.sum(axis=(0, 1, 2))


def resize_matrix(in_size: int, factor: int, mode: str) -> np.ndarray:
    """(in_size * factor, in_size) interpolation matrix: nearest repeats, bilinear uses half-pixel centres
    (TensorFlow's resize: source coordinate (i + 0.5) / factor - 0.5, clamped to the edges)."""
    m = np.zeros((in_size * factor, in_size))
    for i in range(in_size * factor):
        if mode == "nearest":
            m[i, i // factor] = 1.0
            continue
        src = (i + 0.5) / factor - 0.5
        lo = int(np.floor(src))
        frac = src - lo
        m[i, min(max(lo, 0), in_size - 1)] += 1.0 - frac
        m[i, min(max(lo + 1, 0), in_size - 1)] += frac
    return m


def resize2d_reference(x, size, mode="nearest"):
    """(N, H*fh, W*fw, C) upsampling of x (N, H, W, C)."""
    (x,) = _f64(x)
    mh, mw = resize_matrix(x.shape[1], size[0], mode), resize_matrix(x.shape[2], size[1], mode)
    return np.einsum("ih,jw,nhwc->nijc", mh, mw, x)


def resize2d_backward_reference(grad_y, in_shape, size, mode="nearest"):
    """grad_x of `resize2d_reference`."""
    (gy,) = _f64(grad_y)
    mh, mw = resize_matrix(in_shape[1], size[0], mode), resize_matrix(in_shape[2], size[1], mode)
    return np.einsum("ih,jw,nijc->nhwc", mh, mw, gy)


def pad2d_reference(x, pad_h, pad_w):
    """Zero-pad (positive) or crop (negative) the H and W dims by (before, after) pairs."""
    (x,) = _f64(x)
    for axis, (before, after) in ((1, pad_h), (2, pad_w)):
        x = np.pad(x, [(max(before, 0), max(after, 0)) if d == axis else (0, 0) for d in range(4)])
        stop = x.shape[axis] - max(-after, 0)
        x = np.take(x, np.arange(max(-before, 0), stop), axis=axis)
    return x


def pad2d_backward_reference(grad_y, pad_h, pad_w):
    """grad_x of `pad2d_reference`: the opposite pad/crop of grad_y."""
    return pad2d_reference(grad_y, (-pad_h[0], -pad_h[1]), (-pad_w[0], -pad_w[1]))
