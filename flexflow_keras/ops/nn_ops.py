"""Neural-network ops: Dense (`LinearOp`), `MatMulOp`, activations, softmax, dropout, embedding, and
`VariableOp` (a weight or constant used as a tensor).

Each op is a frozen dataclass of attributes; `forward`/`backward` call `kernels/` for ``ctx.backend``
("cpu": NumPy arrays, "cuda": numba device arrays) and honour ``ctx.accumulate_inputs/weights``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import DataError, ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import broadcast_shapes, deferred_check, fmt, kernel, norm_axis, to_host
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import activations as kact
from kernels import dropout as kdrop
from kernels import embedding as kemb
from kernels import linear as klin
from kernels import shape as kshape
from kernels import softmax as ksoft


def _one_input(who: str, inputs, n_weights: Sequence[int], weights) -> None:
    if len(inputs) != 1 or len(weights) not in n_weights:
        raise ShapeError(f"{who} takes 1 input and {' or '.join(map(str, n_weights))} weights, received "
                         f"{len(inputs)} inputs and {len(weights)} weights.")


class _ActivationMixin:
    activation: str
    activation_params: tuple[tuple[str, float], ...]

    @cached_property
    def act(self) -> kact.Activation:
        """The kernels' `Activation` (resolved once; raises ValueError for an unknown name)."""
        return kact.resolve_activation(self.activation, **dict(self.activation_params))


@dataclass(frozen=True)
class LinearOp(_ActivationMixin, Op):
    """Dense: ``y = activation(x @ kernel + bias)`` over the last axis of x (any rank).

    Inputs (x,); weights (kernel,) or (kernel, bias). Softmax is never fused (it is `SoftmaxOp`). When
    the activation's derivative needs the pre-activation, it is a saved per-sample buffer.

    Attributes:
        activation: a `kernels.activations` name; activation_params: its parameters as sorted pairs.
    """

    type_name: ClassVar[str] = "dense"
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        _ = self.act  # validate the activation now, where the layer calls the op

    def output_specs(self, inputs, weights):
        _one_input("dense", inputs, (1, 2), weights)
        x, k = inputs[0], weights[0]
        if k.ndim != 2:
            raise ShapeError(f"dense expects a 2-D kernel (in, units), received kernel shape {fmt(k.shape)}.")
        if x.ndim < 1 or x.shape[-1] != k.shape[0]:
            raise ShapeError(f"dense expects an input whose last dim is {k.shape[0]} (kernel shape "
                             f"{fmt(k.shape)}), received input shape {fmt(x.shape)}. Add Flatten() before "
                             f"it, or build the layer for inputs of that size.")
        if len(weights) == 2 and tuple(weights[1].shape) != (k.shape[1],):
            raise ShapeError(f"dense expects a bias of shape ({k.shape[1]},), received {fmt(weights[1].shape)}.")
        return (TensorSpec(tuple(x.shape[:-1]) + (k.shape[1],), x.dtype),)

    def saved_specs(self, inputs, weights):
        if kact.grad_from_output(self.act):
            return ()
        return self.output_specs(inputs, weights)

    # --- parallel rules: batch and leading dims, output features (parameter), input features (reduce) ---
    def parallel_space(self, inputs, weights):
        extents = tuple(self.output_specs(inputs, weights)[0].shape)
        dims = par.dims_by_extent(extents, kinds={len(extents) - 1: par.PARAMETER})
        why = "" if self.act.code == kact.LINEAR else (
            f"its fused activation '{self.activation}' needs the whole sum; use Dense(activation=None) "
            f"followed by an Activation layer")
        return par.ParallelSpace(dims, extents, None if why else int(weights[0].shape[0]), "input features", why)

    def tile(self, shapes, out_box, part=0, parts=1):
        n_in = shapes.weights[0][0]
        r0, r1 = par.split_range(n_in, parts, part)
        lo, hi = out_box
        x = (lo[:-1] + (r0,), hi[:-1] + (r1,))
        ws = [((r0, lo[-1]), (r1, hi[-1]))]
        if len(shapes.weights) > 1:
            ws.append(((lo[-1],), (hi[-1],)))
        return par.Tile((x,), tuple(ws), (out_box,), (out_box,) * len(shapes.saved), (), part, parts)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        b = weights[1] if len(weights) > 1 else None
        t = ctx.tile
        if t is not None and t.parts > 1:  # one of several partial sums over input features: add into y
            kernel(klin, "linear_forward", ctx)(inputs[0], weights[0], b if t.part == 0 else None, outputs[0],
                                                self.act, None, accumulate=True)
            return
        kernel(klin, "linear_forward", ctx)(inputs[0], weights[0], b, outputs[0], self.act,
                                            saved[0] if saved else None)

    def backward_reads(self):
        return True, self.act.code != kact.LINEAR  # a fused activation's derivative reads the output

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        db = grad_weights[1] if len(grad_weights) > 1 else None
        if ctx.tile is not None and ctx.tile.part > 0:
            db = None  # the bias belongs to part 0 of a split sum
        kernel(klin, "linear_backward", ctx)(
            inputs[0], weights[0], outputs[0], grad_outputs[0], grad_inputs[0], grad_weights[0], db, self.act,
            saved[0] if saved else None,
            (ctx.acc_input(0), ctx.acc_weight(0), ctx.acc_weight(1)))


@dataclass(frozen=True)
class MatMulOp(Op):
    """``y = a @ b`` with NumPy's matmul semantics (a or b may be 1-D; leading dims broadcast)."""

    type_name: ClassVar[str] = "matmul"

    def output_specs(self, inputs, weights):
        if len(inputs) != 2:
            raise ShapeError(f"matmul takes 2 inputs, received {len(inputs)}.")
        a, b = (tuple(t.shape) for t in inputs)
        if not a or not b:
            raise ShapeError(f"matmul needs inputs of rank >= 1, received shapes {fmt(a)} and {fmt(b)}.")
        a2 = (1,) + a if len(a) == 1 else a
        b2 = b + (1,) if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise ShapeError(f"matmul: the last dim of a {fmt(a)} must equal the second-to-last dim of b "
                             f"{fmt(b)} ({a2[-1]} vs {b2[-2]}). Transpose one of them or fix the sizes.")

        lead = broadcast_shapes(a2[:-2], b2[:-2], "matmul")
        shape = lead + (a2[-2], b2[-1])
        if len(a) == 1:
            shape = shape[:-2] + shape[-1:]
        if len(b) == 1:
            shape = shape[:-1]
        return (TensorSpec(shape, str(np.result_type(inputs[0].dtype, inputs[1].dtype))),)

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def tile(self, shapes, out_box, part=0, parts=1):
        a, b = shapes.inputs
        a2 = (1,) + a if len(a) == 1 else a
        b2 = b + (1,) if len(b) == 1 else b
        lead = shapes.outputs[0][:len(shapes.outputs[0]) - (len(a) > 1) - (len(b) > 1)]
        lo, hi = list(out_box[0]), list(out_box[1])
        if len(a) == 1:  # the promoted M dim of a 1-D a
            lo.insert(len(lead), 0)
            hi.insert(len(lead), 1)
        if len(b) == 1:  # the promoted N dim of a 1-D b
            lo.append(0)
            hi.append(1)
        n = len(lead)
        lead_box = (tuple(lo[:n]), tuple(hi[:n]))
        out_lead = tuple(shapes.outputs[0][:n])

        def operand(shape2, rows, cols):
            lb = par.broadcast_box(shape2[:-2], out_lead, lead_box)
            return (lb[0] + (rows[0], cols[0]), lb[1] + (rows[1], cols[1]))

        abox = operand(a2, (lo[n], hi[n]), (0, a2[-1]))
        bbox = operand(b2, (0, b2[-2]), (lo[n + 1], hi[n + 1]))
        if len(a) == 1:
            abox = (abox[0][-1:], abox[1][-1:])
        if len(b) == 1:
            bbox = (bbox[0][-2:-1], bbox[1][-2:-1])
        return par.Tile((abox, bbox), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(klin, "matmul_forward", ctx)(inputs[0], inputs[1], outputs[0])

    def backward_reads(self):
        return True, False

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        kernel(klin, "matmul_backward", ctx)(inputs[0], inputs[1], grad_outputs[0], grad_inputs[0], grad_inputs[1],
                                             (ctx.acc_input(0), ctx.acc_input(1)))


@dataclass(frozen=True)
class ActivationOp(_ActivationMixin, Op):
    """An element-wise activation (any `kernels.activations` name) as its own op."""

    type_name: ClassVar[str] = "activation"
    activation: str = "linear"
    activation_params: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        _ = self.act

    def output_specs(self, inputs, weights):
        _one_input(f"activation '{self.activation}'", inputs, (0,), weights)
        return (inputs[0],)

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kact, "activation_forward", ctx)(inputs[0], outputs[0], self.act)

    def backward_reads(self):
        # a derivative computed from the output alone reads it in place of the input (as Dense's fused one)
        return not kact.grad_from_output(self.act), True

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            x = outputs[0] if inputs[0] is None else inputs[0]
            kernel(kact, "activation_backward", ctx)(x, outputs[0], grad_outputs[0], grad_inputs[0],
                                                     self.act, ctx.acc_input(0))


@dataclass(frozen=True)
class SoftmaxOp(Op):
    """Softmax along `axis` (non-negative once recorded). Backward reads the output."""

    type_name: ClassVar[str] = "softmax"
    axis: int = -1
    log: ClassVar[bool] = False

    def output_specs(self, inputs, weights):
        _one_input(self.type_name, inputs, (0,), weights)
        norm_axis(self.axis, inputs[0].ndim, self.type_name)
        return (inputs[0],)

    def sample_dim(self):
        return None if self.axis == 0 else 0

    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, [self.axis], f"{self.type_name} normalises along it")

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        name = "log_softmax_forward" if self.log else "softmax_forward"
        kernel(ksoft, name, ctx)(inputs[0], outputs[0], self.axis)

    def backward_reads(self):
        return False, True  # the output alone (log softmax's too)

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            name = "log_softmax_backward" if self.log else "softmax_backward"
            kernel(ksoft, name, ctx)(outputs[0], grad_outputs[0], grad_inputs[0], self.axis, ctx.acc_input(0))


@dataclass(frozen=True)
class LogSoftmaxOp(SoftmaxOp):
    """``x - logsumexp(x, axis)``."""

    type_name: ClassVar[str] = "log_softmax"
    log: ClassVar[bool] = True


@dataclass(frozen=True)
class DropoutOp(Op):
    """Inverted dropout in training, identity in inference.

    The mask is a pure function of (ctx.seed, ctx.step, `seed`, global sample index, element), so every
    data-parallel split drops the same elements (see `kernels.dropout`). It is a saved uint8 buffer of
    the per-sample noise shape.

    Attributes:
        rate: drop probability in [0, 1). seed: this op's seed (the layer's). noise_shape: Keras'
            noise_shape with None for the batch dim (None: the input's shape).
        always: the call was given ``training=True`` (Keras' MC dropout): active in inference too.
    """

    type_name: ClassVar[str] = "dropout"
    rate: float = 0.5
    seed: int = 0
    noise_shape: tuple[int | None, ...] | None = None
    always: bool = False

    def __post_init__(self):
        if not 0.0 <= float(self.rate) < 1.0:
            raise ValueError(f"Dropout expects a rate in [0, 1), received rate={self.rate!r}.")

    def _noise(self, x: TensorSpec) -> tuple[int | None, ...]:
        if self.noise_shape is None:
            return tuple(x.shape)
        ns = tuple(self.noise_shape)
        if len(ns) != x.ndim:
            raise ShapeError(f"dropout: noise_shape {fmt(ns)} must have the input's rank {x.ndim} (input shape "
                             f"{fmt(x.shape)}); use None for the batch dim, e.g. (None, 1, {x.shape[-1]}).")
        out = [x.shape[0]]
        for i in range(1, x.ndim):
            n = x.shape[i] if ns[i] is None else ns[i]
            if n not in (1, x.shape[i]):
                raise ShapeError(f"dropout: noise_shape {fmt(ns)} dim {i} must be 1 or {x.shape[i]} to broadcast "
                                 f"over the input shape {fmt(x.shape)}.")
            out.append(n)
        return tuple(out)

    def output_specs(self, inputs, weights):
        _one_input("dropout", inputs, (0,), weights)
        self._noise(inputs[0])
        return (inputs[0],)

    def saved_specs(self, inputs, weights):
        return (TensorSpec(self._noise(inputs[0]), "uint8"),)

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def tile(self, shapes, out_box, part=0, parts=1):
        t = par.default_tile(shapes, out_box)
        # the mask of a piece is the same slice of the whole mask: it needs its global origin and the
        # whole per-sample noise shape
        return par.Tile(t.inputs, t.weights, t.outputs, t.saved, t.stats,
                        local=(("noise_shape", tuple(shapes.saved[0][1:])),))

    def _active(self, ctx) -> bool:
        return (self.always or bool(ctx.training)) and self.rate > 0.0

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        if not self._active(ctx):
            kernel(kshape, "copy_forward", ctx)(inputs[0], outputs[0])
            return
        key = kdrop.dropout_key(ctx.seed, ctx.step, self.seed)
        t = ctx.tile
        fn = kernel(kdrop, "dropout_forward", ctx)
        if t is None:
            fn(inputs[0], outputs[0], saved[0], self.rate, key, ctx.batch_offset)
        elif not any(t.saved[0][0][1:]) and tuple(saved[0].shape[1:]) == t.get("noise_shape"):
            fn(inputs[0], outputs[0], saved[0], self.rate, key, t.saved[0][0][0])  # whole samples
        else:
            fn(inputs[0], outputs[0], saved[0], self.rate, key, t.saved[0][0][0], origin=t.saved[0][0],
               noise_shape=t.get("noise_shape"))

    def backward_reads(self):
        return False, False  # the gradient and the saved mask

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is None:
            return
        if not self._active(ctx):
            kernel(kshape, "copy_backward", ctx)(grad_outputs[0], grad_inputs[0], ctx.acc_input(0))
            return
        kernel(kdrop, "dropout_backward", ctx)(grad_outputs[0], saved[0], grad_inputs[0], self.rate,
                                               ctx.acc_input(0))


@dataclass(frozen=True)
class EmbeddingOp(Op):
    """``y = table[ids]``; inputs (ids,) of an integer dtype, weights (table,) of shape (V, D)."""

    type_name: ClassVar[str] = "embedding"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    # its table's gradient is a sum of looked-up rows (TensorFlow's IndexedSlices): the step may also ask
    # backward for the per-lookup moment (execution/sparse_moments.py)
    sparse_weight_gradient: ClassVar[bool] = True

    def output_specs(self, inputs, weights):
        _one_input("embedding", inputs, (1,), weights)
        if weights[0].ndim != 2:
            raise ShapeError(f"embedding expects a (input_dim, output_dim) table, received {fmt(weights[0].shape)}.")
        return (TensorSpec(tuple(inputs[0].shape) + (weights[0].shape[1],), weights[0].dtype),)

    # --- parallel rules: ids dims, embedding width (parameter), table rows (masked partial lookups) ----
    def parallel_space(self, inputs, weights):
        extents = tuple(self.output_specs(inputs, weights)[0].shape)
        dims = par.dims_by_extent(extents, kinds={len(extents) - 1: par.PARAMETER})
        return par.ParallelSpace(dims, extents, int(weights[0].shape[0]), "table rows")

    def tile(self, shapes, out_box, part=0, parts=1):
        rows = shapes.weights[0][0]
        r0, r1 = par.split_range(rows, parts, part)
        lo, hi = out_box
        ids = (lo[:-1], hi[:-1])
        table = ((r0, lo[-1]), (r1, hi[-1]))
        return par.Tile((ids,), (table,), (out_box,), (), (), part, parts, (("rows", (r0, rows)),))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        t = ctx.tile
        fn = kernel(kemb, "embedding_forward", ctx)
        rows = int(weights[0].shape[0])
        if t is not None and t.parts > 1:  # this piece holds rows [r0, r0 + its rows) of `rows`
            r0, rows = t.get("rows")

        def describe(pos, value) -> DataError:
            return DataError(f"Embedding received id {value} at flat position {pos} of the input, outside "
                              f"[0, {rows}). Set input_dim larger than the largest id, or fix the ids.")

        check = deferred_check(ctx, self, describe)
        if t is not None and t.parts > 1:
            bad = fn(inputs[0], weights[0], outputs[0], row_offset=r0, total_rows=rows, accumulate=True, **check)
        else:
            bad = fn(inputs[0], weights[0], outputs[0], **check)
        if bad >= 0:
            raise describe(bad, to_host(inputs[0]).reshape(-1)[bad])

    def backward_reads(self):
        return True, False  # the ids, to scatter the gradient's rows

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_weights[0] is not None:
            t = ctx.tile
            fn = kernel(kemb, "embedding_backward", ctx)
            r0 = t.get("rows")[0] if t is not None and t.parts > 1 else 0  # this piece's first table row
            fn(inputs[0], grad_outputs[0], grad_weights[0], ctx.acc_weight(0), row_offset=r0)
            for q, power, acc in ctx.moments(0):  # the optimizer's per-lookup moment
                kernel(kemb, "embedding_backward_moment", ctx)(inputs[0], grad_outputs[0], q, acc, row_offset=r0,
                                                               power=power)


@dataclass(frozen=True)
class VariableOp(Op):
    """A weight (or a constant: a non-trainable weight) as a tensor: no inputs, weights (value,).

    Its output has no batch dim (`sample_dim` is None): it is the same on every shard. Backward adds the
    output's gradient into the weight's gradient.
    """

    type_name: ClassVar[str] = "variable"

    def output_specs(self, inputs, weights):
        if inputs or len(weights) != 1:
            raise ShapeError(f"variable takes no inputs and 1 weight, received {len(inputs)} and {len(weights)}.")
        return (weights[0],)

    def sample_dim(self):
        return None

    def parallel_space(self, inputs, weights):
        extents = tuple(weights[0].shape)
        return par.ParallelSpace(par.dims_by_extent(extents, kinds=dict.fromkeys(range(len(extents)),
                                                                                  par.PARAMETER)), extents)

    def tile(self, shapes, out_box, part=0, parts=1):
        return par.Tile((), (out_box,), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kshape, "copy_forward", ctx)(weights[0], outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_weights and grad_weights[0] is not None:
            kernel(kshape, "copy_backward", ctx)(grad_outputs[0], grad_weights[0], ctx.acc_weight(0))


