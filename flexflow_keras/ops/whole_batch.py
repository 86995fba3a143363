"""`WholeBatchPenaltyOp`: a scalar penalty of a batched tensor computed by a Python function on the whole
batch at run time, for an activity regularizer whose symbolic trace mixes rows of different samples.

A model's graph splits tensors by samples, so a tensor with two batch dims cannot be recorded (keras.io's
PointNet: its OrthogonalRegularizer takes ``tf.tensordot(x, x, axes=(2, 2))`` of the (batch, f, f)
transform, a (batch, f, batch, f) tensor, reshapes it to (-1, f, f) and sums ``l2reg * (xxt - eye)**2``:
a scalar that TensorFlow computes over the whole batch, samples crossed). Such a regularizer is a function
of the layer's output alone and ends in a scalar, so it runs here as one op: the forward calls it eagerly
on the output's values (the whole batch, one task: the op's output has no sample dim) while a
`GradientTape` records, and keeps the gradient of the penalty with respect to the output; the backward
scales that by the incoming gradient. Values and gradients are the regularizer's own eager ops (the
kernels every eager op runs), so they are TensorFlow's where those are.

Evaluations run one at a time (a lock): the tape is process-wide, and two regularizers of one model may run
on two workers at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import to_host, write
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import TensorSpec

_LOCK = threading.Lock()


@dataclass(frozen=True)
class WholeBatchPenaltyOp(Op):
    """``fn(x)`` of the whole batch x, a scalar; one input, no weights.

    Attributes:
        fn: the penalty (a regularizer), called on an EagerTensor of the input's values.
        label: what it is, for errors ("activity_regularizer of layer 'dense_3'").
    """

    type_name: ClassVar[str] = "whole_batch_penalty"
    fn: Callable = field(default=None, hash=False)
    label: str = "penalty"

    def output_specs(self, inputs, weights):
        if len(inputs) != 1 or weights:
            raise ShapeError(f"{self.label}: a whole-batch penalty takes one input and no weights, received "
                             f"{len(inputs)} inputs and {len(weights)} weights.")
        dtype = inputs[0].dtype if np.dtype(inputs[0].dtype).kind == "f" else "float32"
        return (TensorSpec((), dtype),)

    def saved_specs(self, inputs, weights):
        return (TensorSpec(inputs[0].shape, self.output_specs(inputs, weights)[0].dtype),)  # d penalty / d x

    def sample_dim(self):
        return None  # the whole batch, in one task

    def parallel_space(self, inputs, weights):
        return par.ParallelSpace((), ())

    def tile(self, shapes, out_box, part=0, parts=1):
        return par.Tile((par.whole(shapes.inputs[0]),), (), (out_box,), tuple(par.whole(s) for s in shapes.saved))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        value, grad = self.evaluate(to_host(inputs[0]))
        write(outputs[0], np.asarray(value, outputs[0].dtype).reshape(outputs[0].shape))
        if saved:
            write(saved[0], np.asarray(grad, saved[0].dtype).reshape(saved[0].shape))

    def evaluate(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(fn(x), d fn(x) / dx) on host values."""
        from flexflow_keras.ops.eager_tensor import eager
        from flexflow_keras.ops.tape import GradientTape

        source = eager(np.array(x, copy=True))
        with _LOCK:
            with GradientTape() as tape:
                tape.watch(source)
                value = self.fn(source)
            if value is None or np.size(np.asarray(value)) != 1:
                raise ShapeError(f"{self.label}: computed on the whole batch, it must return a scalar; it returned "
                                 f"{None if value is None else np.shape(np.asarray(value))}.")
            grad = tape.gradient(value, source)
        return np.asarray(value), (np.zeros_like(x) if grad is None else np.asarray(grad))

    def backward_reads(self):
        return False, False  # the gradient the forward kept

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        g = to_host(saved[0]) * to_host(grad_outputs[0]).reshape(())
        write(grad_inputs[0], to_host(grad_inputs[0]) + g if ctx.acc_input(0) else g)


def whole_batch_penalty(fn: Callable, x, label: str = "penalty"):
    """``fn(x)`` computed on the whole batch of the symbolic tensor `x` at run time, as a scalar graph tensor
    that trains (see the module docstring); on arrays, the value at once."""
    return apply_op(WholeBatchPenaltyOp(fn=fn, label=label), [x])
