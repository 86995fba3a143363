"""Float64 NumPy references for the 3-D convolution and pooling kernels (tests only).

Written as plain loops over output voxels and taps, sharing no code path with `kernels.conv3d` (which
folds the depth into the channels of the 2-D kernels). Each backward is the adjoint of its forward, which
the tests check with random inner products.
"""

from __future__ import annotations

import itertools

import numpy as np

from kernels._conv_geometry import out_size, pads


def _geometry(shape, window, strides, padding):
    """Per spatial dim: (output size, front pad)."""
    return [(out_size(s, k, st, padding), pads(s, k, st, padding)[0])
            for s, k, st in zip(shape[1:4], window, strides, strict=True)]


def _taps(x_shape, o, window_pos, geo, strides, dilation):
    """The input voxel (d, h, w) a window position reads, or None outside the input."""
    idx = []
    for dim, (oi, ki) in enumerate(zip(o, window_pos, strict=True)):
        i = oi * strides[dim] + ki * dilation[dim] - geo[dim][1]
        if not 0 <= i < x_shape[1 + dim]:
            return None
        idx.append(i)
    return tuple(idx)


def conv3d_reference(x, kernel, bias=None, strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1)):
    """y (N, OD, OH, OW, CO) of x (N, D, H, W, C) and kernel (KD, KH, KW, C, CO)."""
    x, k = np.asarray(x, np.float64), np.asarray(kernel, np.float64)
    window = [(kk - 1) * dl + 1 for kk, dl in zip(k.shape[:3], dilation, strict=True)]
    geo = _geometry(x.shape, window, strides, padding)
    y = np.zeros((x.shape[0], *(g[0] for g in geo), k.shape[4]))
    for o in itertools.product(*(range(g[0]) for g in geo)):
        for t in itertools.product(*(range(kk) for kk in k.shape[:3])):
            i = _taps(x.shape, o, t, geo, strides, dilation)
            if i is not None:
                y[(slice(None), *o)] += x[(slice(None), *i)] @ k[t]
    return y if bias is None else y + np.asarray(bias, np.float64)


def conv3d_backward_reference(x, kernel, grad_out, strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1)):
    """(grad_x, grad_kernel, grad_bias) of `conv3d_reference` for the output gradient `grad_out`."""
    x, k, gy = (np.asarray(a, np.float64) for a in (x, kernel, grad_out))
    window = [(kk - 1) * dl + 1 for kk, dl in zip(k.shape[:3], dilation, strict=True)]
    geo = _geometry(x.shape, window, strides, padding)
    gx, gk = np.zeros_like(x), np.zeros_like(k)
    for o in itertools.product(*(range(g[0]) for g in geo)):
        g = gy[(slice(None), *o)]
        for t in itertools.product(*(range(kk) for kk in k.shape[:3])):
            i = _taps(x.shape, o, t, geo, strides, dilation)
            if i is not None:
                gx[(slice(None), *i)] += g @ k[t].T
                gk[t] += x[(slice(None), *i)].T @ g
    return gx, gk, gy.sum(axis=(0, 1, 2, 3))


def pool3d_reference(x, pool_size, strides, padding="valid", mode="max"):
    """(y, winners): the 3-D pool of x (N, D, H, W, C) and, for "max", the flat (d, h, w) index of each
    output's winner (the first maximum in (d, h, w) order); TensorFlow's "same" average counts only the
    window's voxels inside the input."""
    x = np.asarray(x, np.float64)
    n, _, _, _, c = x.shape
    geo = _geometry(x.shape, pool_size, strides, padding)
    y = np.zeros((n, *(g[0] for g in geo), c))
    win = np.zeros(y.shape, np.int64)
    for o in itertools.product(*(range(g[0]) for g in geo)):
        cells = [i for t in itertools.product(*(range(p) for p in pool_size))
                 if (i := _taps(x.shape, o, t, geo, strides, (1, 1, 1))) is not None]
        vals = np.stack([x[(slice(None), *i)] for i in cells])  # (cells, N, C)
        if mode == "max":
            best = vals.argmax(axis=0)
            y[(slice(None), *o)] = vals.max(axis=0)
            flat = np.array([np.ravel_multi_index(i, x.shape[1:4]) for i in cells])
            win[(slice(None), *o)] = flat[best]
        else:
            y[(slice(None), *o)] = vals.mean(axis=0)
    return y, win


def pool3d_backward_reference(x, grad_out, pool_size, strides, padding="valid", mode="max"):
    """The gradient of `pool3d_reference` with respect to x, as TensorFlow takes it: a max window's gradient
    goes to every element equal to its maximum."""
    x, gy = np.asarray(x, np.float64), np.asarray(grad_out, np.float64)
    geo = _geometry(x.shape, pool_size, strides, padding)
    gx = np.zeros_like(x)
    for o in itertools.product(*(range(g[0]) for g in geo)):
        g = gy[(slice(None), *o)]
        cells = [i for t in itertools.product(*(range(p) for p in pool_size))
                 if (i := _taps(x.shape, o, t, geo, strides, (1, 1, 1))) is not None]
        if mode == "max":  # TensorFlow's MaxPool3DGrad: every element equal to the maximum gets it
            top = np.max([x[(slice(None), *i)] for i in cells], axis=0)
            for i in cells:
                gx[(slice(None), *i)] += np.where(x[(slice(None), *i)] == top, g, 0.0)
        else:
            for i in cells:
                gx[(slice(None), *i)] += g / len(cells)
    return gx


def conv3d_transpose_reference(x, kernel, bias, out_shape, strides=(1, 1, 1), padding="valid"):
    """y of shape `out_shape` (N, OD, OH, OW, F) of the transposed convolution of x (N, D, H, W, C) by kernel
    (KD, KH, KW, F, C): the input-gradient of `conv3d_reference` over an input of `out_shape`."""
    y = conv3d_backward_reference(np.zeros(out_shape), kernel, x, strides, padding)[0]
    return y if bias is None else y + np.asarray(bias, np.float64)


def conv3d_transpose_backward_reference(x, kernel, grad_out, strides=(1, 1, 1), padding="valid"):
    """(grad_x, grad_kernel, grad_bias) of `conv3d_transpose_reference`."""
    gy = np.asarray(grad_out, np.float64)
    gx = conv3d_reference(gy, kernel, None, strides, padding)
    gk = conv3d_backward_reference(gy, kernel, x, strides, padding)[1]
    return gx, gk, gy.sum(axis=(0, 1, 2, 3))
