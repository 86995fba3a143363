"""Block rearrangement kernels of NHWC images: `depth_to_space` (pixel shuffle) and `space_to_depth`, each
the other's gradient. With block size b, an input (N, H, W, b*b*C) and an output (N, H*b, W*b, C):

    out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C + c]

which is TensorFlow's channel order (NHWC; Keras 3's TensorFlow backend transposes channels-first tensors
to it). Both are pure permutations of the elements: the forward copies, the backward copies the gradient
the other way (adding into it when `accumulate`).

CUDA variants live in `kernels/gpu/space_depth.py` (imported on first use). Every function writes into
caller-provided arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["depth_to_space_cpu", "space_to_depth_cpu", "depth_to_space_cuda", "space_to_depth_cuda"]


def _check(deep_shape, wide_shape, block: int, who: str) -> None:
    n, h, w, d = deep_shape
    if (len(wide_shape) != 4 or block < 1 or d % (block * block)
            or tuple(wide_shape) != (n, h * block, w * block, d // (block * block))):
        raise ValueError(f"{who}: a deep NHWC array {tuple(deep_shape)} and a wide one {tuple(wide_shape)} are "
                         f"not each other's rearrangement by blocks of {block}; expected the wide one to be "
                         f"{(n, h * block, w * block, d // max(block * block, 1))}.")


def _blocks(deep, block: int):
    """The deep array's view (N, H, W, b, b, C): its channels split into the block's rows, columns, channels."""
    n, h, w, d = deep.shape
    return deep.reshape(n, h, w, block, block, d // (block * block))


def _store(dst, value, accumulate: bool) -> None:
    if accumulate:
        dst += value
    else:
        np.copyto(dst, value)


def depth_to_space_cpu(x, y, block: int, accumulate: bool = False) -> None:
    """``y (+)= depth_to_space(x)``: x (N, H, W, b*b*C) -> y (N, H*b, W*b, C)."""
    _check(x.shape, y.shape, block, "depth_to_space_cpu")
    n, hb, wb, c = y.shape
    moved = _blocks(x, block).transpose(0, 1, 3, 2, 4, 5)  # (N, H, b, W, b, C): rows then columns of blocks
    _store(y.reshape(n, hb // block, block, wb // block, block, c), moved, accumulate)


def space_to_depth_cpu(x, y, block: int, accumulate: bool = False) -> None:
    """``y (+)= space_to_depth(x)``: x (N, H*b, W*b, C) -> y (N, H, W, b*b*C)."""
    _check(y.shape, x.shape, block, "space_to_depth_cpu")
    n, hb, wb, c = x.shape
    moved = x.reshape(n, hb // block, block, wb // block, block, c).transpose(0, 1, 3, 2, 4, 5)
    _store(_blocks(y, block), moved, accumulate)


def depth_to_space_cuda(x, y, block: int, accumulate: bool = False) -> None:
    """The CUDA variant of `depth_to_space_cpu` on numba device arrays."""
    from kernels.gpu import space_depth as _gpu

    _check(x.shape, y.shape, block, "depth_to_space_cuda")
    _gpu.rearrange(x, y, block, True, accumulate)


def space_to_depth_cuda(x, y, block: int, accumulate: bool = False) -> None:
    """The CUDA variant of `space_to_depth_cpu` on numba device arrays."""
    from kernels.gpu import space_depth as _gpu

    _check(y.shape, x.shape, block, "space_to_depth_cuda")
    _gpu.rearrange(x, y, block, False, accumulate)
