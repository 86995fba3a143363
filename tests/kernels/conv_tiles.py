"""Spatial tiles of a convolution or pooling, for the tile tests of the CPU kernels and their CUDA twins.

`tile_input` derives, independently of the kernels, which input rows (or columns) one tile of output rows
needs and the explicit pads it must pass; `check_tiles` runs the whole op and its tiles through
backend-neutral callables and compares: every tile's output equals its slice of the whole output, the
parameter gradients summed over tiles equal the whole ones, and the tiles' input gradients added into
the matching rows of a zero array equal the whole input gradient.
"""

from __future__ import annotations

import numpy as np

from kernels._conv_geometry import window_geometry


def split(size: int, parts: int) -> list[tuple[int, int]]:
    """`parts` contiguous, nearly equal, non-empty ranges covering [0, size)."""
    bounds = [size * p // parts for p in range(parts + 1)]
    ranges = list(zip(bounds[:-1], bounds[1:], strict=True))
    if any(a >= b for a, b in ranges):
        raise ValueError(f"cannot split {size} output rows into {parts} non-empty tiles")
    return ranges


def tile_input(o0: int, o1: int, out: int, size: int, stride: int, window: int,
               pad: int) -> tuple[int, int, int, int]:
    """(first input row, end input row, local pad before, local pad after) of output rows [o0, o1).

    `out`, `size`, `stride`, `window` and `pad` (the global pad before) describe the whole op. The first
    tile starts at row 0 and the last ends at `size` (so it may carry trailing rows no window reads).
    """
    i0 = 0 if o0 == 0 else max(0, o0 * stride - pad)
    i1 = size if o1 == out else min(size, (o1 - 1) * stride - pad + window)
    before = max(0, pad - o0 * stride)
    after = max(0, (o1 - o0 - 1) * stride + window - (i1 - i0) - before)
    return i0, i1, before, after


def _take(a: np.ndarray, axis: int, start: int, stop: int) -> np.ndarray:
    index = [slice(None)] * a.ndim
    index[axis] = slice(start, stop)
    return a[tuple(index)]


def _close(got, want, what: str) -> None:
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * scale, err_msg=what)


def check_tiles(forward, backward, x, window, strides, padding, axis: int, parts: int, seed: int = 0) -> None:
    """Run the whole op and `parts` tiles of it along `axis` (1: H, 2: W) and compare (see the module).

    Args:
        forward: ``forward(x, padding) -> (out, saved)`` on host arrays; `saved` is the max-pool argmax
            (its flat indices are checked to be local to the tile) or None.
        backward: ``backward(x, out, saved, grad_out, padding) -> (grad_x, *parameter_grads)``.
        x: the whole (N, H, W, C) input. window, strides: pairs. padding: the whole op's padding.
    """
    _, h, w, _ = x.shape
    oh, ow, pt, pb, pl, pr = window_geometry(h, w, window, strides, padding)
    out, saved = forward(x, padding)
    assert out.shape[1:3] == (oh, ow), (out.shape, oh, ow)
    gy = np.random.default_rng(seed).standard_normal(out.shape).astype(x.dtype)
    grads = backward(x, out, saved, gy, padding)
    gx_sum = np.zeros_like(grads[0])
    param_sums = [np.zeros_like(g) for g in grads[1:]]
    d = axis - 1
    size, n_out, stride, win, pad = x.shape[axis], out.shape[axis], strides[d], window[d], (pt, pl)[d]
    for o0, o1 in split(n_out, parts):
        i0, i1, before, after = tile_input(o0, o1, n_out, size, stride, win, pad)
        pads = [(pt, pb), (pl, pr)]
        pads[d] = (before, after)
        tile_pads = (pads[0], pads[1])
        where = f"tile rows [{o0}, {o1}) of axis {axis}: input [{i0}, {i1}), padding {tile_pads}"
        xt = np.ascontiguousarray(_take(x, axis, i0, i1))
        yt, saved_t = forward(xt, tile_pads)
        _close(yt, _take(out, axis, o0, o1), f"forward, {where}")
        if saved_t is not None:  # max-pool argmax: flat (row * W_tile + col) inside the tile's own input
            wt = xt.shape[2]
            r, c = np.divmod(saved_t.astype(np.int64), wt)
            glob = (r + i0) * w + c if axis == 1 else r * w + c + i0
            np.testing.assert_array_equal(glob, _take(saved, axis, o0, o1), err_msg=f"argmax, {where}")
        gt = backward(xt, yt, saved_t, np.ascontiguousarray(_take(gy, axis, o0, o1)), tile_pads)
        _take(gx_sum, axis, i0, i1)[...] += gt[0]
        for total, g in zip(param_sums, gt[1:], strict=True):
            total += g
    _close(gx_sum, grads[0], f"grad input summed over {parts} tiles along axis {axis}")
    for k, (total, g) in enumerate(zip(param_sums, grads[1:], strict=True)):
        _close(total, g, f"parameter gradient {k} summed over {parts} tiles along axis {axis}")
