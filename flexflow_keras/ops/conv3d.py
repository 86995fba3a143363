"""3-D window ops over (batch, depth, height, width, channels) tensors: `Conv3DOp` (strides, dilation,
padding valid/same, bias and a fused activation), `Conv3DTransposeOp` (strides, padding,
output_padding, bias) and `Pool3DOp` (max / average), with their functional forms `conv3d`,
`conv3d_transpose` and `pool3d`.

The kernels (`kernels.conv3d`) run the 2-D ones: a convolution folds its depth taps into the channels of one
2-D convolution, a pooling pools height and width and then depth. Parallel rules: the batch, and the output
channels (conv3d: parameter, splitting the kernel and bias; pool3d: the input channels follow). The spatial
dims are not split: the kernels take "valid"/"same" only, not the explicit local pads of a halo'd tile.
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
from kernels import conv3d as _k
from kernels import pool2d as _pool
from kernels._conv_geometry import check_padding, out_size
from kernels.conv_transpose2d import transpose_output_length

_DIMS = ("depth", "height", "width")
_WHY = "3-D window ops split along the batch and the channels only, not along depth, height or width"


def _check_volume(x: TensorSpec, who: str) -> None:
    if x.ndim != 5:
        raise ShapeError(f"{who} expects a 5-D (batch, depth, height, width, channels) input, received shape "
                         f"{x.shape}. Add a channels dim with Reshape((d, h, w, 1)) or x[..., None] on the data.")


def _spatial(who: str, x: TensorSpec, window, strides, padding: str, what: str) -> list:
    dims = []
    for size, k, s, name in zip(x.shape[1:4], window, strides, _DIMS, strict=True):
        if size is None:
            dims.append(None)
            continue
        if padding == "valid" and size < k:
            raise ShapeError(f"{who}: the input {name} {size} (shape {x.shape}) is smaller than the {what}'s {k} "
                             f"with padding='valid'. Use padding='same' or a smaller {what}.")
        dims.append(out_size(size, k, s, padding))
    return dims


def _box(out_box, channels: tuple[int, int], x_shape) -> par.Box:
    """The input box of an output tile: its samples, every voxel, the channels given."""
    (n0, *_), (n1, *_) = out_box
    return (n0, 0, 0, 0, channels[0]), (n1, int(x_shape[1]), int(x_shape[2]), int(x_shape[3]), channels[1])


@dataclass(frozen=True)
class Conv3DOp(Op):
    """y = activation(conv3d(x, kernel) + bias); inputs (x,), weights (kernel (KD, KH, KW, C, CO),) or
    (kernel, bias).

    Attributes:
        strides: (sd, sh, sw) positive ints.
        padding: "valid" or "same".
        dilation: (dd, dh, dw) positive ints (with strides 1 where above 1, as in Keras).
        activation: a `kernels.activations` name.
        activation_params: that activation's parameters as sorted (name, value) pairs.
    """

    type_name: ClassVar[str] = "conv3d"
    strides: tuple[int, int, int] = (1, 1, 1)
    padding: str = "valid"
    dilation: tuple[int, int, int] = (1, 1, 1)
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()

    @cached_property
    def act(self) -> _acts.Activation:
        """The kernels' Activation value."""
        return _acts.resolve_activation(self.activation, **dict(self.activation_params))

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"conv3d takes one input and weights (kernel[, bias]), received {len(inputs)} "
                             f"inputs and {len(weights)} weights.")
        x, k = inputs[0], weights[0]
        _check_volume(x, "conv3d")
        if k.ndim != 5 or (x.shape[4] is not None and x.shape[4] != k.shape[3]):
            raise ShapeError(f"conv3d: a kernel of shape (kd, kh, kw, in_channels, filters) matching the input's "
                             f"{x.shape[4]} channels was expected, received kernel {k.shape} for input {x.shape}.")
        if len(weights) == 2 and tuple(weights[1].shape) != (k.shape[4],):
            raise ShapeError(f"conv3d expects a bias of shape ({k.shape[4]},), received {weights[1].shape}.")
        window = [(kk - 1) * d + 1 for kk, d in zip(k.shape[:3], self.dilation, strict=True)]
        dims = _spatial("conv3d", x, window, self.strides, self.padding, "kernel")
        return (TensorSpec((x.shape[0], *dims, k.shape[4]), x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if _acts.grad_from_output(self.act):
            return ()
        return self.output_specs(inputs, weights)  # the pre-activation

    # --- parallel rules: batch; output channels (parameter) --------------------------------------------
    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (1, 2, 3), _WHY, kinds={4: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        x, k = shapes.inputs[0], shapes.weights[0]
        c0, c1 = out_box[0][4], out_box[1][4]
        ws = [((0, 0, 0, 0, c0), (k[0], k[1], k[2], k[3], c1))] + [((c0,), (c1,))] * (len(shapes.weights) > 1)
        return par.Tile((_box(out_box, (0, int(x[4])), x),), tuple(ws), (out_box,), (out_box,) * len(shapes.saved))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.conv3d_forward_cuda if ctx.backend == "cuda" else _k.conv3d_forward_cpu
        fn(inputs[0], weights[0], weights[1] if len(weights) > 1 else None, outputs[0], self.strides, self.padding,
           self.dilation, self.act, pre_activation=saved[0] if saved else None)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.conv3d_backward_cuda if ctx.backend == "cuda" else _k.conv3d_backward_cpu
        fn(inputs[0], weights[0], outputs[0], grad_outputs[0], grad_inputs[0], grad_weights[0],
           grad_weights[1] if len(grad_weights) > 1 else None, self.strides, self.padding, self.dilation, self.act,
           saved[0] if saved else None, ctx.acc_input(0), ctx.acc_weight(0), ctx.acc_weight(1))


@dataclass(frozen=True)
class Conv3DTransposeOp(Op):
    """y = conv3d_transpose(x, kernel) + bias; inputs (x,), weights (kernel (KD, KH, KW, F, C),) or
    (kernel, bias). Any activation is a separate op.

    Attributes:
        strides: (sd, sh, sw) positive ints.
        padding: "valid" or "same".
        output_padding: (pd, ph, pw) extra output voxels per dim (each smaller than its stride), or None for
            Keras' default sizes.
    """

    type_name: ClassVar[str] = "conv3d_transpose"
    strides: tuple[int, int, int] = (1, 1, 1)
    padding: str = "valid"
    output_padding: tuple[int, int, int] | None = None

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"conv3d_transpose takes one input and weights (kernel[, bias]), received "
                             f"{len(inputs)} inputs and {len(weights)} weights.")
        x, k = inputs[0], weights[0]
        _check_volume(x, "conv3d_transpose")
        if k.ndim != 5 or (x.shape[4] is not None and x.shape[4] != k.shape[4]):
            raise ShapeError(f"conv3d_transpose: a kernel of shape (kd, kh, kw, filters, in_channels) matching the "
                             f"input's {x.shape[4]} channels was expected, received kernel {k.shape} for input "
                             f"{x.shape}.")
        if len(weights) == 2 and tuple(weights[1].shape) != (k.shape[3],):
            raise ShapeError(f"conv3d_transpose expects a bias of shape ({k.shape[3]},), received {weights[1].shape}.")
        dims = []
        for d, size in enumerate(x.shape[1:4]):
            if size is None:
                dims.append(None)
                continue
            extra = None if self.output_padding is None else self.output_padding[d]
            length = transpose_output_length(size, k.shape[d], self.strides[d], self.padding, extra)
            if out_size(length, k.shape[d], self.strides[d], self.padding) != size:
                raise ShapeError(f"conv3d_transpose: output_padding={self.output_padding} gives an output of "
                                 f"{length} along the {_DIMS[d]} that the convolution back does not map to the "
                                 f"input's {size} (input {x.shape}, kernel {k.shape}, strides {self.strides}, "
                                 f"padding {self.padding!r}); give output_padding values smaller than the strides.")
            dims.append(length)
        return (TensorSpec((x.shape[0], *dims, k.shape[3]), x.dtype),)

    # --- parallel rules: batch; filters (parameter) ----------------------------------------------------
    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (1, 2, 3), _WHY, kinds={4: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        x, k = shapes.inputs[0], shapes.weights[0]
        f0, f1 = out_box[0][4], out_box[1][4]
        ws = [((0, 0, 0, f0, 0), (k[0], k[1], k[2], f1, k[4]))] + [((f0,), (f1,))] * (len(shapes.weights) > 1)
        return par.Tile((_box(out_box, (0, int(x[4])), x),), tuple(ws), (out_box,))

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.conv3d_transpose_forward_cuda if ctx.backend == "cuda" else _k.conv3d_transpose_forward_cpu
        fn(inputs[0], weights[0], weights[1] if len(weights) > 1 else None, outputs[0], self.strides, self.padding)

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.conv3d_transpose_backward_cuda if ctx.backend == "cuda" else _k.conv3d_transpose_backward_cpu
        fn(inputs[0], weights[0], grad_outputs[0], grad_inputs[0], grad_weights[0],
           grad_weights[1] if len(grad_weights) > 1 else None, self.strides, self.padding, ctx.acc_input(0),
           ctx.acc_weight(0), ctx.acc_weight(1))


@dataclass(frozen=True)
class Pool3DOp(Op):
    """Max or average pooling over depth, height and width; one 5-D input, no weights.

    Saved buffers: the pool over (height, width) of every depth slice, and for "max" the int32 winners of
    both stages (the 2-D kernels' forward writes them; the 3-D max gradient, TensorFlow's, goes to every
    element equal to its window's maximum and reads the input and output instead).

    Attributes:
        pool_size: (pd, ph, pw) window.
        strides: (sd, sh, sw) step.
        padding: "valid" or "same" (TensorFlow's: padded voxels never win a max or count in a mean).
        mode: "max" or "avg".
    """

    type_name: ClassVar[str] = "pool3d"
    pool_size: tuple[int, int, int] = (2, 2, 2)
    strides: tuple[int, int, int] = (2, 2, 2)
    padding: str = "valid"
    mode: str = "max"

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if len(inputs) != 1 or weights:
            raise ShapeError(f"pool3d takes one input and no weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x = inputs[0]
        _check_volume(x, "pool3d")
        dims = _spatial("pool3d", x, self.pool_size, self.strides, self.padding, "pool_size")
        return (TensorSpec((x.shape[0], *dims, x.shape[4]), x.dtype),)

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        x, (y,) = inputs[0], self.output_specs(inputs, weights)
        mid = (x.shape[0], x.shape[1], y.shape[2], y.shape[3], x.shape[4])
        if self.mode != "max":
            return (TensorSpec(mid, x.dtype),)
        return TensorSpec(mid, x.dtype), TensorSpec(mid, "int32"), TensorSpec(y.shape, "int32")

    # --- parallel rules: batch; channels ----------------------------------------------------------------
    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, (1, 2, 3), _WHY)

    def tile(self, shapes, out_box, part=0, parts=1):
        x = shapes.inputs[0]
        c = (out_box[0][4], out_box[1][4])
        xbox = _box(out_box, c, x)
        mid = (xbox[0], (xbox[1][0], int(x[1]), int(shapes.saved[0][2]), int(shapes.saved[0][3]), c[1]))
        return par.Tile((xbox,), (), (out_box,), (mid,) + (mid, out_box)[:len(shapes.saved) - 1])

    def _argmax(self, saved):
        return (saved[1], saved[2]) if self.mode == "max" else None

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.pool3d_forward_cuda if ctx.backend == "cuda" else _k.pool3d_forward_cpu
        fn(inputs[0], outputs[0], saved[0], self.pool_size, self.strides, self.padding, self.mode,
           self._argmax(saved))

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        if grad_inputs[0] is None:
            return
        fn = _k.pool3d_backward_cuda if ctx.backend == "cuda" else _k.pool3d_backward_cpu
        fn(inputs[0], outputs[0], grad_outputs[0], grad_inputs[0], saved[0], self.pool_size, self.strides,
           self.padding, self.mode, self._argmax(saved), ctx.acc_input(0))


def conv3d(x, kernel, bias=None, strides=1, padding="valid", dilation_rate=1, activation=None,
           name: str | None = None):
    """3-D convolution of an NDHWC tensor: ``activation(conv3d(x, kernel) + bias)``.

    Args:
        x: (batch, depth, height, width, in_channels) tensor.
        kernel: (kd, kh, kw, in_channels, filters) Variable or array.
        bias: (filters,) or None.
        strides: int or 3 positive ints.
        padding: "valid" or "same" (TensorFlow's split).
        dilation_rate: int or 3 ints.
        activation: None or a Keras activation name (fused), or a callable applied after.
        name: optional node name.

    Example:
        >>> conv3d(np.zeros((2, 6, 8, 8, 1), np.float32), np.ones((3, 3, 3, 1, 4), np.float32)).shape
        (2, 4, 6, 6, 4)
    """
    dilation = _k.triple(dilation_rate, "conv3d", "dilation_rate")
    if max(dilation[1:]) > 1 and max(_k.triple(strides, "conv3d", "strides")[1:]) > 1:
        raise ValueError(f"conv3d: strides={strides!r} above 1 along height or width cannot be combined with "
                         f"dilation_rate={dilation_rate!r} above 1 there (as in Keras); set one of them to 1.")
    fused = activation if activation is None or isinstance(activation, str) else None
    if fused is not None and fused not in _acts.ACTIVATION_NAMES:
        fused = None
    op = Conv3DOp(strides=_k.triple(strides, "conv3d", "strides"), padding=check_padding(padding, "conv3d"),
                  dilation=dilation, activation="linear" if fused is None else fused)
    y = apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)
    if activation is None or fused is not None:
        return y
    if callable(activation):
        return activation(y)
    from flexflow_keras import ops

    return ops.activation(y, activation)


def conv3d_transpose(x, kernel, bias=None, strides=1, padding="valid", output_padding=None,
                     name: str | None = None):
    """Transposed 3-D convolution of an NDHWC tensor (the adjoint of `conv3d`), plus bias.

    Args:
        x: (batch, depth, height, width, in_channels) tensor.
        kernel: (kd, kh, kw, filters, in_channels) Variable or array (Keras' Conv3DTranspose layout).
        bias: (filters,) or None.
        strides: int or 3 positive ints.
        padding: "valid" or "same".
        output_padding: None, an int or 3 non-negative ints, each smaller than its stride.
        name: optional node name.

    Example:
        >>> conv3d_transpose(np.zeros((1, 2, 3, 3, 4), np.float32), np.ones((2, 2, 2, 5, 4), np.float32),
        ...                  strides=2).shape
        (1, 4, 6, 6, 5)
    """
    extra = None
    if output_padding is not None:
        extra = (output_padding,) * 3 if isinstance(output_padding, int) else tuple(output_padding)
        if len(extra) != 3 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in extra):
            raise ValueError(f"conv3d_transpose expects output_padding to be None, a non-negative int or 3 of them, "
                             f"received output_padding={output_padding!r}.")
    op = Conv3DTransposeOp(strides=_k.triple(strides, "conv3d_transpose", "strides"),
                           padding=check_padding(padding, "conv3d_transpose"), output_padding=extra)
    return apply_op(op, [x], [kernel] if bias is None else [kernel, bias], name=name)


def pool3d(x, pool_size, strides=None, padding="valid", mode="max", name: str | None = None):
    """Max or average pooling of an NDHWC tensor.

    Args:
        x: (batch, depth, height, width, channels) tensor.
        pool_size: int or 3 positive ints.
        strides: int or 3 positive ints; pool_size when None.
        padding: "valid" or "same".
        mode: "max" or "avg".
        name: optional node name.

    Example:
        >>> pool3d(np.zeros((2, 4, 6, 6, 3), np.float32), 2).shape
        (2, 2, 3, 3, 3)
    """
    size = _k.triple(pool_size, "pool3d", "pool_size")
    if mode not in _pool.MODES:
        raise ValueError(f"pool3d expects mode 'max' or 'avg', received mode={mode!r}.")
    op = Pool3DOp(pool_size=size, strides=size if strides is None else _k.triple(strides, "pool3d", "strides"),
                  padding=check_padding(padding, "pool3d"), mode=mode)
    return apply_op(op, [x], name=name)
