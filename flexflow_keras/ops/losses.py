"""`LossOp`: per-sample losses with Keras 3 formulas (see `kernels.losses`), reducing over the last axis.

Inputs are (y_true, y_pred); only y_pred is differentiable. The output has y_pred's shape without the last
axis; the loss wrapper (or the execution's seed gradient) turns it into the batch mean. A softmax feeding
a crossentropy with ``from_logits=False`` is rewritten by the execution into ``from_logits=True`` on the
softmax's input (what Keras' TensorFlow backend does through ``_keras_logits``): `LossOp.on_logits`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import DataError, ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import deferred_check, fmt, kernel, to_host
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import losses as kloss

SPARSE = "sparse_categorical_crossentropy"
LOSS_NAMES = tuple(sorted(set(kloss.DENSE_LOSSES) | {SPARSE}))
ALIASES = {"mse": "mean_squared_error", "mae": "mean_absolute_error", "MSE": "mean_squared_error",
           "MAE": "mean_absolute_error"}
_FIXES = {
    "categorical_crossentropy": "Use one-hot labels (utils.to_categorical) or the "
                                "sparse_categorical_crossentropy loss for integer labels.",
    SPARSE: "Pass one integer class id per sample, shape (batch,) or (batch, 1); for one-hot labels use "
            "categorical_crossentropy.",
}


@dataclass(frozen=True)
class LossOp(Op):
    """A per-sample loss.

    Attributes:
        name: one of `LOSS_NAMES` (aliases mse / mae accepted by `ops.loss`).
        from_logits: crossentropies only. label_smoothing: categorical and binary crossentropy.
        axis: must be -1 (Keras' default; the class axis is last). epsilon: the clip epsilon (1e-7).
    """

    type_name: ClassVar[str] = "loss"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False, True)
    name: str = "mean_squared_error"
    from_logits: bool = False
    label_smoothing: float = 0.0
    axis: int = -1
    epsilon: float = 1e-7

    def __post_init__(self):
        if self.name not in LOSS_NAMES:
            raise ValueError(f"Unknown loss {self.name!r}. Valid losses: {', '.join(LOSS_NAMES)}.")
        if self.axis != -1:
            raise ValueError(f"Loss '{self.name}' supports only axis=-1 (the class axis last), received "
                             f"axis={self.axis}.")
        if not 0.0 <= self.label_smoothing <= 1.0:
            raise ValueError(f"Loss '{self.name}' expects label_smoothing in [0, 1], received "
                             f"{self.label_smoothing}.")

    def on_logits(self) -> LossOp:
        """This crossentropy computed from logits (for the softmax/sigmoid -> loss rewrite)."""
        return replace(self, from_logits=True)

    @property
    def _kind(self) -> int:
        dense, logits = kloss.DENSE_LOSSES[self.name]
        return logits if self.from_logits else dense

    def output_specs(self, inputs, weights):
        if len(inputs) != 2:
            raise ShapeError(f"loss '{self.name}' takes (y_true, y_pred), received {len(inputs)} inputs.")
        t, p = inputs
        if p.ndim < 1:
            raise ShapeError(f"loss '{self.name}' needs y_pred of rank >= 1, received shape {fmt(p.shape)}.")
        if self.name == SPARSE:
            ok = tuple(t.shape) == tuple(p.shape[:-1]) or tuple(t.shape) == tuple(p.shape[:-1]) + (1,)
        elif self.name == "categorical_crossentropy":
            ok = tuple(t.shape) == tuple(p.shape)
        else:  # Keras squeezes or expands a trailing 1 so the ranks agree
            ok = (tuple(t.shape) == tuple(p.shape) or tuple(t.shape) + (1,) == tuple(p.shape)
                  or tuple(t.shape) == tuple(p.shape) + (1,))
        if not ok:
            raise ShapeError(f"loss '{self.name}' received labels of shape {fmt(t.shape)} for predictions of "
                             f"shape {fmt(p.shape)}. {_FIXES.get(self.name, 'Give labels the shape of the predictions.')}")
        return (TensorSpec(tuple(p.shape[:-1]), p.dtype if np.dtype(p.dtype).kind == "f" else "float32"),)

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def tile(self, shapes, out_box, part=0, parts=1):
        # the leading dims follow the per-sample loss's tile; the class axis (and a trailing 1) is whole
        lo, hi = out_box
        n = len(lo)
        ins = tuple((tuple(lo[:n]) + (0,) * (len(s) - n), tuple(hi[:n]) + tuple(s[n:])) for s in shapes.inputs)
        return par.Tile(ins, (), (out_box,))

    def _true(self, ctx, t, p):
        if ctx.backend == "cpu":
            return np.asarray(t, dtype=p.dtype).reshape(p.shape)
        return t.reshape(p.shape) if tuple(t.shape) != tuple(p.shape) else t

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        t, p = inputs
        if self.name == SPARSE:
            classes = tuple(p.shape)[-1]

            def describe(row, label) -> DataError:
                return DataError(f"sparse_categorical_crossentropy received label {label} for sample row {row}, "
                                  f"outside [0, {classes}): the model has {classes} classes. Make the last layer "
                                  f"as wide as the number of classes, or fix the labels.")

            bad = kernel(kloss, "sparse_loss_forward", ctx)(t, p, outputs[0], self.from_logits, self.epsilon,
                                                            **deferred_check(ctx, self, describe))
            if bad >= 0:
                raise describe(bad, to_host(t).reshape(-1)[bad])
            return
        kernel(kloss, "loss_forward", ctx)(self._kind, self._true(ctx, t, p), p, outputs[0], self.label_smoothing,
                                           self.epsilon)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        dp = grad_inputs[1] if len(grad_inputs) > 1 else None
        if dp is None:
            return
        t, p = inputs
        if self.name == SPARSE:
            kernel(kloss, "sparse_loss_backward", ctx)(t, p, grad_outputs[0], dp, self.from_logits, self.epsilon,
                                                       ctx.acc_input(1))
            return
        kernel(kloss, "loss_backward", ctx)(self._kind, self._true(ctx, t, p), p, grad_outputs[0], dp,
                                            self.label_smoothing, self.epsilon, ctx.acc_input(1))
