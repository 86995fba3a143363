"""Pooling ops: `Pool2DOp` (max / average over windows) and `GlobalPool2DOp` (over all of H and W), with
their functional forms `pool2d` and `global_pool2d`.

NHWC; windows follow TensorFlow ("same" padding never lets a padded element win a max or count in an
average). Max pooling keeps, per output element, the flat spatial index of its maximum as a saved
per-sample int32 buffer, which the backward uses to route the gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import pool2d as _k
from kernels._conv_geometry import check_padding, out_size, pads, pair


def _check_mode(mode, who: str) -> str:
    if mode not in _k.MODES:
        raise ValueError(f"{who} expects mode 'max' or 'avg', received mode={mode!r}.")
    return mode


def _check_image(x: TensorSpec, who: str) -> None:
    if x.ndim != 4:
        raise ShapeError(f"{who} expects a 4-D (batch, height, width, channels) input, received shape "
                         f"{x.shape}. Reshape it (e.g. Reshape((h, w, 1))) before pooling.")


@dataclass(frozen=True)
class Pool2DOp(Op):
    """Max or average pooling; one input, no weights.

    Attributes:
        pool_size: (ph, pw) window.
        strides: (sh, sw) step.
        padding: "valid" or "same".
        mode: "max" or "avg".
    """

    type_name: ClassVar[str] = "pool2d"
    pool_size: tuple[int, int] = (2, 2)
    strides: tuple[int, int] = (2, 2)
    padding: str = "valid"
    mode: str = "max"

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"pool2d takes one input and no weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x = inputs[0]
        _check_image(x, "pool2d")
        dims = []
        for size, window, stride, name in ((x.shape[1], self.pool_size[0], self.strides[0], "height"),
                                           (x.shape[2], self.pool_size[1], self.strides[1], "width")):
            if size is None:
                dims.append(None)
                continue
            if self.padding == "valid" and size < window:
                raise ShapeError(f"pool2d: the input {name} {size} (shape {x.shape}) is smaller than the "
                                 f"pool window {window} with padding='valid'. Use padding='same' or a "
                                 f"smaller pool_size.")
            dims.append(out_size(size, window, stride, self.padding))
        return (TensorSpec((x.shape[0], dims[0], dims[1], x.shape[3]), x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if self.mode != "max":
            return ()
        return (TensorSpec(self.output_specs(inputs, weights)[0].shape, "int32"),)  # argmax per output

    # --- parallel rules: batch; height and width (halos); channels ------------------------------------
    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def tile(self, shapes, out_box, part=0, parts=1):
        x = shapes.inputs[0]
        top = pads(x[1], self.pool_size[0], self.strides[0], self.padding)[0]
        left = pads(x[2], self.pool_size[1], self.strides[1], self.padding)[0]
        xbox, local = par.spatial_tile(x, shapes.outputs[0], out_box, self.pool_size, self.strides, (top, left),
                                       (out_box[0][3], out_box[1][3]))
        return par.Tile((xbox,), (), (out_box,), (out_box,) * len(shapes.saved), local=(("padding", local),))

    def _padding(self, ctx):
        return self.padding if ctx.tile is None else ctx.tile.get("padding", self.padding)

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.pool2d_forward_cuda if ctx.backend == "cuda" else _k.pool2d_forward_cpu
        fn(inputs[0], outputs[0], self.pool_size, self.strides, self._padding(ctx), self.mode,
           saved[0] if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is None:
            return
        fn = _k.pool2d_backward_cuda if ctx.backend == "cuda" else _k.pool2d_backward_cpu
        fn(inputs[0], grad_outputs[0], grad_inputs[0], self.pool_size, self.strides, self._padding(ctx), self.mode,
           saved[0] if saved else None, ctx.acc_input(0))


@dataclass(frozen=True)
class GlobalPool2DOp(Op):
    """Mean or max over H and W: (N, H, W, C) -> (N, C), or (N, 1, 1, C) with keepdims.

    Attributes:
        mode: "avg" or "max".
        keepdims: keep the spatial dims as size 1.
    """

    type_name: ClassVar[str] = "global_pool2d"
    mode: str = "avg"
    keepdims: bool = False

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"global_pool2d takes one input and no weights, received {len(inputs)} inputs "
                             f"and {len(weights)} weights.")
        x = inputs[0]
        _check_image(x, "global_pool2d")
        shape = (x.shape[0], 1, 1, x.shape[3]) if self.keepdims else (x.shape[0], x.shape[3])
        return (TensorSpec(shape, x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if self.mode != "max":
            return ()
        return (TensorSpec((inputs[0].shape[0], inputs[0].shape[3]), "int32"),)

    # --- parallel rules: batch and channels; the pooled height and width are whole -------------------
    def parallel_space(self, inputs, weights):
        fixed = (1, 2) if self.keepdims else ()
        return par.space_except(self, inputs, weights, fixed, "global pooling reduces over it")

    def tile(self, shapes, out_box, part=0, parts=1):
        x = shapes.inputs[0]
        lo, hi = out_box
        n0, n1, c0, c1 = lo[0], hi[0], lo[-1], hi[-1]
        xbox = ((n0, 0, 0, c0), (n1, x[1], x[2], c1))
        saved = tuple(((n0, c0), (n1, c1)) for _ in shapes.saved)
        return par.Tile((xbox,), (), (out_box,), saved)

    def _flat(self, a):
        return a.reshape(a.shape[0], a.shape[-1]) if self.keepdims else a

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.global_pool2d_forward_cuda if ctx.backend == "cuda" else _k.global_pool2d_forward_cpu
        fn(inputs[0], self._flat(outputs[0]), self.mode, saved[0] if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is None:
            return
        fn = _k.global_pool2d_backward_cuda if ctx.backend == "cuda" else _k.global_pool2d_backward_cpu
        fn(inputs[0], self._flat(grad_outputs[0]), grad_inputs[0], self.mode, saved[0] if saved else None,
           ctx.acc_input(0))


def pool2d(x, pool_size, strides=None, padding="valid", mode="max", name: str | None = None):
    """Max or average pooling of an NHWC tensor (symbolic on KerasTensors, eager on arrays).

    Args:
        x: (batch, height, width, channels) tensor.
        pool_size: int or pair; the window.
        strides: int or pair; defaults to pool_size.
        padding: "valid" or "same".
        mode: "max" or "avg".
        name: optional node name.

    Example:
        >>> pool2d(np.zeros((2, 24, 24, 8), np.float32), 2).shape
        (2, 12, 12, 8)
    """
    size = pair(pool_size, "pool2d", "pool_size")
    op = Pool2DOp(pool_size=size, strides=size if strides is None else pair(strides, "pool2d", "strides"),
                  padding=check_padding(padding, "pool2d"), mode=_check_mode(mode, "pool2d"))
    return apply_op(op, [x], name=name)


def global_pool2d(x, mode="avg", keepdims=False, name: str | None = None):
    """Mean or max over the spatial dims of an NHWC tensor: (N, H, W, C) -> (N, C) (or (N, 1, 1, C)).

    Args:
        x: (batch, height, width, channels) tensor.
        mode: "avg" or "max".
        keepdims: keep H and W as size-1 dims.
        name: optional node name.

    Example:
        >>> global_pool2d(np.ones((2, 5, 5, 3), np.float32)).shape
        (2, 3)
    """
    return apply_op(GlobalPool2DOp(mode=_check_mode(mode, "global_pool2d"), keepdims=bool(keepdims)), [x],
                    name=name)
