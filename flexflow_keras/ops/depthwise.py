"""The depthwise 2-D convolution op (`DepthwiseConv2DOp`, Keras' DepthwiseConv2D and the first half of
SeparableConv2D) and its functional form `depthwise_conv2d`.

NHWC input, Keras kernel layout (kh, kw, channels, depth_multiplier), output channel
``c * depth_multiplier + m``, strides, dilation, padding valid/same, bias. Kernels: `kernels.depthwise_conv2d`.
Parallel rules: the batch; height and width (halos, as conv2d); the channels when depth_multiplier is 1
(each output channel reads only its input channel and kernel slice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import depthwise_conv2d as _k
from kernels._conv_geometry import check_padding, out_size, pads, pair


@dataclass(frozen=True)
class DepthwiseConv2DOp(Op):
    """y = depthwise_conv2d(x, kernel) + bias; inputs (x,), weights (kernel,) or (kernel, bias).

    Attributes:
        strides: (sh, sw) positive ints.
        padding: "valid" or "same".
        dilation: (dh, dw) positive ints.
        grouped: the kernel is a grouped Conv2D's with one group per channel, shape (kh, kw, 1, channels)
            (depth_multiplier 1; the same values in the same order as (kh, kw, channels, 1)).
    """

    type_name: ClassVar[str] = "depthwise_conv2d"
    strides: tuple[int, int] = (1, 1)
    padding: str = "valid"
    dilation: tuple[int, int] = (1, 1)
    grouped: bool = False

    def _kshape(self, k) -> tuple:
        """The kernel's shape in the depthwise layout (kh, kw, channels, depth_multiplier)."""
        k = tuple(k)
        return (k[0], k[1], k[3], 1) if self.grouped else k

    def _kview(self, kernel):
        """The kernel (or its gradient) as a depthwise-layout view that writes through: swapping the size-1
        axis is a view of any NumPy tile; a device array (whole, contiguous) is reshaped."""
        if not self.grouped:
            return kernel
        return np.swapaxes(kernel, 2, 3) if isinstance(kernel, np.ndarray) else kernel.reshape(
            self._kshape(kernel.shape))

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"depthwise_conv2d takes one input and weights (kernel[, bias]), received "
                             f"{len(inputs)} inputs and {len(weights)} weights.")
        x, k = inputs[0], weights[0]
        if self.grouped and (k.ndim != 4 or k.shape[2] != 1):
            raise ShapeError(f"depthwise_conv2d (grouped): a kernel of shape (kh, kw, 1, channels) was expected, "
                             f"received {k.shape}.")
        k = TensorSpec(self._kshape(k.shape), k.dtype) if self.grouped else k
        if x.ndim != 4:
            raise ShapeError(f"depthwise_conv2d expects a 4-D (batch, height, width, channels) input, received "
                             f"shape {x.shape}. Reshape it (e.g. Reshape((h, w, 1))) first.")
        if k.ndim != 4 or (x.shape[3] is not None and x.shape[3] != k.shape[2]):
            raise ShapeError(f"depthwise_conv2d: a kernel of shape (kh, kw, channels, depth_multiplier) matching "
                             f"the input's {x.shape[3]} channels was expected, received kernel {k.shape} for "
                             f"input {x.shape}.")
        co = k.shape[2] * k.shape[3]
        if len(weights) == 2 and tuple(weights[1].shape) != (co,):
            raise ShapeError(f"depthwise_conv2d expects a bias of shape ({co},), received {weights[1].shape}.")
        dims = []
        for d in range(2):
            size, window = x.shape[1 + d], (k.shape[d] - 1) * self.dilation[d] + 1
            if size is not None and self.padding == "valid" and size < window:
                raise ShapeError(f"depthwise_conv2d: the input's dim {1 + d} of {size} (shape {x.shape}) is "
                                 f"smaller than the (dilated) kernel's {window} with padding='valid'. Use "
                                 f"padding='same' or a smaller kernel.")
            dims.append(None if size is None else out_size(size, window, self.strides[d], self.padding))
        return (TensorSpec((x.shape[0], dims[0], dims[1], co), x.dtype),)

    # --- parallel rules: batch; height and width (halos); channels when depth_multiplier is 1 ---------
    def parallel_space(self, inputs, weights):
        fixed = (3,) if self._kshape(weights[0].shape)[3] != 1 else ()
        return par.space_except(self, inputs, weights, fixed, "with depth_multiplier > 1 an output channel "
                                "tile does not map to one box of the kernel", kinds={3: par.PARAMETER})

    def _window(self, kshape):
        return tuple((kshape[d] - 1) * self.dilation[d] + 1 for d in range(2))

    def tile(self, shapes, out_box, part=0, parts=1):
        x, k = shapes.inputs[0], self._kshape(shapes.weights[0])
        window = self._window(k)
        top = pads(x[1], window[0], self.strides[0], self.padding)[0]
        left = pads(x[2], window[1], self.strides[1], self.padding)[0]
        c0, c1 = out_box[0][3], out_box[1][3]
        if k[3] != 1:  # the channels are whole (parallel_space); an input channel per k[3] outputs
            c0, c1 = 0, x[3]
        xbox, local = par.spatial_tile(x, shapes.outputs[0], out_box, window, self.strides, (top, left), (c0, c1))
        ws = [((0, 0, 0, c0), (k[0], k[1], 1, c1)) if self.grouped else ((0, 0, c0, 0), (k[0], k[1], c1, k[3]))]
        if len(shapes.weights) > 1:
            ws.append(((out_box[0][3],), (out_box[1][3],)))
        return par.Tile((xbox,), tuple(ws), (out_box,), local=(("padding", local),))

    def _padding(self, ctx):
        return self.padding if ctx.tile is None else ctx.tile.get("padding", self.padding)

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.depthwise_conv2d_forward_cuda if ctx.backend == "cuda" else _k.depthwise_conv2d_forward_cpu
        fn(inputs[0], self._kview(weights[0]), weights[1] if len(weights) > 1 else None, outputs[0], self.strides,
           self._padding(ctx), self.dilation)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.depthwise_conv2d_backward_cuda if ctx.backend == "cuda" else _k.depthwise_conv2d_backward_cpu
        grad_kernel = None if grad_weights[0] is None else self._kview(grad_weights[0])
        fn(inputs[0], self._kview(weights[0]), grad_outputs[0], grad_inputs[0], grad_kernel,
           grad_weights[1] if len(grad_weights) > 1 else None, self.strides, self._padding(ctx), self.dilation,
           ctx.acc_input(0), ctx.acc_weight(0), ctx.acc_weight(1))


def depthwise_conv2d(x, kernel, bias=None, strides=(1, 1), padding="valid", dilation_rate=(1, 1),
                     name: str | None = None, grouped: bool = False):
    """Depthwise 2-D convolution of an NHWC tensor: each channel with its own depth_multiplier filters.

    Args:
        x: (batch, height, width, channels) tensor.
        kernel: (kh, kw, channels, depth_multiplier) Variable or array.
        bias: (channels * depth_multiplier,) or None.
        strides: int or pair of positive ints.
        padding: "valid" or "same".
        dilation_rate: int or pair of positive ints.
        name: optional node name.
        grouped: `kernel` is a grouped Conv2D's (kh, kw, 1, channels), one group per channel.

    Example:
        >>> depthwise_conv2d(np.zeros((2, 8, 8, 3), np.float32), np.ones((3, 3, 3, 2), np.float32)).shape
        (2, 6, 6, 6)
    """
    op = DepthwiseConv2DOp(strides=pair(strides, "depthwise_conv2d", "strides"),
                           padding=check_padding(padding, "depthwise_conv2d"),
                           dilation=pair(dilation_rate, "depthwise_conv2d", "dilation_rate"), grouped=grouped)
    return apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)


def _view4(a):
    return a.reshape(a.shape[0], 1, a.shape[1], a.shape[2])


@dataclass(frozen=True)
class DepthwiseConv1DOp(Op):
    """The 1-D depthwise convolution (Keras' DepthwiseConv1D, the first half of SeparableConv1D): the
    depthwise kernels on the (N, 1, W, C) view of its input and the (1, K, C, M) view of its (K, C, M)
    kernel. Parallel rules: the batch; the channels when depth_multiplier is 1.

    Attributes:
        strides: positive int.
        padding: "valid" or "same".
        dilation: positive int.
    """

    type_name: ClassVar[str] = "depthwise_conv1d"
    strides: int = 1
    padding: str = "valid"
    dilation: int = 1

    def _as2d(self) -> DepthwiseConv2DOp:
        return DepthwiseConv2DOp(strides=(1, self.strides), padding=self.padding, dilation=(1, self.dilation))

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        x = inputs[0] if len(inputs) == 1 else None
        if x is None or x.ndim != 3 or not weights or weights[0].ndim != 3:
            raise ShapeError(f"depthwise_conv1d expects one 3-D (batch, steps, channels) input and a (taps, "
                             f"channels, depth_multiplier) kernel, received inputs {[i.shape for i in inputs]} and "
                             f"weights {[w.shape for w in weights]}.")
        x4 = TensorSpec((x.shape[0], 1, x.shape[1], x.shape[2]), x.dtype)
        k4 = TensorSpec((1,) + tuple(weights[0].shape), weights[0].dtype)
        y = self._as2d().output_specs([x4], [k4, *weights[1:]])[0]
        return (TensorSpec((y.shape[0], y.shape[2], y.shape[3]), y.dtype),)

    def parallel_space(self, inputs, weights):
        fixed = (1,) if weights[0].shape[2] == 1 else (1, 2)
        return par.space_except(self, inputs, weights, fixed, "only the batch and, with depth_multiplier 1, the "
                                "channels are split", kinds={2: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        x, k = shapes.inputs[0], shapes.weights[0]
        (n0, _, c0), (n1, _, c1) = out_box
        ws = [((0, c0, 0), (k[0], c1, k[2]))] + [((c0,), (c1,))] * (len(shapes.weights) > 1)
        if k[2] != 1:
            ws[0] = ((0, 0, 0), tuple(k))
            c0, c1 = 0, x[2]
        return par.Tile((((n0, 0, c0), (n1, x[1], c1)),), tuple(ws), (out_box,))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.depthwise_conv2d_forward_cuda if ctx.backend == "cuda" else _k.depthwise_conv2d_forward_cpu
        fn(_view4(inputs[0]), weights[0].reshape((1,) + tuple(weights[0].shape)),
           weights[1] if len(weights) > 1 else None, _view4(outputs[0]), (1, self.strides), self.padding,
           (1, self.dilation))

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.depthwise_conv2d_backward_cuda if ctx.backend == "cuda" else _k.depthwise_conv2d_backward_cpu
        gk = grad_weights[0]
        fn(_view4(inputs[0]), weights[0].reshape((1,) + tuple(weights[0].shape)), _view4(grad_outputs[0]),
           None if grad_inputs[0] is None else _view4(grad_inputs[0]),
           None if gk is None else gk.reshape((1,) + tuple(gk.shape)),
           grad_weights[1] if len(grad_weights) > 1 else None, (1, self.strides), self.padding, (1, self.dilation),
           ctx.acc_input(0), ctx.acc_weight(0), ctx.acc_weight(1))


def depthwise_conv1d(x, kernel, bias=None, strides=1, padding="valid", dilation_rate=1, name: str | None = None):
    """Depthwise 1-D convolution of a (batch, steps, channels) tensor.

    Args:
        x: (batch, steps, channels) tensor.
        kernel: (taps, channels, depth_multiplier) Variable or array.
        bias: (channels * depth_multiplier,) or None.
        strides: positive int.
        padding: "valid" or "same".
        dilation_rate: positive int.
        name: optional node name.

    Example:
        >>> depthwise_conv1d(np.zeros((2, 9, 3), np.float32), np.ones((3, 3, 2), np.float32)).shape
        (2, 7, 6)
    """
    for arg, value in (("strides", strides), ("dilation_rate", dilation_rate)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"depthwise_conv1d expects {arg} to be a positive int, received {arg}={value!r}.")
    op = DepthwiseConv1DOp(strides=strides, padding=check_padding(padding, "depthwise_conv1d"),
                           dilation=dilation_rate)
    return apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)
