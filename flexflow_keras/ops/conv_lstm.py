"""`ConvLSTMOp`: Keras' convolutional LSTM (ConvLSTM1D/2D/3D) over a (batch, time, *spatial, channels)
tensor, and its functional form `conv_lstm`.

One op runs the whole sequence (`kernels.conv_lstm`: the input convolutions of every frame at once, the
recurrent one per step), so the time dim may be open in the model (``Input(shape=(None, 64, 64, 1))``): the
graph is recorded again at the data's length. Outputs: the sequence of h (return_sequences) or the last
h, then the last h and the last c (for return_state). Parallel rule: the batch only (each step needs the
whole previous state, as for LSTM).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, Op, apply_op
from flexflow_keras.ops.graph import TensorSpec
from kernels import conv_lstm as _k
from kernels._conv_geometry import check_padding, out_size

_WHY = "a convolutional LSTM splits only along the batch (each step needs the whole previous state)"


@dataclass(frozen=True)
class ConvLSTMOp(Op):
    """inputs (x (N, T, *spatial, C),), weights (kernel (*k, C, 4F), recurrent_kernel (*k, F, 4F)[, bias]).

    Attributes:
        strides, dilation: of the input convolution, one int per spatial dim.
        padding: "valid" or "same" (the recurrent convolution is always "same", stride 1).
        activation, recurrent_activation: `kernels.activations` names.
        go_backwards: read the frames last to first (the sequence is returned in the order processed).
        return_sequences: output 0 is every step's h, else the last one.
    """

    type_name: ClassVar[str] = "conv_lstm"
    strides: tuple[int, ...] = (1, 1)
    padding: str = "valid"
    dilation: tuple[int, ...] = (1, 1)
    activation: str = "tanh"
    recurrent_activation: str = "sigmoid"
    go_backwards: bool = False
    return_sequences: bool = False

    def _shapes(self, inputs, weights):
        if len(inputs) != 1 or len(weights) not in (2, 3):
            raise ShapeError(f"conv_lstm takes one input and weights (kernel, recurrent_kernel[, bias]), received "
                             f"{len(inputs)} inputs and {len(weights)} weights.")
        x, k, rk = inputs[0], weights[0], weights[1]
        rank = len(self.strides)
        if x.ndim != rank + 3:
            raise ShapeError(f"conv_lstm ({rank}-D) expects a {rank + 3}-D (batch, time, *spatial, channels) input, "
                             f"received shape {x.shape}.")
        f4 = k.shape[-1]
        if (k.ndim != rank + 2 or (x.shape[-1] is not None and k.shape[-2] != x.shape[-1]) or f4 % 4
                or tuple(rk.shape) != tuple(k.shape[:rank]) + (f4 // 4, f4)):
            raise ShapeError(f"conv_lstm: kernels of shapes (*k, {x.shape[-1]}, 4F) and (*k, F, 4F) were expected, "
                             f"received {k.shape} and {rk.shape}.")
        spatial = []
        for d, size in enumerate(x.shape[2:2 + rank]):
            window = (k.shape[d] - 1) * self.dilation[d] + 1
            n = None if size is None else out_size(size, window, self.strides[d], self.padding)
            if n is not None and n <= 0:
                raise ShapeError(f"conv_lstm: the kernel {tuple(k.shape[:rank])} does not fit the input {x.shape} "
                                 f"with padding='valid'; use padding='same' or a smaller kernel.")
            spatial.append(n)
        return x, tuple(spatial), f4 // 4

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        x, spatial, f = self._shapes(inputs, weights)
        last = TensorSpec((x.shape[0], *spatial, f), x.dtype)
        first = TensorSpec((x.shape[0], x.shape[1], *spatial, f), x.dtype) if self.return_sequences else last
        return first, last, last

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        x, spatial, f = self._shapes(inputs, weights)
        return tuple(TensorSpec((x.shape[0], x.shape[1], *spatial, m), x.dtype) for m in (4 * f, f, f))

    # --- parallel rule: the batch ----------------------------------------------------------------------
    def parallel_space(self, inputs, weights):
        extents = tuple(self.output_specs(inputs, weights)[0].shape)
        return par.ParallelSpace(par.dims_by_extent(extents, _WHY, fixed=range(1, len(extents))), extents)

    def tile(self, shapes, out_box, part=0, parts=1):
        b0, b1 = out_box[0][0], out_box[1][0]

        def rows(shape):
            return ((b0,) + (0,) * (len(shape) - 1), (b1,) + tuple(shape[1:]))

        return par.Tile(tuple(rows(s) for s in shapes.inputs), tuple(par.whole(s) for s in shapes.weights),
                        tuple(rows(s) for s in shapes.outputs), tuple(rows(s) for s in shapes.saved))

    # --- compute ---------------------------------------------------------------------------------------
    def _kw(self):
        return dict(strides=self.strides, padding=self.padding, dilation=self.dilation, activation=self.activation,
                    recurrent_activation=self.recurrent_activation, go_backwards=self.go_backwards)

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        fn = _k.conv_lstm_forward_cuda if ctx.backend == "cuda" else _k.conv_lstm_forward_cpu
        fn(inputs[0], weights[0], weights[1], weights[2] if len(weights) > 2 else None, outputs[0], outputs[1],
           outputs[2], tuple(saved), **self._kw())

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs,
                 grad_weights) -> None:
        fn = _k.conv_lstm_backward_cuda if ctx.backend == "cuda" else _k.conv_lstm_backward_cpu
        gb = grad_weights[2] if len(grad_weights) > 2 else None
        fn(inputs[0], weights[0], weights[1], tuple(saved), grad_outputs[0], grad_outputs[1], grad_outputs[2],
           grad_inputs[0], grad_weights[0], grad_weights[1], gb, **self._kw(), accumulate_x=ctx.acc_input(0),
           accumulate_kernel=ctx.acc_weight(0), accumulate_recurrent=ctx.acc_weight(1),
           accumulate_bias=ctx.acc_weight(2))


def conv_lstm(x, kernel, recurrent_kernel, bias=None, strides=1, padding="valid", dilation_rate=1,
              activation="tanh", recurrent_activation="sigmoid", go_backwards=False, return_sequences=False,
              name: str | None = None):
    """A convolutional LSTM over (batch, time, *spatial, channels): (output, last h, last c).

    Args:
        x: the input sequence of 1-D to 3-D frames, channels last.
        kernel: (*k, channels, 4 * filters); recurrent_kernel: (*k, filters, 4 * filters); bias: (4 * filters,)
            or None; gates in Keras' order i, f, c, o.
        strides, dilation_rate: an int or one per spatial dim, of the input convolution.
        padding: "valid" or "same".
        activation, recurrent_activation: Keras activation names.
        go_backwards, return_sequences: as for keras.layers.ConvLSTM2D.
        name: optional node name.
    """
    rank = len(x.shape) - 3

    def ints(v, what):
        t = (v,) * rank if isinstance(v, int) else tuple(v)
        if len(t) != rank or any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in t):
            raise ValueError(f"conv_lstm expects {what} to be a positive int or {rank} of them, received {v!r}.")
        return t

    op = ConvLSTMOp(strides=ints(strides, "strides"), padding=check_padding(padding, "conv_lstm"),
                    dilation=ints(dilation_rate, "dilation_rate"), activation=activation,
                    recurrent_activation=recurrent_activation, go_backwards=bool(go_backwards),
                    return_sequences=bool(return_sequences))
    return apply_op(op, [x], [kernel, recurrent_kernel] + ([] if bias is None else [bias]), name=name)
