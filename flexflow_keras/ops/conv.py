"""The 2-D convolution op (`Conv2DOp`) and its functional form `conv2d`.

NHWC input, Keras kernel layout (kh, kw, in_channels, filters), TensorFlow "same" padding, a dilation
(atrous convolution: `kernels.conv2d_dilated`, stride 1 as in TensorFlow), bias and an element-wise
activation fused into the kernel. The op keeps the pre-activation as a saved per-sample
buffer only for activations whose gradient needs it (gelu, silu, ...); relu, sigmoid, tanh, elu, ...
differentiate through the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import activations as _acts
from kernels import conv2d as _k
from kernels import conv2d_dilated as _kd
from kernels._conv_geometry import check_padding, out_size, pads, pair


@dataclass(frozen=True)
class Conv2DOp(Op):
    """y = activation(conv2d(x, kernel) + bias); inputs (x,), weights (kernel,) or (kernel, bias).

    Attributes:
        strides: (sh, sw) positive ints.
        padding: "valid" or "same".
        activation: a `kernels.activations` name ("linear", "relu", "gelu", ...).
        activation_params: that activation's parameters as sorted (name, value) pairs.
        dilation: (dh, dw) positive ints; kernel tap (a, b) reads the input at offset (a * dh, b * dw) of
            its window, whose size is (kh - 1) * dh + 1 by (kw - 1) * dw + 1. Above 1 the strides are 1.
    """

    type_name: ClassVar[str] = "conv2d"
    strides: tuple[int, int] = (1, 1)
    padding: str = "valid"
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()
    dilation: tuple[int, int] = (1, 1)

    @cached_property
    def act(self) -> _acts.Activation:
        """The kernels' Activation value (resolved once per op)."""
        return _acts.resolve_activation(self.activation, **dict(self.activation_params))

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"conv2d takes one input and weights (kernel[, bias]), received {len(inputs)} "
                             f"inputs and {len(weights)} weights.")
        x, k = inputs[0], weights[0]
        if x.ndim != 4:
            raise ShapeError(f"conv2d expects a 4-D (batch, height, width, channels) input, received shape "
                             f"{x.shape}. Reshape it (e.g. add a channels dim with Reshape((h, w, 1))).")
        if k.ndim != 4:
            raise ShapeError(f"conv2d expects a kernel of shape (kh, kw, in_channels, filters), received "
                             f"{k.shape}.")
        kh, kw, cin, co = k.shape
        check_strides_with_dilation("conv2d", self.strides, self.dilation)
        if x.shape[3] is not None and x.shape[3] != cin:
            raise ShapeError(f"conv2d: the input has {x.shape[3]} channels (shape {x.shape}) but the kernel "
                             f"{k.shape} expects {cin}. Build the layer for this input or fix the channels.")
        if len(weights) == 2 and tuple(weights[1].shape) != (co,):
            raise ShapeError(f"conv2d expects a bias of shape ({co},), received {weights[1].shape}.")
        dims = []
        for size, window, stride, name in ((x.shape[1], self._window(kh, 0), self.strides[0], "height"),
                                           (x.shape[2], self._window(kw, 1), self.strides[1], "width")):
            if size is None:
                dims.append(None)
                continue
            if self.padding == "valid" and size < window:
                what = "kernel's" if self.dilation == (1, 1) else f"kernel's (dilated by {self.dilation})"
                raise ShapeError(f"conv2d: the input {name} {size} (shape {x.shape}) is smaller than the "
                                 f"{what} {window} with padding='valid'. Use padding='same' or a smaller "
                                 f"kernel.")
            dims.append(out_size(size, window, stride, self.padding))
        return (TensorSpec((x.shape[0], dims[0], dims[1], co), x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if _acts.grad_from_output(self.act):
            return ()
        return self.output_specs(inputs, weights)  # the pre-activation, shaped like the output

    def _window(self, k: int, dim: int) -> int:
        """The input extent of a `k`-tap kernel dim under this op's dilation."""
        return (k - 1) * self.dilation[dim] + 1

    # --- parallel rules: batch; height and width (halos of the dilated window); output channels -------
    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (), "", kinds={3: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        x = shapes.inputs[0]
        kh, kw = shapes.weights[0][:2]
        window = (self._window(kh, 0), self._window(kw, 1))
        top = pads(x[1], window[0], self.strides[0], self.padding)[0]
        left = pads(x[2], window[1], self.strides[1], self.padding)[0]
        xbox, local = par.spatial_tile(x, shapes.outputs[0], out_box, window, self.strides, (top, left), None)
        c0, c1 = out_box[0][3], out_box[1][3]
        ws = [((0, 0, 0, c0), (kh, kw, x[3], c1))]
        if len(shapes.weights) > 1:
            ws.append(((c0,), (c1,)))
        return par.Tile((xbox,), tuple(ws), (out_box,), (out_box,) * len(shapes.saved),
                        local=(("padding", local),))

    def _padding(self, ctx):
        return self.padding if ctx.tile is None else ctx.tile.get("padding", self.padding)

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        bias = weights[1] if len(weights) > 1 else None
        pre = saved[0] if saved else None
        on_gpu = ctx.backend == "cuda"
        if self.dilation != (1, 1):  # the sub-grid kernels (kernels.conv2d_dilated)
            fn = _kd.conv2d_dilated_forward_cuda if on_gpu else _kd.conv2d_dilated_forward_cpu
            fn(inputs[0], weights[0], bias, outputs[0], self.strides, self._padding(ctx), self.act,
               pre_activation=pre, dilation=self.dilation)
            return
        fn = _k.conv2d_forward_cuda if on_gpu else _k.conv2d_forward_cpu
        fn(inputs[0], weights[0], bias, outputs[0], self.strides, self._padding(ctx), self.act,
           pre_activation=pre)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        grad_bias = grad_weights[1] if len(grad_weights) > 1 else None
        on_gpu = ctx.backend == "cuda"
        kwargs = {}
        if self.dilation != (1, 1):
            fn = _kd.conv2d_dilated_backward_cuda if on_gpu else _kd.conv2d_dilated_backward_cpu
            kwargs["dilation"] = self.dilation
        else:
            fn = _k.conv2d_backward_cuda if on_gpu else _k.conv2d_backward_cpu
        fn(inputs[0], weights[0], outputs[0], grad_outputs[0], grad_inputs[0], grad_weights[0], grad_bias,
           self.strides, self._padding(ctx), self.act, pre_activation=saved[0] if saved else None,
           accumulate_x=ctx.acc_input(0), accumulate_kernel=ctx.acc_weight(0),
           accumulate_bias=ctx.acc_weight(1), **kwargs)


def check_strides_with_dilation(who: str, strides: tuple[int, ...], dilation: tuple[int, ...]) -> None:
    """Keras 3's rule: strides above 1 do not combine with a dilation_rate above 1.

    Raises:
        ValueError: naming `who`, both values and the fix.
    """
    if max(strides) > 1 and max(dilation) > 1:
        raise ValueError(f"{who}: `strides > 1` not supported in conjunction with `dilation_rate > 1` (as in "
                         f"Keras). Received: strides={tuple(strides)} and dilation_rate={tuple(dilation)}. Use "
                         f"strides=1 with the dilation (then downsample with a pooling layer or a strided "
                         f"convolution), or dilation_rate=1.")


def _activation_name(activation) -> str | None:
    """The kernels' name for a fusable activation, or None when it must run as its own op."""
    if activation is None:
        return "linear"
    if isinstance(activation, str) and activation in _acts.ACTIVATION_NAMES:
        return activation
    return None


def conv2d(x, kernel, bias=None, strides=(1, 1), padding="valid", activation=None, dilation_rate=(1, 1),
           name: str | None = None):
    """2-D convolution of an NHWC tensor: ``activation(conv2d(x, kernel) + bias)``.

    Symbolic on KerasTensors (records a `Conv2DOp`), eager on NumPy arrays.

    Args:
        x: (batch, height, width, in_channels) tensor.
        kernel: (kh, kw, in_channels, filters) Variable or array.
        bias: (filters,) Variable or array, or None.
        strides: int or pair of positive ints.
        padding: "valid" or "same" (TensorFlow's split: the odd pixel at the bottom/right).
        activation: None, a Keras activation name (fused into the kernel), or a callable applied after.
        dilation_rate: int or pair of positive ints (atrous convolution); above 1, strides must be 1.
        name: optional node name.

    Example:
        >>> y = conv2d(np.zeros((2, 28, 28, 1), np.float32), np.ones((3, 3, 1, 8), np.float32),
        ...            activation="relu")   # y.shape == (2, 26, 26, 8)
    """
    strides = pair(strides, "conv2d", "strides")
    dilation = pair(dilation_rate, "conv2d", "dilation_rate")
    check_strides_with_dilation("conv2d", strides, dilation)
    fused = _activation_name(activation)
    op = Conv2DOp(strides=strides, padding=check_padding(padding, "conv2d"), activation=fused or "linear",
                  dilation=dilation)
    weights = [kernel] if bias is None else [kernel, bias]
    y = apply_op(op, [x], weights, name=name)
    if fused is not None:
        return y
    if callable(activation):
        return activation(y)
    from flexflow_keras import ops

    return ops.activation(y, activation)
