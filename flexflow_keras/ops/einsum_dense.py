"""`ProjectionOp`: ``y = tensordot(x, kernel, n_contract) + bias``, the projections of Keras'
MultiHeadAttention (EinsumDense ``...d,dhk->...hk`` and ``...hk,hkd->...d``) with Keras 3's kernel layout.

The kernel keeps its N-D shape (so weights copy to and from tf.keras as they are); the kernels are the
Dense ones (`kernels.linear`) on 2-D views: x as (rows, prod(contracted)), the kernel as
(prod(contracted), prod(out)), the bias flat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import fmt, kernel
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import linear as klin


@dataclass(frozen=True)
class ProjectionOp(Op):
    """Contract the trailing `n_contract` dims of x with the leading dims of the kernel; add the bias
    (of the kernel's remaining dims' shape).

    Inputs (x,); weights (kernel,) or (kernel, bias).
    """

    type_name: ClassVar[str] = "einsum_dense"
    n_contract: int = 1

    def output_specs(self, inputs, weights):
        if len(inputs) != 1 or len(weights) not in (1, 2):
            raise ShapeError(f"einsum_dense takes 1 input and 1 or 2 weights, received {len(inputs)} and "
                             f"{len(weights)}.")
        x, k, n = inputs[0], weights[0], self.n_contract
        if k.ndim <= n or x.ndim <= n or tuple(x.shape[-n:]) != tuple(k.shape[:n]):
            raise ShapeError(f"einsum_dense contracts the last {n} dims of the input with the first {n} of the "
                             f"kernel; received input shape {fmt(x.shape)} and kernel shape {fmt(k.shape)}.")
        out = tuple(k.shape[n:])
        if len(weights) == 2 and tuple(weights[1].shape) != out:
            raise ShapeError(f"einsum_dense expects a bias of shape {fmt(out)}, received {fmt(weights[1].shape)}.")
        return (TensorSpec(tuple(x.shape[:-n]) + out, x.dtype),)

    def tile(self, shapes, out_box, part=0, parts=1):
        # the output's leading dims follow the input's; the contracted dims and the weights are read whole
        return lead_tile(shapes, out_box, len(shapes.inputs[0]) - self.n_contract)

    def _views(self, w):
        n_in = math.prod(w.shape[:self.n_contract])
        return w.reshape(n_in, w.size // n_in)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        b = weights[1].reshape(weights[1].size) if len(weights) > 1 else None
        kernel(klin, "linear_forward", ctx)(inputs[0], self._views(weights[0]), b, outputs[0])

    def backward_reads(self):
        return True, False  # no activation: the output's gradient is the sum's

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        dw = self._views(grad_weights[0]) if grad_weights[0] is not None else None
        db = grad_weights[1] if len(grad_weights) > 1 else None
        db = db.reshape(db.size) if db is not None else None
        kernel(klin, "linear_backward", ctx)(inputs[0], self._views(weights[0]), outputs[0], grad_outputs[0],
                                             grad_inputs[0], dw, db,
                                             accumulate=(ctx.acc_input(0), ctx.acc_weight(0), ctx.acc_weight(1)))


def lead_tile(shapes: par.TileShapes, out_box: par.Box, n_lead: int) -> par.Tile:
    """The tile of an op whose output's first `n_lead` dims are its input's first `n_lead` dims (the
    rest of the input read whole), weights whole (the default tile broadcasts, which misreads ranks that
    differ)."""
    x = shapes.inputs[0]
    lo, hi = out_box
    xbox = (tuple(lo[:n_lead]) + (0,) * (len(x) - n_lead), tuple(hi[:n_lead]) + tuple(x[n_lead:]))
    return par.Tile((xbox,), tuple(par.whole(w) for w in shapes.weights), (out_box,))
