"""Spatial reshaping ops of channels-last images and sequences: `Pad2DOp` (zero-padding with positive
pads, cropping with negative ones: ZeroPadding1D/2D, Cropping1D/2D) and `Resize2DOp` (UpSampling1D/2D,
nearest or bilinear), with their functional forms `spatial_pad` and `upsample`.

Both take (N, H, W, C) or (N, W, C) inputs (the latter run on the (N, 1, W, C) view). Kernels:
`kernels.spatial`. Parallel rules: the batch and the channels (the spatial dims are whole; the input
follows the output's tile by broadcasting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import spatial as _k


def _as4(a):
    return a if a.ndim == 4 else a.reshape(a.shape[0], 1, a.shape[1], a.shape[2])


def _check_rank(x: TensorSpec, who: str) -> None:
    if x.ndim not in (3, 4):
        raise ShapeError(f"{who} expects a (batch, steps, channels) or (batch, height, width, channels) input, "
                         f"received shape {x.shape}.")


def _spatial(x: TensorSpec) -> list:
    """The (height, width) of an input, height 1 for a sequence."""
    return [1, x.shape[1]] if x.ndim == 3 else [x.shape[1], x.shape[2]]


def _channels_space(op, inputs, weights, what: str):
    spatial = (1,) if inputs[0].ndim == 3 else (1, 2)
    return par.space_except(op, inputs, weights, spatial, f"{what} moves data across it")


def _with_spatial(x: TensorSpec, dims) -> TensorSpec:
    shape = (x.shape[0], dims[1], x.shape[2]) if x.ndim == 3 else (x.shape[0], dims[0], dims[1], x.shape[3])
    return TensorSpec(shape, x.dtype)


@dataclass(frozen=True)
class Pad2DOp(Op):
    """Zero-pad or crop the spatial dims; one input, no weights.

    Attributes:
        pads: ((top, bottom), (left, right)); positive values pad with zeros, negative ones crop. A 3-D
            input uses (left, right) along its steps (top and bottom must be 0).
    """

    type_name: ClassVar[str] = "spatial_pad"
    pads: tuple[tuple[int, int], tuple[int, int]] = ((0, 0), (0, 0))

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"spatial_pad takes one input and no weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x = inputs[0]
        _check_rank(x, "spatial_pad")
        if x.ndim == 3 and self.pads[0] != (0, 0):
            raise ShapeError(f"spatial_pad: a 3-D input {x.shape} has no height to pad; received pads {self.pads}.")
        dims = []
        for size, (before, after) in zip(_spatial(x), self.pads, strict=True):
            if size is not None and size + before + after <= 0:
                raise ShapeError(f"spatial_pad: cropping {-before} and {-after} leaves nothing of a dim of {size} "
                                 f"(input shape {x.shape}); crop less.")
            dims.append(None if size is None else size + before + after)
        return (_with_spatial(x, dims),)

    def parallel_space(self, inputs, weights):
        return _channels_space(self, inputs, weights, "padding or cropping")

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.shift_copy_cuda if ctx.backend == "cuda" else _k.shift_copy_cpu
        fn(_as4(inputs[0]), _as4(outputs[0]), -self.pads[0][0], -self.pads[1][0])

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is None:
            return
        fn = _k.shift_copy_cuda if ctx.backend == "cuda" else _k.shift_copy_cpu
        fn(_as4(grad_outputs[0]), _as4(grad_inputs[0]), self.pads[0][0], self.pads[1][0], ctx.acc_input(0))


@dataclass(frozen=True)
class Resize2DOp(Op):
    """Upsample the spatial dims by integer factors; one input, no weights.

    Attributes:
        size: (fh, fw) positive factors ((1, f) for a 3-D input).
        mode: "nearest" (repeat) or "bilinear" (TensorFlow's half-pixel centres).
    """

    type_name: ClassVar[str] = "upsample"
    size: tuple[int, int] = (2, 2)
    mode: str = "nearest"

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"upsample takes one input and no weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x = inputs[0]
        _check_rank(x, "upsample")
        if x.ndim == 3 and self.size[0] != 1:
            raise ShapeError(f"upsample: a 3-D input {x.shape} has no height to upsample; received size {self.size}.")
        dims = [None if s is None else s * f for s, f in zip(_spatial(x), self.size, strict=True)]
        return (_with_spatial(x, dims),)

    def parallel_space(self, inputs, weights):
        return _channels_space(self, inputs, weights, "upsampling")

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.resize2d_forward_cuda if ctx.backend == "cuda" else _k.resize2d_forward_cpu
        fn(_as4(inputs[0]), _as4(outputs[0]), self.size, self.mode)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is None:
            return
        fn = _k.resize2d_backward_cuda if ctx.backend == "cuda" else _k.resize2d_backward_cpu
        fn(_as4(grad_outputs[0]), _as4(grad_inputs[0]), self.size, self.mode, ctx.acc_input(0))


def spatial_pad(x, pads, name: str | None = None):
    """Zero-pad (positive) or crop (negative) the spatial dims of a channels-last tensor.

    Args:
        x: (batch, height, width, channels) or (batch, steps, channels) tensor.
        pads: ((top, bottom), (left, right)) ints; for a 3-D input ((0, 0), (left, right)).
        name: optional node name.

    Example:
        >>> spatial_pad(np.ones((1, 2, 2, 1), np.float32), ((1, 1), (0, -1))).shape
        (1, 4, 1, 1)
    """
    try:
        (t, b), (left, r) = pads
        vals = tuple(int(v) for v in (t, b, left, r))
    except (TypeError, ValueError):
        vals = None
    if vals is None:
        raise ValueError(f"spatial_pad expects pads ((top, bottom), (left, right)) of ints, received {pads!r}.")
    return apply_op(Pad2DOp(pads=((vals[0], vals[1]), (vals[2], vals[3]))), [x], name=name)


def upsample(x, size, interpolation="nearest", name: str | None = None):
    """Upsample the spatial dims of a channels-last tensor by integer factors.

    Args:
        x: (batch, height, width, channels) or (batch, steps, channels) tensor.
        size: (fh, fw) positive ints ((1, f) for a 3-D input).
        interpolation: "nearest" or "bilinear".
        name: optional node name.

    Example:
        >>> upsample(np.ones((1, 2, 3, 1), np.float32), (2, 2)).shape
        (1, 4, 6, 1)
    """
    if interpolation not in _k.MODES:
        raise ValueError(f"upsample expects interpolation 'nearest' or 'bilinear', received "
                         f"interpolation={interpolation!r}.")
    size = tuple(int(s) for s in size)
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"upsample expects size to be two positive ints, received size={size!r}.")
    return apply_op(Resize2DOp(size=size, mode=interpolation), [x], name=name)
