"""`TimeSliceOp`: one time step ``x[:, index]`` of a (batch, time, ...) tensor, and `time_slice`.

TimeDistributed applies a layer whose op cannot act on extra leading dims to each step in turn (the batch
dim cannot be merged with time: a leading None always means "the batch" to the execution). Backward
writes the step's gradient into its slice (zeros elsewhere, or adds into the slice when accumulating).
Only the batch splits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import fmt, to_host, write
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import KerasTensor, TensorSpec


@dataclass(frozen=True)
class TimeSliceOp(Op):
    """``y = x[:, index]`` for x of rank >= 3 (batch, time, ...)."""

    type_name: ClassVar[str] = "time_slice"
    index: int = 0

    def output_specs(self, inputs, weights):
        if len(inputs) != 1 or weights:
            raise ShapeError(f"time_slice takes 1 input and no weights, received {len(inputs)} and {len(weights)}.")
        x = inputs[0]
        if x.ndim < 3 or x.shape[1] is None or not 0 <= self.index < x.shape[1]:
            raise ShapeError(f"time_slice: step {self.index} needs an input (batch, timesteps, ...) with at least "
                             f"{self.index + 1} known steps, received shape {fmt(x.shape)}.")
        return (TensorSpec((x.shape[0],) + tuple(x.shape[2:]), x.dtype),)

    def tile(self, shapes, out_box, part=0, parts=1):
        b0, b1 = out_box[0][0], out_box[1][0]
        x = shapes.inputs[0]
        return par.Tile((((b0,) + (0,) * (len(x) - 1), (b1,) + tuple(x[1:])),), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        if ctx.backend == "cpu":
            outputs[0][...] = inputs[0][:, self.index]
        else:  # a strided device slice: copy through the host (TimeDistributed's fallback path only)
            write(outputs[0], to_host(inputs[0])[:, self.index])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        gx = grad_inputs[0]
        if gx is None:
            return
        if ctx.backend == "cpu":
            if not ctx.acc_input(0):
                gx[...] = 0
            gx[:, self.index] += grad_outputs[0]
            return
        host = to_host(gx) if ctx.acc_input(0) else np.zeros(gx.shape, gx.dtype)
        host[:, self.index] += to_host(grad_outputs[0])
        write(gx, host)


def time_slice(x, index: int, name: str | None = None):
    """``x[:, index]`` (symbolic on KerasTensors, eager on arrays)."""
    return apply_op(TimeSliceOp(int(index)), [x if isinstance(x, KerasTensor) else np.asarray(x)], name=name)
