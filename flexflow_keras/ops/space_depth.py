"""`SpaceDepthOp`: the block rearrangements of an NHWC image, depth to space (pixel shuffle: keras.io's
EDSR and ESPCN upsample with it) and space to depth, and Keras 3's `keras.ops.depth_to_space` /
`space_to_depth`.

With block size b, depth_to_space takes (N, H, W, b*b*C) to (N, H*b, W*b, C), output pixel (h*b + i,
w*b + j) channel c reading input channel (i*b + j)*C + c (TensorFlow's order); space_to_depth is its
inverse. Each one's gradient is the other one (kernels/space_depth.py). Open heights and widths stay
open (EDSR's Input(shape=(None, None, 3))). Channels-first tensors are transposed to channels-last and
back around the op, as Keras 3's TensorFlow backend computes them, so their channel order is TensorFlow's
too. Parallel rule: the batch (a block moves data across height, width and channels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops._util import kernel
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import space_depth as _k

__all__ = ["depth_to_space", "space_to_depth"]


def _times(d, b):
    return None if d is None else d * b


def _over(d, b):
    return None if d is None else d // b


@dataclass(frozen=True)
class SpaceDepthOp(Op):
    """Rearrange blocks of an NHWC tensor; one input, no weights.

    Attributes:
        block_size: the block's side b (at least 2).
        to_space: True for depth_to_space (channels into b x b blocks), False for space_to_depth.
    """

    type_name: ClassVar[str] = "space_depth"
    block_size: int = 2
    to_space: bool = True

    @property
    def who(self) -> str:
        return "depth_to_space" if self.to_space else "space_to_depth"

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"{self.who} takes one input and no weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x, b = inputs[0], self.block_size
        if x.ndim != 4:
            raise ShapeError(f"{self.who} expects a 4-D (batch, height, width, channels) input, received shape "
                             f"{x.shape}.")
        n, h, w, c = x.shape
        if self.to_space:
            if c is not None and c % (b * b):
                raise ShapeError(f"{self.who}: the input's channels ({c}, shape {x.shape}) must be divisible by "
                                 f"block_size**2 = {b * b}.")
            return (TensorSpec((n, _times(h, b), _times(w, b), _over(c, b * b)), x.dtype),)
        if (h is not None and h % b) or (w is not None and w % b):
            raise ShapeError(f"{self.who}: the input's height and width ({h} and {w}, shape {x.shape}) must be "
                             f"divisible by block_size = {b}.")
        return (TensorSpec((n, _over(h, b), _over(w, b), _times(c, b * b)), x.dtype),)

    def backward_reads(self):
        return False, False  # the gradient is the inverse rearrangement of dy alone

    def forward(self, ctx, inputs, weights, outputs, saved, stats) -> None:
        kernel(_k, self.who, ctx)(inputs[0], outputs[0], self.block_size)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is not None:
            inverse = "space_to_depth" if self.to_space else "depth_to_space"
            kernel(_k, inverse, ctx)(grad_outputs[0], grad_inputs[0], self.block_size, ctx.acc_input(0))


def _rearrange(x, block_size, data_format, to_space: bool):
    from flexflow_keras.backend import standardize_data_format
    from flexflow_keras.ops import functional as F

    who = "depth_to_space" if to_space else "space_to_depth"
    data_format = standardize_data_format(data_format, f"ops.{who}")
    if isinstance(block_size, bool) or int(block_size) != block_size or block_size < 2:
        raise ValueError(f"ops.{who}: `block_size` must be at least 2. Received: block_size={block_size}")
    x = F._tensor(x, F._symbolic(x))
    if F._ndim(x) != 4:
        raise ValueError(f"ops.{who} requires a 4D input tensor. Received: x.shape={tuple(x.shape)}")
    op = SpaceDepthOp(int(block_size), to_space)
    if data_format == "channels_last":
        return apply_op(op, [x])
    return F.transpose(apply_op(op, [F.transpose(x, (0, 2, 3, 1))]), (0, 3, 1, 2))


def depth_to_space(x, block_size, data_format="channels_last"):
    """Rearrange channels into spatial blocks (pixel shuffle), as `keras.ops.depth_to_space`.

    Args:
        x: (N, H, W, C * block_size**2) tensor, or (N, C * block_size**2, H, W) with channels_first.
        block_size: the block's side, at least 2.
        data_format: "channels_last" (default) or "channels_first"; None reads `image_data_format()`.

    Example:
        >>> depth_to_space(np.zeros((1, 2, 2, 12), np.float32), 2).shape
        (1, 4, 4, 3)
    """
    return _rearrange(x, block_size, data_format, True)


def space_to_depth(x, block_size, data_format="channels_last"):
    """Rearrange spatial blocks into channels, the inverse of `depth_to_space`, as `keras.ops.space_to_depth`.

    Args:
        x: (N, H, W, C) tensor with H and W divisible by block_size (or (N, C, H, W) with channels_first).
        block_size: the block's side, at least 2.
        data_format: "channels_last" (default) or "channels_first"; None reads `image_data_format()`.

    Example:
        >>> space_to_depth(np.zeros((1, 4, 4, 3), np.float32), 2).shape
        (1, 2, 2, 12)
    """
    return _rearrange(x, block_size, data_format, False)
