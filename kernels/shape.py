"""Data-movement kernels: reshape (a copy into the output buffer), transpose and concatenate."""

from __future__ import annotations

import numpy as np


def copy_forward_cpu(x: np.ndarray, y: np.ndarray) -> None:
    """``y = x`` reshaped to y's shape (reshape, flatten, expand_dims, squeeze)."""
    np.copyto(y, np.reshape(x, y.shape))


def copy_backward_cpu(dy: np.ndarray, dx: np.ndarray, accumulate: bool = False) -> None:
    """The gradient of a reshape: dy reshaped back."""
    g = np.reshape(dy, dx.shape)
    if accumulate:
        dx += g
    else:
        np.copyto(dx, g)


def transpose_forward_cpu(x: np.ndarray, perm: tuple[int, ...], y: np.ndarray) -> None:
    """``y = x.transpose(perm)``."""
    np.copyto(y, np.transpose(x, perm))


def transpose_backward_cpu(dy: np.ndarray, perm: tuple[int, ...], dx: np.ndarray, accumulate: bool = False) -> None:
    """``dx (+)= dy.transpose(inverse(perm))``."""
    g = np.transpose(dy, np.argsort(perm))
    if accumulate:
        dx += g
    else:
        np.copyto(dx, g)


def concat_forward_cpu(xs: list[np.ndarray], axis: int, y: np.ndarray) -> None:
    """``y = concatenate(xs, axis)``."""
    np.concatenate(xs, axis=axis, out=y)


def concat_backward_cpu(dy: np.ndarray, axis: int, sizes: list[int], dxs: list[np.ndarray | None],
                        accumulate: tuple[bool, ...] = ()) -> None:
    """Slice dy back into each input's gradient; `sizes` are the inputs' extents along `axis`."""
    axis = axis % dy.ndim
    start = 0
    for i, (size, dx) in enumerate(zip(sizes, dxs, strict=True)):
        if dx is not None:
            index = [slice(None)] * dy.ndim
            index[axis] = slice(start, start + size)
            g = dy[tuple(index)]
            if i < len(accumulate) and accumulate[i]:
                dx += g
            else:
                np.copyto(dx, g)
        start += size


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import shape as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
