"""`PenaltyOp`: a weight's regularization penalty as an eager op, so that ``model.losses`` read inside a
`GradientTape` (a custom training loop's ``loss += sum(model.losses)``) has a gradient: the regularizer's
own `penalty` forward and `gradient` backward, which training applies to the weight's gradient too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import TensorSpec


@dataclass(frozen=True)
class PenaltyOp(Op):
    """``regularizer.penalty(w)`` as a float32 scalar of the weight w (eager only)."""

    type_name: ClassVar[str] = "regularization_penalty"
    regularizer: object = field(default=None, compare=False)

    def sample_dim(self):
        return None

    def output_specs(self, inputs, weights):
        return (TensorSpec((), "float32"),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        outputs[0][...] = self.regularizer.penalty(weights[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_weights[0] is not None:
            grad_weights[0][...] = np.sum(grad_outputs[0]) * self.regularizer.gradient(weights[0])


def penalty(variable):
    """`variable`'s penalty as an eager value a recording tape sees: through `PenaltyOp` for a regularizer
    with its own `penalty` and `gradient` (the built-in ones), else the regularizer called on the Variable
    itself, so the keras.ops it composes (``0.01 * ops.sum(ops.square(w))``) are recorded."""
    from flexflow_keras.regularizers import has_own_gradient

    reg = variable.regularizer
    if has_own_gradient(reg):
        return apply_op(PenaltyOp(reg), [], [variable], name=f"{variable.path}_penalty")
    return reg(variable)
