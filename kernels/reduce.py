"""Reductions over axes (sum, mean, max, min) and their backward.

Max/min backward splits the gradient equally between tied extremes, as TensorFlow does.
"""

from __future__ import annotations

import numpy as np

SUM, MEAN, MAX, MIN = range(4)
REDUCE = {"sum": SUM, "mean": MEAN, "max": MAX, "min": MIN}
_UFUNC = {SUM: np.sum, MEAN: np.mean, MAX: np.max, MIN: np.min}


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Sorted non-negative axes from None (all), an int or a sequence."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    bad = [int(a) for a in axes if not -max(ndim, 1) <= int(a) < max(ndim, 1)]
    if bad:
        raise ValueError(f"axis {bad[0]} is out of range for a tensor of rank {ndim} (valid: {-max(ndim, 1)} to "
                         f"{max(ndim, 1) - 1}).")
    return tuple(sorted({int(a) % ndim for a in axes})) if ndim else ()


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with the reduced axes set to 1 (keepdims)."""
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def reduce_forward_cpu(code: int, x: np.ndarray, axes: tuple[int, ...], y: np.ndarray) -> None:
    """Reduce `x` over `axes` into `y` (of the keepdims shape or the squeezed one: same size)."""
    r = _UFUNC[code](x, axis=axes, keepdims=True)
    np.copyto(y, r.reshape(y.shape), casting="same_kind")


def reduce_backward_cpu(code: int, x: np.ndarray, y: np.ndarray, axes: tuple[int, ...], dy: np.ndarray,
                        dx: np.ndarray, accumulate: bool = False) -> None:
    """``dx (+)=`` the gradient of `reduce_forward_cpu` (dy and y of the forward's output shape)."""
    ks = kept_shape(x.shape, axes)
    g = dy.reshape(ks)
    if code == MEAN:
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        g = g / max(count, 1)
    elif code in (MAX, MIN):
        hit = x == y.reshape(ks)
        g = hit * (g / hit.sum(axis=axes, keepdims=True))
    g = np.broadcast_to(g, x.shape)
    if accumulate:
        dx += g
    else:
        np.copyto(dx, g, casting="same_kind")


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import reduce as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
