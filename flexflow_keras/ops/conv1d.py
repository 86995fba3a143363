"""1-D window ops over (batch, steps, channels) tensors: `Conv1DOp` (strides, dilation, padding
valid/same/causal, bias and a fused activation) and `Pool1DOp` (max / average), with their functional
forms `conv1d` and `pool1d`.

Both run the 2-D kernels on the (N, 1, W, C) view of their arrays (`kernels.conv1d`, `kernels.pool2d`):
one op node each, no reshape ops around them. Parallel rules: the batch; the steps (attribute: each piece
reads its halo'd input slice with local explicit pads); the output channels (conv1d: parameter, splitting
the kernel and bias; pool1d: the input channels follow).
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
from kernels import conv1d as _k
from kernels import pool2d as _pool
from kernels._conv_geometry import pads


def _view4(a):
    return a.reshape(a.shape[0], 1, a.shape[1], a.shape[2])


def _check_steps(x: TensorSpec, who: str) -> None:
    if x.ndim != 3:
        raise ShapeError(f"{who} expects a 3-D (batch, steps, channels) input, received shape {x.shape}. "
                         f"Add a channels dim with Reshape((steps, 1)) or x[..., None] on the data.")


def _steps_tile(x_shape, out_shape, out_box, window: int, stride: int, padding: str):
    """(input box, local (left, right) pads) of the output tile `out_box` of a 1-D window op; the input's
    channels are whole (callers narrow them)."""
    left = window - 1 if padding == "causal" else pads(x_shape[1], window, stride, padding)[0]
    (n0, o0, _), (n1, o1, _) = out_box
    i0, i1, lo, hi = par.window_range(o0, o1, int(out_shape[1]), int(x_shape[1]), window, stride, left)
    return ((n0, i0, 0), (n1, i1, int(x_shape[2]))), (lo, hi)


def _local_padding(ctx: KernelContext, padding):
    return padding if ctx.tile is None else ctx.tile.get("padding", padding)


def _length(who: str, x: TensorSpec, window: int, stride: int, padding: str, dilation: int, what: str):
    steps = x.shape[1]
    if steps is None:
        return None
    n = _k.conv1d_output_length(steps, window, stride, padding, dilation)
    if n <= 0:
        raise ShapeError(f"{who}: the input has {steps} steps (shape {x.shape}), fewer than the {what} of "
                         f"{(window - 1) * dilation + 1} with padding='valid'. Use padding='same' or a smaller "
                         f"{what}.")
    return n


@dataclass(frozen=True)
class Conv1DOp(Op):
    """y = activation(conv1d(x, kernel) + bias); inputs (x,), weights (kernel (K, C, CO),) or (kernel, bias).

    Attributes:
        strides: positive int.
        padding: "valid", "same" or "causal".
        dilation: positive int.
        activation: a `kernels.activations` name.
        activation_params: that activation's parameters as sorted (name, value) pairs.
    """

    type_name: ClassVar[str] = "conv1d"
    strides: int = 1
    padding: str = "valid"
    dilation: int = 1
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()

    @cached_property
    def act(self) -> _acts.Activation:
        """The kernels' Activation value."""
        return _acts.resolve_activation(self.activation, **dict(self.activation_params))

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"conv1d takes one input and weights (kernel[, bias]), received {len(inputs)} "
                             f"inputs and {len(weights)} weights.")
        x, k = inputs[0], weights[0]
        _check_steps(x, "conv1d")
        if k.ndim != 3 or (x.shape[2] is not None and x.shape[2] != k.shape[1]):
            raise ShapeError(f"conv1d: a kernel of shape (taps, in_channels, filters) matching the input's "
                             f"{x.shape[2]} channels was expected, received kernel {k.shape} for input {x.shape}.")
        if len(weights) == 2 and tuple(weights[1].shape) != (k.shape[2],):
            raise ShapeError(f"conv1d expects a bias of shape ({k.shape[2]},), received {weights[1].shape}.")
        n = _length("conv1d", x, k.shape[0], self.strides, self.padding, self.dilation, "kernel")
        return (TensorSpec((x.shape[0], n, k.shape[2]), x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if _acts.grad_from_output(self.act):
            return ()
        return self.output_specs(inputs, weights)  # the pre-activation

    # --- parallel rules: batch; steps (halos); output channels (parameter) ----------------------------
    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (), "", kinds={2: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        taps = shapes.weights[0][0]
        xbox, local = _steps_tile(shapes.inputs[0], shapes.outputs[0], out_box, (taps - 1) * self.dilation + 1,
                                  self.strides, self.padding)
        c0, c1 = out_box[0][2], out_box[1][2]
        ws = [((0, 0, c0), (taps, shapes.weights[0][1], c1))] + [((c0,), (c1,))] * (len(shapes.weights) > 1)
        return par.Tile((xbox,), tuple(ws), (out_box,), (out_box,) * len(shapes.saved), local=(("padding", local),))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.conv1d_forward_cuda if ctx.backend == "cuda" else _k.conv1d_forward_cpu
        fn(inputs[0], weights[0], weights[1] if len(weights) > 1 else None, outputs[0], self.strides,
           _local_padding(ctx, self.padding), self.dilation, self.act, pre_activation=saved[0] if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.conv1d_backward_cuda if ctx.backend == "cuda" else _k.conv1d_backward_cpu
        fn(inputs[0], weights[0], outputs[0], grad_outputs[0], grad_inputs[0], grad_weights[0],
           grad_weights[1] if len(grad_weights) > 1 else None, self.strides, _local_padding(ctx, self.padding),
           self.dilation, self.act, saved[0] if saved else None, ctx.acc_input(0), ctx.acc_weight(0),
           ctx.acc_weight(1))


@dataclass(frozen=True)
class Pool1DOp(Op):
    """Max or average pooling over steps; one (batch, steps, channels) input, no weights.

    Attributes:
        pool_size: window length.
        strides: step.
        padding: "valid" or "same" (TensorFlow's: padded elements never win a max or count in a mean).
        mode: "max" or "avg".
    """

    type_name: ClassVar[str] = "pool1d"
    pool_size: int = 2
    strides: int = 2
    padding: str = "valid"
    mode: str = "max"

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"pool1d takes one input and no weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x = inputs[0]
        _check_steps(x, "pool1d")
        n = _length("pool1d", x, self.pool_size, self.strides, self.padding, 1, "pool_size")
        return (TensorSpec((x.shape[0], n, x.shape[2]), x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if self.mode != "max":
            return ()
        return (TensorSpec(self.output_specs(inputs, weights)[0].shape, "int32"),)  # argmax per output

    # --- parallel rules: batch; steps (halos); channels -----------------------------------------------
    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def tile(self, shapes, out_box, part=0, parts=1):
        xbox, local = _steps_tile(shapes.inputs[0], shapes.outputs[0], out_box, self.pool_size, self.strides,
                                  self.padding)
        xbox = par.with_dims(xbox, {2: (out_box[0][2], out_box[1][2])})
        return par.Tile((xbox,), (), (out_box,), (out_box,) * len(shapes.saved), local=(("padding", local),))

    def _padding(self, ctx):
        local = _local_padding(ctx, self.padding)
        return local if isinstance(local, str) else ((0, 0), tuple(local))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _pool.pool2d_forward_cuda if ctx.backend == "cuda" else _pool.pool2d_forward_cpu
        fn(_view4(inputs[0]), _view4(outputs[0]), (1, self.pool_size), (1, self.strides), self._padding(ctx),
           self.mode, _view4(saved[0]) if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is None:
            return
        fn = _pool.pool2d_backward_cuda if ctx.backend == "cuda" else _pool.pool2d_backward_cpu
        fn(_view4(inputs[0]), _view4(grad_outputs[0]), _view4(grad_inputs[0]), (1, self.pool_size),
           (1, self.strides), self._padding(ctx), self.mode, _view4(saved[0]) if saved else None, ctx.acc_input(0))


def _positive(value, who: str, arg: str) -> int:
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{who} expects {arg} to be a positive int, received {arg}={value!r}.")
    return value


def conv1d(x, kernel, bias=None, strides=1, padding="valid", dilation_rate=1, activation=None,
           name: str | None = None):
    """1-D convolution of a (batch, steps, channels) tensor: ``activation(conv1d(x, kernel) + bias)``.

    Args:
        x: (batch, steps, in_channels) tensor.
        kernel: (taps, in_channels, filters) Variable or array.
        bias: (filters,) or None.
        strides: positive int.
        padding: "valid", "same" or "causal" (left-padded: output t sees inputs up to t).
        dilation_rate: positive int.
        activation: None or a Keras activation name (fused), or a callable applied after.
        name: optional node name.

    Example:
        >>> conv1d(np.zeros((2, 10, 3), np.float32), np.ones((3, 3, 4), np.float32)).shape
        (2, 8, 4)
    """
    if padding not in _k.PADDINGS:
        raise ValueError(f"conv1d expects padding 'valid', 'same' or 'causal', received padding={padding!r}.")
    fused = activation if activation is None or isinstance(activation, str) else None
    if fused is not None and fused not in _acts.ACTIVATION_NAMES:
        fused = None
    op = Conv1DOp(strides=_positive(strides, "conv1d", "strides"), padding=padding,
                  dilation=_positive(dilation_rate, "conv1d", "dilation_rate"),
                  activation="linear" if fused is None else fused)
    y = apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)
    if activation is None or fused is not None:
        return y
    if callable(activation):
        return activation(y)
    from flexflow_keras import ops

    return ops.activation(y, activation)


def pool1d(x, pool_size, strides=None, padding="valid", mode="max", name: str | None = None):
    """Max or average pooling of a (batch, steps, channels) tensor.

    Args:
        x: (batch, steps, channels) tensor.
        pool_size: positive int.
        strides: positive int; pool_size when None.
        padding: "valid" or "same".
        mode: "max" or "avg".
        name: optional node name.

    Example:
        >>> pool1d(np.zeros((2, 10, 3), np.float32), 2).shape
        (2, 5, 3)
    """
    size = _positive(pool_size, "pool1d", "pool_size")
    if padding not in ("valid", "same") or mode not in _pool.MODES:
        raise ValueError(f"pool1d expects padding 'valid'/'same' and mode 'max'/'avg', received "
                         f"padding={padding!r}, mode={mode!r}.")
    op = Pool1DOp(pool_size=size, strides=size if strides is None else _positive(strides, "pool1d", "strides"),
                  padding=padding, mode=mode)
    return apply_op(op, [x], name=name)
