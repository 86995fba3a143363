"""Ops that make values rather than transform them: `RandomOp` (keras.random in a graph), `FillOp`
(ones/zeros/full, ones_like...) and `BatchSizeOp` (the batch size as a scalar tensor).

A shape whose first entry is None takes its batch from a reference input (the tensor whose
``ops.shape(x)[0]`` the caller used), so ``keras.random.normal((ops.shape(z)[0], 2))`` in a VAE's sampling
layer makes one row per sample. `RandomOp` draws fresh values every training step: its key mixes the
fit's seed, the step and the op's own seed (from a `SeedGenerator` or an int), and each global sample
draws the same numbers however the batch is split (see `kernels.array_ops`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops._util import fmt, kernel, write
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import array_ops as karr
from kernels.dropout import dropout_key

DISTRIBUTIONS = ("normal", "uniform", "randint", "truncated_normal", "permutation")


def _made_shape(who: str, shape: tuple, inputs) -> tuple:
    if None in shape[1:]:
        raise ShapeError(f"{who}: only the first dim of shape {fmt(shape)} may be None (the batch).")
    if shape and shape[0] is None:
        if len(inputs) != 1 or not inputs[0].ndim:
            raise ShapeError(f"{who}: a shape {fmt(shape)} with a None batch needs the tensor it takes the batch "
                             f"from (the x of ops.shape(x)[0]).")
    elif inputs:
        raise ShapeError(f"{who}: a fully known shape {fmt(shape)} takes no reference tensor.")
    return shape


@dataclass(frozen=True)
class RandomOp(Op):
    """Random values of `shape` from `dist` (see `DISTRIBUTIONS`) with parameters `params`.

    `fixed` (an int seed) draws the same values at every step. Inputs: () for a known shape, or (reference,) when the first dim is None (the batch). No gradient.
    """

    type_name: ClassVar[str] = "random"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    dist: str = "normal"
    shape: tuple[int | None, ...] = ()
    params: tuple[float, float] = (0.0, 1.0)
    dtype: str = "float32"
    seed: int = 0
    fixed: bool = False  # an int seed: the same values at every step

    def __post_init__(self):
        if self.dist not in DISTRIBUTIONS:
            raise ValueError(f"random: unknown distribution {self.dist!r}; valid: {list(DISTRIBUTIONS)}.")

    def output_specs(self, inputs, weights):
        return (TensorSpec(_made_shape(f"random.{self.dist}", tuple(self.shape), inputs), self.dtype),)

    def sample_dim(self):
        return 0 if self.shape and self.shape[0] is None else None

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        key = self.seed if self.fixed else dropout_key(ctx.seed, ctx.step, self.seed)
        first = ctx.batch_offset if self.sample_dim() == 0 else 0
        kernel(karr, "random_forward", ctx)(self.dist, key, first, self.params, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """Random values have no gradient."""


@dataclass(frozen=True)
class FillOp(Op):
    """A tensor of `shape` filled with `value` (the batch from a reference input when shape[0] is None)."""

    type_name: ClassVar[str] = "fill"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    shape: tuple[int | None, ...] = ()
    value: float = 0.0
    dtype: str = "float32"

    def output_specs(self, inputs, weights):
        return (TensorSpec(_made_shape("fill", tuple(self.shape), inputs), self.dtype),)

    def sample_dim(self):
        return 0 if self.shape and self.shape[0] is None else None

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        write(outputs[0], np.full(tuple(outputs[0].shape), self.value, dtype=np.dtype(self.dtype)))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """A filled tensor has no gradient."""


@dataclass(frozen=True)
class BatchSizeOp(Op):
    """The global batch size of the step as a 0-d tensor (``ops.cast(ops.shape(x)[0], "float32")``)."""

    type_name: ClassVar[str] = "batch_size"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    dtype: str = "int32"
    rows: int = 1  # the input's rows per sample (its batch_scale: k after a reshape folded k blocks of each)

    def output_specs(self, inputs, weights):
        if len(inputs) != 1 or not inputs[0].ndim:
            raise ShapeError("batch_size takes one tensor with a batch dim.")
        return (TensorSpec((), self.dtype),)

    def sample_dim(self):
        return None

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        n = ctx.global_batch * self.rows if ctx.global_batch else tuple(inputs[0].shape)[0]
        write(outputs[0], np.asarray(n, dtype=np.dtype(self.dtype)))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """A size has no gradient."""
