"""`WeightsAsInputsOp`: an op whose weights arrive as computed tensors.

An op such as conv2d or dense takes its kernel as a weight (a Variable the execution keeps in a weight
region, with its gradient and optimizer slots). A custom layer may instead compute the kernel in
``call()`` from its weights (a weight-standardized convolution: ``convolution_op(x, (k - mean) / std)``,
keras.io's subclassing_conv_layers), so the "weight" is a KerasTensor of the graph. `apply_op` then
records this wrapper: the inner op's inputs followed by its weights, all as inputs. Forward and backward
are the inner op's, with the weight positions read from (and their gradients written to) the trailing
inputs; the parallel rules are the inner op's, its weight boxes becoming those inputs' boxes (a sample
split reads the kernel whole on every piece, and the execution sums its gradient as for any input read
by several pieces). Ops that keep state in weights (BatchNormalization's moving statistics) are refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.base import KernelContext, Op
from flexflow_keras.ops.graph import TensorSpec


@dataclass(frozen=True)
class WeightsAsInputsOp(Op):
    """`inner` with its weights given as the inputs after its first `n_inputs`.

    Attributes:
        inner: the op computed (conv2d, dense, ...); it must keep no state in its weights.
        n_inputs: how many leading inputs are the inner op's own inputs.
    """

    type_name: ClassVar[str] = "weights_as_inputs"
    inner: Op | None = None
    n_inputs: int = 1

    def __post_init__(self):
        if self.inner is None:
            raise ShapeError("weights_as_inputs needs the op it computes (inner=...).")
        if self.inner.n_trainable_weights is not None or self.inner.two_stage_backward:
            raise ShapeError(f"{self.inner.type_name} keeps state in its weights (moving statistics), so they "
                             f"cannot be computed tensors: pass its weights as Variables.")

    def is_differentiable(self, i: int) -> bool:
        return i >= self.n_inputs or self.inner.is_differentiable(i)

    def _split(self, inputs: Sequence):
        return tuple(inputs[:self.n_inputs]), tuple(inputs[self.n_inputs:])

    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        if weights:
            raise ShapeError(f"weights_as_inputs({self.inner.type_name}) takes its weights as inputs, received "
                             f"{len(weights)} weights.")
        return self.inner.output_specs(*self._split(inputs))

    def saved_specs(self, inputs, weights):
        return self.inner.saved_specs(*self._split(inputs))

    def stats_specs(self, inputs, weights, training):
        return self.inner.stats_specs(*self._split(inputs), training)

    def sample_dim(self):
        return self.inner.sample_dim()

    def parallel_space(self, inputs, weights):
        return self.inner.parallel_space(*self._split(inputs))

    def tile(self, shapes: par.TileShapes, out_box: par.Box, part: int = 0, parts: int = 1) -> par.Tile:
        x, w = self._split(shapes.inputs)
        t = self.inner.tile(dataclasses.replace(shapes, inputs=x, weights=w), out_box, part, parts)
        return dataclasses.replace(t, inputs=tuple(t.inputs) + tuple(t.weights), weights=())

    def _ctx(self, ctx: KernelContext, n_weights: int) -> KernelContext:
        n = self.n_inputs
        return dataclasses.replace(ctx, accumulate_inputs=tuple(ctx.acc_input(i) for i in range(n)),
                                   accumulate_weights=tuple(ctx.acc_input(n + j) for j in range(n_weights)),
                                   extra={k: v for k, v in ctx.extra.items() if k != "moments"})

    def forward_stats(self, ctx, inputs, weights, stats):
        x, w = self._split(inputs)
        self.inner.forward_stats(self._ctx(ctx, len(w)), x, w, stats)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        x, w = self._split(inputs)
        self.inner.forward(self._ctx(ctx, len(w)), x, w, outputs, saved, stats)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        x, w = self._split(inputs)
        gx, gw = self._split(grad_inputs)
        self.inner.backward(self._ctx(ctx, len(w)), x, w, outputs, saved, stats, grad_outputs, gx, gw)


def as_inputs(op: Op, inputs: Sequence, weights: Sequence, name: str | None):
    """`apply_op`'s arguments for `op` whose `weights` hold a KerasTensor: the wrapper, the inputs followed
    by the weights as tensors (Variables read through a variable op, arrays as constants), no weights, and
    the name."""
    from flexflow_keras.ops.functional import _tensor

    wrapped = WeightsAsInputsOp(op, len(inputs))
    tensors = [_tensor(v, True) for v in list(inputs) + list(weights)]
    return wrapped, tensors, (), name
