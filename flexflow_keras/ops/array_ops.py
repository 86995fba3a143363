"""Indexing and array ops behind `keras.ops`: `IndexOp` (``x[...]``), `GatherOp` (take), `TakeAlongAxisOp`,
`TileOp`, `RepeatOp`, `BroadcastToOp`, `CumsumOp`, `ProdOp`, `ArgReduceOp`, `OneHotOp`, `TopKOp`.

Symbolic tensors keep their batch dim whole: ops that would slice or merge it (an index other than ':'
on it, tiling or repeating along it) are refused with a message saying what to do instead, so every op
here splits along the batch (the default parallel rule, `Op.parallel_space`). The batch is dim 0 except
after a transpose moved it (``x[0]`` of a (3, batch, ...) q/k/v stack), which only indexing takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import CrossBatchError, DataError, ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import deferred_check, fmt, kernel, norm_axis, to_host
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import array_ops as karr


def _n_inputs(who: str, inputs, n: int) -> None:
    if len(inputs) != n:
        raise ShapeError(f"{who} takes {n} input(s), received {len(inputs)}.")


def _batch_kept(who: str, x: TensorSpec, axis: int) -> None:
    if x.ndim and x.shape[0] is None and axis == 0:
        raise ShapeError(f"{who} along axis 0 of the symbolic tensor {fmt(x.shape)} would change its batch dim; "
                         f"the batch dim stays whole in a graph. Use an axis >= 1, or do it on the data "
                         f"(NumPy) before fit().")


def _index_error(who: str, size: int):
    def describe(pos, value) -> DataError:
        return DataError(f"{who} received index {value} at flat position {pos}, outside [-{size}, {size}); fix "
                          f"the indices or the axis.")
    return describe


def _gather_call(op, ctx, name: str, who: str, x, idx, axis: int, y) -> None:
    size = x.shape[axis]
    describe = _index_error(who, size)
    bad = kernel(karr, name, ctx)(x, idx, axis, y, **deferred_check(ctx, op, describe))
    if bad >= 0:
        raise describe(bad, to_host(idx).reshape(-1)[bad])


@dataclass(frozen=True)
class IndexOp(Op):
    """``y = x[index]`` for a static basic index (a tuple of slices as (start, stop, step), ints, None for
    a new axis, and Ellipsis already expanded); the batch dim of a symbolic x must be taken whole."""

    type_name: ClassVar[str] = "slice"
    index: tuple = ()

    def _key(self) -> tuple:
        return tuple(slice(*i) if isinstance(i, tuple) else i for i in self.index)

    def _dim_map(self, ndim: int) -> list:
        """Per input dim, the output dim it becomes (None when an int index drops it) and whether the
        index takes it whole (':', or past the index's end)."""
        out, pos = [], 0
        for k in self.index:
            if k is None:  # a new axis: an output dim no input dim becomes
                pos += 1
            elif isinstance(k, tuple):
                out.append((pos, k == (None, None, None)))
                pos += 1
            else:
                out.append((None, False))
        return out + [(pos + i, True) for i in range(ndim - len(out))]

    def output_specs(self, inputs, weights):
        _n_inputs("slice", inputs, 1)
        x = inputs[0]
        open_dims = [d for d, s in enumerate(x.shape) if s is None]
        batch = open_dims[0] if len(open_dims) == 1 else 0  # one None: the batch, first or moved by a transpose
        if any(s is None for d, s in enumerate(x.shape) if d != batch):
            raise ShapeError(f"slice: indexing needs known per-sample dims, received {fmt(x.shape)}; give the "
                             f"Input a full shape.")
        probe = np.empty(tuple(1 if s is None else s for s in x.shape), np.bool_)
        try:
            shape = list(probe[self._key()].shape)
        except IndexError as e:
            raise ShapeError(f"slice: index {self.index} does not fit the shape {fmt(x.shape)}: {e}.") from None
        if x.ndim and x.shape[batch] is None:
            to, whole = self._dim_map(x.ndim)[batch]
            if not whole:
                raise ShapeError(f"slice: a symbolic tensor {fmt(x.shape)} keeps its batch dim (axis {batch}) "
                                 f"whole; index it with ':' there (x[{':, ' * batch}:, ...]), received "
                                 f"{self.index}.")
            shape[to] = None
        return (TensorSpec(tuple(shape), x.dtype),)

    def tile(self, shapes, out_box, part=0, parts=1):
        """A piece reads, of each dim of x the index takes whole (':'), the range of the output dim it
        becomes, and every other dim whole, and indexes them locally. The default tile lines dims up from
        the right, which an int in the index (x[:, 0] drops a dim) breaks."""
        x = shapes.inputs[0]
        lo, hi = [0] * len(x), [int(s) for s in x]
        for d, (to, whole) in enumerate(self._dim_map(len(x))):
            if whole:
                lo[d], hi[d] = out_box[0][to], out_box[1][to]
        return par.Tile(((tuple(lo), tuple(hi)),), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "index_forward", ctx)(inputs[0], self._key(), outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "index_backward", ctx)(grad_outputs[0], self._key(), grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class GatherOp(Op):
    """``y = take(x, indices, axis)``; inputs (x, indices); indices are not differentiable."""

    type_name: ClassVar[str] = "gather"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (True, False)
    axis: int = 0

    def output_specs(self, inputs, weights):
        _n_inputs("take", inputs, 2)
        x, idx = inputs
        axis = norm_axis(self.axis, x.ndim, "take")
        _batch_kept("take", x, axis)
        if np.dtype(idx.dtype).kind not in "iu":
            raise ShapeError(f"take expects integer indices, received dtype {idx.dtype}; cast them with "
                             f"ops.cast(indices, 'int32').")
        if idx.ndim and idx.shape[0] is None and axis != 0:
            if axis != 1 or not x.ndim or x.shape[0] is None:
                raise ShapeError(f"take: per-sample indices {fmt(idx.shape)} need x without a batch dim "
                                 f"(an embedding table), received x {fmt(x.shape)} on axis {self.axis}.")
        shape = tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1:])
        return (TensorSpec(shape, x.dtype),)

    def sample_dim(self):
        return 0

    def tile(self, shapes, out_box, part: int = 0, parts: int = 1):
        """The output is x's dims before `axis`, then the indices' dims, then x's dims after `axis`: a piece
        reads the indices of its output range and, of x, its ranges of the dims around `axis` and that dim
        whole. (The default tile lines dims up from the right: a table without a batch dim gathered by the
        batch's ids, gnn_citations' ``tf.gather(x, input_node_indices)``, gave every piece all the ids.)"""
        x, idx = shapes.inputs
        axis = self.axis % len(x)
        lo, hi = out_box
        k = len(idx)
        x_box = (tuple(lo[:axis]) + (0,) + tuple(lo[axis + k:]), tuple(hi[:axis]) + (int(x[axis]),) + tuple(hi[axis + k:]))
        i_box = (tuple(lo[axis:axis + k]), tuple(hi[axis:axis + k]))
        return par.Tile((x_box, i_box), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        x, idx = inputs
        axis = self.axis % len(x.shape)
        _gather_call(self, ctx, "gather_forward", "take", x, idx, axis, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            x, idx = inputs
            kernel(karr, "gather_backward", ctx)(grad_outputs[0], idx, self.axis % len(x.shape), grad_inputs[0],
                                                 ctx.acc_input(0))


@dataclass(frozen=True)
class TakeAlongAxisOp(Op):
    """``y = take_along_axis(x, indices, axis)``; x's dims off `axis` must equal the indices' (or be 1 in
    the indices)."""

    type_name: ClassVar[str] = "take_along_axis"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (True, False)
    axis: int = -1

    def output_specs(self, inputs, weights):
        _n_inputs("take_along_axis", inputs, 2)
        x, idx = inputs
        axis = norm_axis(self.axis, x.ndim, "take_along_axis")
        _batch_kept("take_along_axis", x, axis)
        ok = idx.ndim == x.ndim and all(i == axis or b in (1, a) for i, (a, b) in enumerate(zip(x.shape, idx.shape,
                                                                                              strict=True)))
        if not ok:
            raise ShapeError(f"take_along_axis: indices {fmt(idx.shape)} must have the rank of x {fmt(x.shape)} "
                             f"and match it (or be 1) off axis {self.axis}.")
        shape = tuple(idx.shape[i] if i == axis else s for i, s in enumerate(x.shape))
        return (TensorSpec(shape, x.dtype),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        x, idx = inputs
        axis = self.axis % len(x.shape)
        _gather_call(self, ctx, "take_along_forward", "take_along_axis", x, idx, axis, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            x, idx = inputs
            kernel(karr, "take_along_backward", ctx)(grad_outputs[0], idx, self.axis % len(x.shape),
                                                     grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class TileOp(Op):
    """``y = tile(x, reps)`` with one rep per dim of x (the batch dim's rep must be 1 when symbolic)."""

    type_name: ClassVar[str] = "tile"
    reps: tuple[int, ...] = ()

    def output_specs(self, inputs, weights):
        _n_inputs("tile", inputs, 1)
        x = inputs[0]
        if len(self.reps) != x.ndim:
            raise ShapeError(f"tile: reps {self.reps} need one entry per dim of {fmt(x.shape)}.")
        if x.ndim and x.shape[0] is None and self.reps[0] != 1:
            _batch_kept("tile", x, 0)
        return (TensorSpec(tuple(None if s is None else s * r for s, r in zip(x.shape, self.reps, strict=True)),
                           x.dtype),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "tile_forward", ctx)(inputs[0], self.reps, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "tile_backward", ctx)(grad_outputs[0], self.reps, grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class RepeatOp(Op):
    """``y = repeat(x, repeats, axis)`` with one integer count for every element."""

    type_name: ClassVar[str] = "repeat"
    repeats: int = 1
    axis: int = -1

    def output_specs(self, inputs, weights):
        _n_inputs("repeat", inputs, 1)
        x = inputs[0]
        axis = norm_axis(self.axis, x.ndim, "repeat")
        _batch_kept("repeat", x, axis)
        shape = tuple(s * self.repeats if i == axis else s for i, s in enumerate(x.shape))
        return (TensorSpec(shape, x.dtype),)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "repeat_forward", ctx)(inputs[0], self.repeats, self.axis % len(inputs[0].shape), outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "repeat_backward", ctx)(grad_outputs[0], self.repeats, self.axis % len(inputs[0].shape),
                                                 grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class BroadcastToOp(Op):
    """``y = broadcast_to(x, shape)`` (NumPy rules; None in `shape` is the batch of a symbolic x)."""

    type_name: ClassVar[str] = "broadcast_to"
    shape: tuple[int | None, ...] = ()

    def output_specs(self, inputs, weights):
        _n_inputs("broadcast_to", inputs, 1)
        x = inputs[0]
        off = len(self.shape) - x.ndim
        ok = off >= 0 and all(self.shape[i + off] is None or s in (1, self.shape[i + off]) for i, s in enumerate(x.shape))
        if not ok or (None in self.shape and off != 0):
            raise ShapeError(f"broadcast_to: cannot broadcast {fmt(x.shape)} to {fmt(self.shape)}; each dim must "
                             f"be 1 or the target's (a symbolic batch dim stays the batch).")
        return (TensorSpec(tuple(self.shape), x.dtype),)

    def sample_dim(self):
        return 0 if self.shape and self.shape[0] is None else None

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "broadcast_forward", ctx)(inputs[0], outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "broadcast_backward", ctx)(grad_outputs[0], grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class CumsumOp(Op):
    """Inclusive cumulative sum along `axis` (non-negative, not the symbolic batch dim: that is a
    CrossBatchError)."""

    type_name: ClassVar[str] = "cumsum"
    axis: int = -1
    reverse: bool = False

    def output_specs(self, inputs, weights):
        _n_inputs("cumsum", inputs, 1)
        x = inputs[0]
        if x.ndim and x.shape[0] is None and norm_axis(self.axis, x.ndim, "cumsum") == 0:
            raise CrossBatchError(
                f"cumsum along axis 0 of the symbolic tensor {fmt(x.shape)} adds up rows of different samples of "
                f"the batch (each row depends on every row before it), which a graph split by samples cannot "
                f"compute (a mixture-of-experts router counting each expert's tokens over the whole batch, as "
                f"keras.io's switch transformer, does this). Count within each sample instead: keep the tokens in "
                f"their own axis (batch, tokens, ...) and take the cumsum along axis 1.")
        return (x,)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "cumsum_forward", ctx)(inputs[0], self.axis % len(inputs[0].shape), self.reverse, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "cumsum_backward", ctx)(grad_outputs[0], self.axis % len(inputs[0].shape), self.reverse,
                                                 grad_inputs[0], ctx.acc_input(0))


def _reduced(x: TensorSpec, axes: tuple[int, ...], keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    return tuple(s for i, s in enumerate(x.shape) if i not in axes)


@dataclass(frozen=True)
class ProdOp(Op):
    """Product over `axes` (sorted, non-negative); exact gradients at zeros."""

    type_name: ClassVar[str] = "prod"
    axes: tuple[int, ...] = ()
    keepdims: bool = False

    def output_specs(self, inputs, weights):
        _n_inputs("prod", inputs, 1)
        x = inputs[0]
        if any(a >= x.ndim for a in self.axes):
            raise ShapeError(f"prod: axes {self.axes} out of range for input shape {fmt(x.shape)}.")
        return (TensorSpec(_reduced(x, self.axes, self.keepdims), x.dtype),)

    def sample_dim(self):
        return None if 0 in self.axes else 0

    def tile(self, shapes, out_box, part=0, parts=1):
        """A piece reads its own rows and the whole reduced axes (the default rule lines dims up from the
        right: a (N, 4, 6) -> (N, 6) piece of a batch split read a (4, 6) box and failed to reshape)."""
        ndim = len(shapes.inputs[0])
        kept = ([-1 if d in self.axes else d for d in range(ndim)] if self.keepdims else
                [d for d in range(ndim) if d not in self.axes])
        return par.reduction_tile(shapes, out_box, kept)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "prod_forward", ctx)(inputs[0], self.axes, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "prod_backward", ctx)(inputs[0], self.axes, grad_outputs[0], grad_inputs[0],
                                               ctx.acc_input(0))


@dataclass(frozen=True)
class ArgReduceOp(Op):
    """argmax / argmin along `axis` into int32 (Keras' dtype); no gradient."""

    type_name: ClassVar[str] = "argmax"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    fn: str = "argmax"
    axis: int = -1
    keepdims: bool = False

    def output_specs(self, inputs, weights):
        _n_inputs(self.fn, inputs, 1)
        x = inputs[0]
        axis = norm_axis(self.axis, x.ndim, self.fn)
        return (TensorSpec(_reduced(x, (axis,), self.keepdims), "int32"),)

    def sample_dim(self):
        return None if self.axis == 0 else 0

    def _kept(self, ndim: int) -> list[int]:
        """Per output dim, the input dim it comes from (-1: the reduced dim kept with size 1)."""
        axis = self.axis % ndim
        return [-1 if d == axis else d for d in range(ndim)] if self.keepdims else [d for d in range(ndim)
                                                                                   if d != axis]

    def parallel_space(self, inputs, weights):
        kept = self._kept(inputs[0].ndim)
        return par.space_except(self, inputs, weights, [i for i, d in enumerate(kept) if d < 0],
                                f"{self.fn} reads the whole axis it reduces")

    def tile(self, shapes, out_box, part=0, parts=1):
        """A piece reads its own rows and the whole reduced axis (the default rule lines dims up from the
        right, so a (N, C) -> (N,) piece read the wrong rows)."""
        return par.reduction_tile(shapes, out_box, self._kept(len(shapes.inputs[0])))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "arg_forward", ctx)(self.fn, inputs[0], self.axis % len(inputs[0].shape), outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """Indices have no gradient."""


@dataclass(frozen=True)
class OneHotOp(Op):
    """One-hot encoding of integer ids with `num_classes` classes at `axis` (-1: a new last axis)."""

    type_name: ClassVar[str] = "one_hot"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    num_classes: int = 2
    axis: int = -1
    dtype: str = "float32"

    def output_specs(self, inputs, weights):
        _n_inputs("one_hot", inputs, 1)
        x = inputs[0]
        shape = list(x.shape)
        axis = norm_axis(self.axis, x.ndim + 1, "one_hot")
        _batch_kept("one_hot", TensorSpec(tuple(shape) + (1,)), axis)
        shape.insert(axis, int(self.num_classes))
        return (TensorSpec(tuple(shape), self.dtype),)

    def parallel_space(self, inputs, weights):
        axis = norm_axis(self.axis, inputs[0].ndim + 1, "one_hot")
        return par.space_except(self, inputs, weights, [axis], "the classes axis is written whole from each id")

    def tile(self, shapes, out_box, part=0, parts=1):
        """The ids of a piece are its output box without the classes axis (the default rule lines dims up
        from the right, so an (N,) -> (N, C) piece read every id)."""
        axis = self.axis % len(shapes.outputs[0])
        lo, hi = out_box
        ids = (lo[:axis] + lo[axis + 1:], hi[:axis] + hi[axis + 1:])
        return par.Tile((ids,), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "one_hot_forward", ctx)(inputs[0], self.num_classes, self.axis % (len(inputs[0].shape) + 1),
                                             outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """Ids have no gradient."""


@dataclass(frozen=True)
class TopKOp(Op):
    """The `k` largest entries along the last axis: outputs (values, int32 indices)."""

    type_name: ClassVar[str] = "top_k"
    k: int = 1

    def output_specs(self, inputs, weights):
        _n_inputs("top_k", inputs, 1)
        x = inputs[0]
        if x.ndim < 1 or (x.shape[-1] is not None and not 1 <= self.k <= x.shape[-1]):
            raise ShapeError(f"top_k: k={self.k} must be in [1, {x.shape[-1] if x.ndim else 0}] for input "
                             f"{fmt(x.shape)}.")
        shape = tuple(x.shape[:-1]) + (self.k,)
        return TensorSpec(shape, x.dtype), TensorSpec(shape, "int32")

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(karr, "top_k_forward", ctx)(inputs[0], self.k, outputs[0], outputs[1])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(karr, "top_k_backward", ctx)(grad_outputs[0], outputs[1], grad_inputs[0], ctx.acc_input(0))
