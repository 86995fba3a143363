"""The transposed 2-D convolution op (`Conv2DTransposeOp`, Keras' Conv2DTranspose) and its functional
form `conv2d_transpose`.

NHWC input, Keras kernel layout (kh, kw, filters, in_channels), strides, padding valid/same,
output_padding, bias and an element-wise activation fused in (the pre-activation saved only for
activations whose gradient needs it, as `Conv2DOp`). Its kernels (`kernels.conv_transpose2d`) run on the conv2d kernels: forward = the
convolution's input-gradient, backward = its forward (grad input) and kernel-gradient (grad kernel).
Parallel rules: the batch; the filters (parameter: each piece reads the whole input and its kernel
slice, and the pieces' input gradients are partial sums); the output's height and width are whole.
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
from kernels import conv_transpose2d as _k
from kernels._conv_geometry import check_padding, out_size, pair


@dataclass(frozen=True)
class Conv2DTransposeOp(Op):
    """y = activation(conv2d_transpose(x, kernel) + bias); inputs (x,), weights (kernel,) or (kernel, bias).

    Attributes:
        strides: (sh, sw) positive ints.
        padding: "valid" or "same".
        output_padding: (ph, pw) extra output rows/columns (each smaller than its stride), or None for
            Keras' default size.
        activation: a `kernels.activations` name.
        activation_params: that activation's parameters as sorted (name, value) pairs.
    """

    type_name: ClassVar[str] = "conv2d_transpose"
    strides: tuple[int, int] = (1, 1)
    padding: str = "valid"
    output_padding: tuple[int, int] | None = None
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()

    @cached_property
    def act(self) -> _acts.Activation:
        """The kernels' Activation value."""
        return _acts.resolve_activation(self.activation, **dict(self.activation_params))

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        return () if _acts.grad_from_output(self.act) else self.output_specs(inputs, weights)  # pre-activation

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"conv2d_transpose takes one input and weights (kernel[, bias]), received "
                             f"{len(inputs)} inputs and {len(weights)} weights.")
        x, k = inputs[0], weights[0]
        if x.ndim != 4:
            raise ShapeError(f"conv2d_transpose expects a 4-D (batch, height, width, channels) input, received "
                             f"shape {x.shape}. Reshape it (e.g. Reshape((h, w, 1))) first.")
        if k.ndim != 4 or (x.shape[3] is not None and x.shape[3] != k.shape[3]):
            raise ShapeError(f"conv2d_transpose: a kernel of shape (kh, kw, filters, in_channels) matching the "
                             f"input's {x.shape[3]} channels was expected, received kernel {k.shape} for input "
                             f"{x.shape}.")
        if len(weights) == 2 and tuple(weights[1].shape) != (k.shape[2],):
            raise ShapeError(f"conv2d_transpose expects a bias of shape ({k.shape[2]},), received "
                             f"{weights[1].shape}.")
        dims = []
        for d in range(2):
            size = x.shape[1 + d]
            if size is None:
                dims.append(None)
                continue
            extra = None if self.output_padding is None else self.output_padding[d]
            length = _k.transpose_output_length(size, k.shape[d], self.strides[d], self.padding, extra)
            if out_size(length, k.shape[d], self.strides[d], self.padding) != size:
                raise ShapeError(f"conv2d_transpose: output_padding={self.output_padding} gives an output of "
                                 f"{length} along dim {1 + d} that the convolution back does not map to the "
                                 f"input's {size} (input {x.shape}, kernel {k.shape}, strides {self.strides}, "
                                 f"padding {self.padding!r}); give output_padding values smaller than the "
                                 f"strides.")
            dims.append(length)
        return (TensorSpec((x.shape[0], dims[0], dims[1], k.shape[2]), x.dtype),)

    # --- parallel rules: batch; filters (parameter) ----------------------------------------------------
    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (1, 2), "a transposed convolution's output rows and "
                                "columns are not split", kinds={3: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        x, k = shapes.inputs[0], shapes.weights[0]
        (n0, _, _, f0), (n1, _, _, f1) = out_box
        ws = [((0, 0, f0, 0), (k[0], k[1], f1, k[3]))] + [((f0,), (f1,))] * (len(shapes.weights) > 1)
        return par.Tile((((n0, 0, 0, 0), (n1, x[1], x[2], x[3])),), tuple(ws), (out_box,),
                        (out_box,) * len(shapes.saved))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.conv2d_transpose_forward_cuda if ctx.backend == "cuda" else _k.conv2d_transpose_forward_cpu
        fn(inputs[0], weights[0], weights[1] if len(weights) > 1 else None, outputs[0], self.strides, self.padding,
           self.act, saved[0] if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.conv2d_transpose_backward_cuda if ctx.backend == "cuda" else _k.conv2d_transpose_backward_cpu
        fn(inputs[0], weights[0], grad_outputs[0], grad_inputs[0], grad_weights[0],
           grad_weights[1] if len(grad_weights) > 1 else None, self.strides, self.padding, ctx.acc_input(0),
           ctx.acc_weight(0), ctx.acc_weight(1), self.act, outputs[0], saved[0] if saved else None)


def _fused(activation) -> str:
    """The kernels' name of a fusable activation (None: linear); raises for anything else."""
    if activation is None:
        return "linear"
    if isinstance(activation, str) and activation in _acts.ACTIVATION_NAMES:
        return activation
    raise ValueError(f"conv_transpose fuses a `kernels.activations` name ({', '.join(_acts.ACTIVATION_NAMES)}) "
                     f"or None, received activation={activation!r}; apply other activations after it.")


def conv2d_transpose(x, kernel, bias=None, strides=(1, 1), padding="valid", output_padding=None,
                     activation=None, name: str | None = None):
    """Transposed 2-D convolution of an NHWC tensor (the adjoint of `conv2d`), plus bias and an activation.

    Args:
        x: (batch, height, width, in_channels) tensor.
        kernel: (kh, kw, filters, in_channels) Variable or array.
        bias: (filters,) or None.
        strides: int or pair of positive ints.
        padding: "valid" or "same".
        output_padding: None, an int or a pair; extra output rows/columns, each smaller than its stride.
        activation: None or a `kernels.activations` name (relu, sigmoid, gelu, ...), fused into the op.
        name: optional node name.

    Example:
        >>> conv2d_transpose(np.zeros((2, 7, 7, 8), np.float32), np.ones((3, 3, 4, 8), np.float32),
        ...                  strides=2, padding="same").shape
        (2, 14, 14, 4)
    """
    strides = pair(strides, "conv2d_transpose", "strides")
    if output_padding is not None:
        op_ = (output_padding, output_padding) if isinstance(output_padding, int) else tuple(output_padding)
        if len(op_) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in op_):
            raise ValueError(f"conv2d_transpose expects output_padding to be None, a non-negative int or a pair of "
                             f"them, received output_padding={output_padding!r}.")
        output_padding = op_
    op = Conv2DTransposeOp(strides=strides, padding=check_padding(padding, "conv2d_transpose"),
                           output_padding=output_padding, activation=_fused(activation))
    return apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)


def _view4(a):
    return a.reshape(a.shape[0], 1, a.shape[1], a.shape[2])


@dataclass(frozen=True)
class Conv1DTransposeOp(Op):
    """The 1-D transposed convolution (Keras' Conv1DTranspose): `Conv2DTransposeOp`'s kernels on the
    (N, 1, W, C) view of its input, the (1, K, F, C) view of its (K, F, C) kernel and the (N, 1, OW, F) view
    of its output. Parallel rules: the batch and the filters (parameter).

    Attributes:
        strides: positive int.
        padding: "valid" or "same".
        output_padding: extra output steps (smaller than the stride), or None for Keras' default.
    """

    type_name: ClassVar[str] = "conv1d_transpose"
    strides: int = 1
    padding: str = "valid"
    output_padding: int | None = None
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()

    @cached_property
    def act(self) -> _acts.Activation:
        """The kernels' Activation value."""
        return _acts.resolve_activation(self.activation, **dict(self.activation_params))

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        return () if _acts.grad_from_output(self.act) else self.output_specs(inputs, weights)  # pre-activation

    def _as2d(self) -> Conv2DTransposeOp:
        extra = None if self.output_padding is None else (0, self.output_padding)
        return Conv2DTransposeOp(strides=(1, self.strides), padding=self.padding, output_padding=extra)

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        x = inputs[0] if len(inputs) == 1 else None
        if x is None or x.ndim != 3 or not weights or weights[0].ndim != 3:
            raise ShapeError(f"conv1d_transpose expects one 3-D (batch, steps, channels) input and a (taps, "
                             f"filters, in_channels) kernel, received inputs {[i.shape for i in inputs]} and "
                             f"weights {[w.shape for w in weights]}.")
        x4 = TensorSpec((x.shape[0], 1, x.shape[1], x.shape[2]), x.dtype)
        k4 = TensorSpec((1,) + tuple(weights[0].shape), weights[0].dtype)
        y = self._as2d().output_specs([x4], [k4, *weights[1:]])[0]
        return (TensorSpec((y.shape[0], y.shape[2], y.shape[3]), y.dtype),)

    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (1,), "a transposed convolution's output steps are not "
                                "split", kinds={2: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        x, k = shapes.inputs[0], shapes.weights[0]
        (n0, _, f0), (n1, _, f1) = out_box
        ws = [((0, f0, 0), (k[0], f1, k[2]))] + [((f0,), (f1,))] * (len(shapes.weights) > 1)
        return par.Tile((((n0, 0, 0), (n1, x[1], x[2])),), tuple(ws), (out_box,), (out_box,) * len(shapes.saved))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.conv2d_transpose_forward_cuda if ctx.backend == "cuda" else _k.conv2d_transpose_forward_cpu
        fn(_view4(inputs[0]), weights[0].reshape((1,) + tuple(weights[0].shape)),
           weights[1] if len(weights) > 1 else None, _view4(outputs[0]), (1, self.strides), self.padding,
           self.act, _view4(saved[0]) if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.conv2d_transpose_backward_cuda if ctx.backend == "cuda" else _k.conv2d_transpose_backward_cpu
        gk = grad_weights[0]
        fn(_view4(inputs[0]), weights[0].reshape((1,) + tuple(weights[0].shape)), _view4(grad_outputs[0]),
           None if grad_inputs[0] is None else _view4(grad_inputs[0]),
           None if gk is None else gk.reshape((1,) + tuple(gk.shape)),
           grad_weights[1] if len(grad_weights) > 1 else None, (1, self.strides), self.padding, ctx.acc_input(0),
           ctx.acc_weight(0), ctx.acc_weight(1), self.act, _view4(outputs[0]), _view4(saved[0]) if saved else None)


def conv1d_transpose(x, kernel, bias=None, strides=1, padding="valid", output_padding=None, activation=None,
                     name: str | None = None):
    """Transposed 1-D convolution of a (batch, steps, channels) tensor (the adjoint of `conv1d`), plus bias
    and an activation.

    Args:
        x: (batch, steps, in_channels) tensor.
        kernel: (taps, filters, in_channels) Variable or array.
        bias: (filters,) or None.
        strides: positive int.
        padding: "valid" or "same".
        output_padding: None or a non-negative int smaller than the stride.
        activation: None or a `kernels.activations` name, fused into the op.
        name: optional node name.

    Example:
        >>> conv1d_transpose(np.zeros((2, 5, 8), np.float32), np.ones((3, 4, 8), np.float32), strides=2).shape
        (2, 11, 4)
    """
    if isinstance(strides, bool) or not isinstance(strides, int) or strides < 1:
        raise ValueError(f"conv1d_transpose expects strides to be a positive int, received strides={strides!r}.")
    if output_padding is not None and (isinstance(output_padding, bool) or not isinstance(output_padding, int)
                                       or output_padding < 0):
        raise ValueError(f"conv1d_transpose expects output_padding to be None or a non-negative int, received "
                         f"output_padding={output_padding!r}.")
    op = Conv1DTransposeOp(strides=strides, padding=check_padding(padding, "conv1d_transpose"),
                           output_padding=output_padding, activation=_fused(activation))
    return apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)
