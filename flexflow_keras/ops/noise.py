"""Training-only noise ops and the activity penalty: `GaussianNoiseOp` (additive: GaussianNoise;
multiplicative: GaussianDropout), `AlphaDropoutOp` and `ActivityRegularizationOp`.

Each is the identity in inference (``ctx.training`` False). The noise is a pure function of
(ctx.seed, ctx.step, the op's seed, global sample, element), as `DropoutOp`'s mask, so every
data-parallel split draws the same numbers; their parallel rule is the sample dim (the draws are
indexed by whole samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import kernel
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.nn_ops import DropoutOp
from kernels import dropout as kdrop
from kernels import noise as knoise
from kernels import shape as kshape


def _one(who: str, inputs, weights) -> None:
    if len(inputs) != 1 or weights:
        raise ShapeError(f"{who} takes 1 input and no weights, received {len(inputs)} inputs and "
                         f"{len(weights)} weights.")


def _identity_forward(ctx, inputs, outputs) -> None:
    kernel(kshape, "copy_forward", ctx)(inputs[0], outputs[0])


def _identity_backward(ctx, grad_outputs, grad_inputs) -> None:
    if grad_inputs[0] is not None:
        kernel(kshape, "copy_backward", ctx)(grad_outputs[0], grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class GaussianNoiseOp(Op):
    """``x + stddev * N(0, 1)`` or, `multiplicative`, ``x * (1 + stddev * N(0, 1))`` in training.

    Attributes:
        stddev: the noise's standard deviation (>= 0). seed: this op's seed (the layer's).
        multiplicative: GaussianDropout's form; its factor is a saved buffer for backward.
        always: the call was given ``training=True``: active in inference too.
    """

    type_name: ClassVar[str] = "gaussian_noise"
    stddev: float = 0.0
    seed: int = 0
    multiplicative: bool = False
    always: bool = False

    def __post_init__(self):
        if not float(self.stddev) >= 0.0:
            raise ValueError(f"gaussian_noise expects stddev >= 0, received stddev={self.stddev!r}.")

    def output_specs(self, inputs, weights):
        _one(self.type_name, inputs, weights)
        return (inputs[0],)

    def saved_specs(self, inputs, weights):
        return (inputs[0],) if self.multiplicative else ()

    def _active(self, ctx) -> bool:
        return (self.always or bool(ctx.training)) and self.stddev > 0.0

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        if not self._active(ctx):
            _identity_forward(ctx, inputs, outputs)
            return
        key = kdrop.dropout_key(ctx.seed, ctx.step, self.seed)
        kernel(knoise, "gaussian_noise_forward", ctx)(inputs[0], outputs[0], saved[0] if saved else None,
                                                      self.stddev, key, ctx.batch_offset)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        if not self._active(ctx) or not self.multiplicative:
            _identity_backward(ctx, grad_outputs, grad_inputs)
            return
        kernel(knoise, "gaussian_noise_backward", ctx)(grad_outputs[0], saved[0], grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class AlphaDropoutOp(DropoutOp):
    """Alpha dropout in training (SELU-preserving: dropped values go to SELU's negative saturation, then
    an affine correction keeps the mean and variance), identity in inference. The keep mask is
    `DropoutOp`'s (same seeds, same elements dropped); it is a saved uint8 buffer of the noise shape."""

    type_name: ClassVar[str] = "alpha_dropout"

    def parallel_space(self, inputs, weights):
        extents = tuple(inputs[0].shape)
        return par.ParallelSpace(par.sample_only(extents, self.type_name), extents)

    def tile(self, shapes, out_box, part=0, parts=1):
        return par.default_tile(shapes, out_box)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        if not self._active(ctx):
            _identity_forward(ctx, inputs, outputs)
            return
        key = kdrop.dropout_key(ctx.seed, ctx.step, self.seed)
        kernel(knoise, "alpha_dropout_forward", ctx)(inputs[0], outputs[0], saved[0], self.rate, key,
                                                     ctx.batch_offset)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        if not self._active(ctx):
            _identity_backward(ctx, grad_outputs, grad_inputs)
            return
        kernel(knoise, "alpha_dropout_backward", ctx)(grad_outputs[0], saved[0], grad_inputs[0], self.rate,
                                                      ctx.acc_input(0))


@dataclass(frozen=True)
class ActivityRegularizationOp(Op):
    """The identity whose backward adds the gradient of ``(l1 * sum|x| + l2 * sum x^2) / batch`` (Keras
    3's activity penalty, divided by the global batch size), so training minimises loss + penalty.

    Attributes:
        l1, l2: the penalty factors (>= 0).
    """

    type_name: ClassVar[str] = "activity_regularization"
    l1: float = 0.0
    l2: float = 0.0
    rows: int = 1  # the input's rows per sample: k after a reshape folded k blocks of each (Keras divides by them)

    def __post_init__(self):
        if not (float(self.l1) >= 0.0 and float(self.l2) >= 0.0):
            raise ValueError(f"activity_regularization expects l1, l2 >= 0, received l1={self.l1!r}, "
                             f"l2={self.l2!r}.")

    def output_specs(self, inputs, weights):
        _one(self.type_name, inputs, weights)
        return (inputs[0],)

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        _identity_forward(ctx, inputs, outputs)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        if self.l1 == 0.0 and self.l2 == 0.0:
            _identity_backward(ctx, grad_outputs, grad_inputs)
            return
        batch = ctx.global_batch * self.rows if ctx.global_batch else inputs[0].shape[0]
        kernel(knoise, "activity_penalty_backward", ctx)(inputs[0], grad_outputs[0], grad_inputs[0], self.l1,
                                                         self.l2, int(batch), ctx.acc_input(0))
