"""Normalisation ops: `BatchNormOp` (cross-shard batch statistics, two-stage backward) and `LayerNormOp`.

BatchNormOp in training, per data-parallel step (see docs/contracts.md section 3):
1. `forward_stats` folds this shard's per-channel [sum(x), sum(x^2)] (float64) and its value count (per
   channel, so a piece that splits the channels counts only its own) into the stats buffers, which the
   execution reduces with ``+`` across the pieces that split the batch or the spatial dims;
2. `forward` normalises with the whole batch's mean and biased variance from the reduced stats;
3. `update_state` (once) moves the moving averages: ``m = m * momentum + stat * (1 - momentum)``;
4. `backward_weights` folds this shard's dgamma = sum(dy * xhat), dbeta = sum(dy) into the gradient
   buffers of weights 0 and 1 (reduced with ``+``), and `backward_inputs` reads the reduced sums.
In inference (or `training=False`) it normalises with the moving statistics.

A layer called on several tensors in one model (a siamese tower's BatchNormalization) records one node per
call, all with the same gamma and beta: their gradient buffers sum every call's dgamma and dbeta, so stage two
of the node whose buffers another node wrote first would read the total. Such a node (`shared_weights`, set
by `with_shared_weights` from the graph) keeps its batch and spatial dims whole and computes its own sums.

With a mask (Keras 3: a (batch, ...) mask over every axis but the channels, the last axis), the batch
statistics are over the unmasked positions only (``sum(m*x) / (n + 1e-7)``, n the unmasked count, as
Keras' masked moments); every position is normalised, and the input gradient of a masked position has no
term through the statistics (`kernels.masked_rows`).

Weights are always (gamma, beta, moving_mean, moving_variance). With ``scale=False`` / ``center=False``
`ops.batch_norm` passes a constant (non-trainable) gamma of ones / beta of zeros: the two-stage backward
needs the reduced dgamma and dbeta in every case, so their gradient buffers are `required_grad_weights`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import FlexFlowKerasError, ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import fmt, kernel, norm_axis, to_host, write
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import batchnorm as kbn
from kernels import layernorm as kln
from kernels import masked_rows as kmr


@dataclass(frozen=True)
class BatchNormOp(Op):
    """Batch normalisation over every axis but `axis` (non-negative once recorded).

    Attributes:
        axis: the channel axis. epsilon, momentum: Keras' (1e-3, 0.99 by default).
        center, scale: whether beta / gamma are learned (else they are constants 0 / 1).
        training: None follows ``ctx.training``; False always uses the moving statistics (a frozen
            layer, as Keras does for ``trainable=False``).
    """

    type_name: ClassVar[str] = "batch_norm"
    two_stage_backward: ClassVar[bool] = True
    n_trainable_weights: ClassVar[int] = 2
    # Weight positions whose gradient buffers the execution must supply (and reduce across shards)
    # even when the weight is not trainable: backward_inputs reads them.
    required_grad_weights: ClassVar[tuple[int, ...]] = (0, 1)
    axis: int = -1
    epsilon: float = 1e-3
    momentum: float = 0.99
    center: bool = True
    scale: bool = True
    training: bool | None = None
    has_mask: bool = False
    shared_weights: bool = False  # another node of the graph has these weights (see the module docstring)

    def output_specs(self, inputs, weights):
        n_in = 1 + int(self.has_mask)
        if len(inputs) != n_in or len(weights) != 4:
            raise ShapeError(f"batch_norm takes {n_in} input(s) and 4 weights (gamma, beta, moving_mean, "
                             f"moving_variance), received {len(inputs)} and {len(weights)}.")
        x = inputs[0]
        axis = norm_axis(self.axis, x.ndim, "batch_norm")
        if self.has_mask and (axis != x.ndim - 1 or tuple(inputs[1].shape[1:]) != tuple(x.shape[1:-1])):
            raise ShapeError(f"batch_norm with a mask expects the channels on the last axis and a mask of shape "
                             f"{fmt((None,) + tuple(x.shape[1:-1]))} for an input of shape {fmt(x.shape)}, "
                             f"received axis {self.axis} and a mask of shape {fmt(inputs[1].shape)}.")
        c = x.shape[axis]
        for name, w in zip(("gamma", "beta", "moving_mean", "moving_variance"), weights, strict=True):
            if tuple(w.shape) != (c,):
                raise ShapeError(f"batch_norm: {name} has shape {fmt(w.shape)} but the input {fmt(x.shape)} "
                                 f"has {c} channels on axis {self.axis}. Build the layer for this input or "
                                 f"set axis= to the channel axis.")
        return (x,)

    def sample_dim(self):
        return None if self.axis == 0 else 0

    def is_differentiable(self, i: int) -> bool:
        return i == 0

    def _batch_stats(self, ctx) -> bool:
        return bool(ctx.training) and self.training is not False

    def stats_specs(self, inputs, weights, training):
        if not training or self.training is False:
            return ()
        c = inputs[0].shape[self.axis]
        return (TensorSpec((2, c), "float64"), TensorSpec((c,), "float64"))

    # --- parallel rules: batch and spatial dims (batch-wide statistics), channels (parameter) ----------
    def with_shared_weights(self, shared: bool) -> BatchNormOp:
        """This op for a node whose weights another node of the graph also has (or no longer has)."""
        return self if shared == self.shared_weights else dataclasses.replace(self, shared_weights=shared)

    def parallel_space(self, inputs, weights):
        nd = inputs[0].ndim
        axis = norm_axis(self.axis, nd, "batch_norm")
        if self.shared_weights:
            return par.space_except(self, inputs, weights, [d for d in range(nd) if d != axis],
                                    "a BatchNormalization called on several tensors computes each call's weight "
                                    "gradient sums from its whole batch", kinds={axis: par.PARAMETER})
        return par.space_except(self, inputs, weights, (), "", kinds={axis: par.PARAMETER})

    def tile(self, shapes, out_box, part=0, parts=1):
        axis = self.axis % len(shapes.outputs[0])
        c0, c1 = out_box[0][axis], out_box[1][axis]
        ch = ((c0,), (c1,))
        stats = tuple(((0, c0), (2, c1)) if len(s) == 2 else ch for s in shapes.stats)
        ins = (out_box, (out_box[0][:-1], out_box[1][:-1])) if self.has_mask else (out_box,)
        return par.Tile(ins, (ch,) * len(shapes.weights), (out_box,), (), stats)

    # --- forward ----------------------------------------------------------------------------------
    def _count(self, inputs) -> float:
        """Values per channel in this shard (the unmasked ones with a mask)."""
        x = inputs[0]
        if self.has_mask:
            return float(np.count_nonzero(to_host(inputs[1])))
        return float(x.size // x.shape[self.axis])

    def forward_stats(self, ctx, inputs, weights, stats):
        x = inputs[0]
        if self.has_mask:  # the statistics of the unmasked positions: sums of m * x and (m * x)^2
            xm = kmr.empty_like(x)
            kernel(kmr, "mask_rows", ctx)(x, inputs[1], xm)
            x = xm
        kernel(kbn, "batchnorm_stats", ctx)(x, stats[0], self.axis)
        write(stats[1], to_host(stats[1]) + self._count(inputs))

    def _n(self, stats) -> float:
        # Keras' masked moments divide by (count + backend epsilon): no NaN for an all-masked batch
        return float(to_host(stats[1])[0]) + (1e-7 if self.has_mask else 0.0)

    def _moments(self, ctx, weights, stats):
        if self._batch_stats(ctx) and stats:
            return kbn.batchnorm_moments(to_host(stats[0]), self._n(stats))
        return weights[2], weights[3]

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        mean, var = self._moments(ctx, weights, stats)
        kernel(kbn, "batchnorm_forward", ctx)(inputs[0], mean, var, weights[0], weights[1], self.epsilon,
                                              outputs[0], self.axis)

    def update_state(self, ctx, stats, weights):
        if not self._batch_stats(ctx) or not stats:
            return
        mean, var = kbn.batchnorm_moments(to_host(stats[0]), self._n(stats))
        for w, value in ((weights[-2], mean), (weights[-1], var)):
            host = to_host(w).copy()
            kbn.moving_average_update(host, value, self.momentum)
            write(w, host)

    # --- backward ---------------------------------------------------------------------------------
    def backward_reads(self):
        return True, False  # the input (and its mask), with the batch's moments

    def backward_weights(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_weights):
        dg = grad_weights[0] if grad_weights else None
        db = grad_weights[1] if len(grad_weights) > 1 else None
        if dg is None and db is None:
            return
        mean, var = self._moments(ctx, weights, stats)
        kernel(kbn, "batchnorm_backward_weights", ctx)(inputs[0], grad_outputs[0], mean, var, self.epsilon, dg,
                                                       db, self.axis, (ctx.acc_weight(0), ctx.acc_weight(1)))

    def backward_inputs(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_weights,
                        grad_inputs):
        if grad_inputs[0] is None:
            return
        x = inputs[0]
        training = self._batch_stats(ctx) and bool(stats)
        dg = grad_weights[0] if grad_weights else None
        db = grad_weights[1] if len(grad_weights) > 1 else None
        mean, var = self._moments(ctx, weights, stats)
        count = self._n(stats) if training else 1.0
        if training and self.shared_weights:
            # the buffers may also hold another node's sums (a layer called twice): this node's own, from its batch
            if float(to_host(stats[1])[0]) != self._count(inputs):
                raise FlexFlowKerasError(
                    "batch_norm backward_inputs: a node sharing its gamma and beta with another node (a "
                    "BatchNormalization called twice) had its batch split, so its own dgamma and dbeta are not in "
                    "one piece; its parallel rules keep the batch and spatial dims whole.")
            dg, db = self._local_sums(ctx, x, grad_outputs[0], mean, var)
        elif training and (dg is None or db is None):
            if float(to_host(stats[1])[0]) != self._count(inputs):
                raise FlexFlowKerasError(
                    "batch_norm backward_inputs needs the whole batch's dgamma and dbeta, but the execution "
                    "passed no gradient buffer for weight 0 or 1 on a sharded batch. Supply the buffers in "
                    "BatchNormOp.required_grad_weights (reduced with '+') even when gamma/beta are not "
                    "trainable.")
            dg, db = self._local_sums(ctx, x, grad_outputs[0], mean, var)
        self._input_grad(ctx, inputs, grad_outputs[0], mean, var, weights[0], dg, db, count, training,
                         grad_inputs[0], ctx.acc_input(0))

    def _input_grad(self, ctx, inputs, dy, mean, var, gamma, dg, db, count, training, dx, accumulate):
        run = kernel(kbn, "batchnorm_backward_inputs", ctx)
        if not (self.has_mask and training):
            run(inputs[0], dy, mean, var, gamma, self.epsilon, dg, db, count, training, dx, self.axis, accumulate)
            return
        # kept rows: the full batch-norm gradient; masked rows: only the direct a * dy (no statistics term)
        kept, masked = kmr.empty_like(dx), kmr.empty_like(dx)
        run(inputs[0], dy, mean, var, gamma, self.epsilon, dg, db, count, True, kept, self.axis, False)
        run(inputs[0], dy, mean, var, gamma, self.epsilon, dg, db, count, False, masked, self.axis, False)
        kernel(kmr, "blend_rows", ctx)(inputs[1], kept, masked, dx, accumulate)

    def _local_sums(self, ctx, x, dy, mean, var):
        c = x.shape[self.axis]
        dg, db = np.zeros(c), np.zeros(c)
        kbn.batchnorm_backward_weights_cpu(to_host(x), to_host(dy), to_host(mean), to_host(var), self.epsilon, dg,
                                           db, self.axis)
        return dg, db

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """Both stages on one shard: the batch is whole, so the local sums are the reduced ones."""
        mean, var = self._moments(ctx, weights, stats)
        dg, db = self._local_sums(ctx, inputs[0], grad_outputs[0], mean, var)
        for j, value in ((0, dg), (1, db)):
            buf = grad_weights[j] if j < len(grad_weights) else None
            if buf is not None:
                write(buf, (to_host(buf) + value) if ctx.acc_weight(j) else value)
        if grad_inputs[0] is not None:
            training = self._batch_stats(ctx) and bool(stats)
            count = self._n(stats) if training else 1.0
            self._input_grad(ctx, inputs, grad_outputs[0], mean, var, weights[0], dg, db, count, training,
                             grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class LayerNormOp(Op):
    """Layer normalisation over the trailing `n_axes` axes; weights (gamma?, beta?) as `scale`/`center`.

    Attributes:
        n_axes: how many trailing axes are normalised (Keras' axis=-1 is 1).
        epsilon: Keras' default 1e-3. center, scale: whether beta / gamma are present.
    """

    type_name: ClassVar[str] = "layer_norm"
    n_axes: int = 1
    epsilon: float = 1e-3
    center: bool = True
    scale: bool = True

    def output_specs(self, inputs, weights):
        want = int(self.center) + int(self.scale)
        if len(inputs) != 1 or len(weights) != want:
            raise ShapeError(f"layer_norm takes 1 input and {want} weights (center={self.center}, "
                             f"scale={self.scale}), received {len(inputs)} and {len(weights)}.")
        x = inputs[0]
        if not 1 <= self.n_axes < max(x.ndim, 2):
            raise ShapeError(f"layer_norm normalises 1..{x.ndim - 1} trailing axes of an input of shape "
                             f"{fmt(x.shape)}, received n_axes={self.n_axes}.")
        pshape = tuple(x.shape[x.ndim - self.n_axes:])
        for w in weights:
            if tuple(w.shape) != pshape:
                raise ShapeError(f"layer_norm: a weight has shape {fmt(w.shape)}, expected {fmt(pshape)} (the "
                                 f"normalised axes of the input {fmt(x.shape)}).")
        return (x,)

    def parallel_space(self, inputs, weights):
        nd = inputs[0].ndim
        return par.space_except(self, inputs, weights, range(nd - self.n_axes, nd),
                                "layer_norm normalises over it")

    def _params(self, weights):
        it = iter(weights)
        gamma = next(it) if self.scale else None
        beta = next(it) if self.center else None
        return gamma, beta

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        gamma, beta = self._params(weights)
        kernel(kln, "layernorm_forward", ctx)(inputs[0], gamma, beta, outputs[0], self.n_axes, self.epsilon)

    def backward_reads(self):
        return True, False  # the statistics are recomputed from the input

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        gamma, _ = self._params(weights)
        slots = list(grad_weights) + [None] * (2 - len(grad_weights))
        j = 0
        dgamma = dbeta = None
        acc_g = acc_b = False
        if self.scale:
            dgamma, acc_g = slots[j], ctx.acc_weight(j)
            j += 1
        if self.center:
            dbeta, acc_b = slots[j], ctx.acc_weight(j)
        kernel(kln, "layernorm_backward", ctx)(inputs[0], gamma, grad_outputs[0], grad_inputs[0], dgamma, dbeta,
                                               self.n_axes, self.epsilon, (ctx.acc_input(0), acc_g, acc_b))
