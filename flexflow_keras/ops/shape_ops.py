"""Data-movement ops: `ReshapeOp`, `TransposeOp`, `ConcatOp`.

Reshape keeps the batch dim: the target's first entry is -1 or None (the batch) and the per-sample size
is unchanged. Merging the batch with other dims is refused: a tensor's leading None always means "the
batch" to the execution, which splits it across shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import fmt, kernel, known_size, norm_axis
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.graph import TensorSpec
from kernels import shape as kshape


def _resolve(who: str, src: tuple, target: tuple, total: int | None) -> tuple:
    """Resolve one -1 in `target` so its size is `total` (None: unknown, then -1 must not appear)."""
    if sum(1 for t in target if t == -1) > 1:
        raise ShapeError(f"{who}: at most one -1 is allowed in the target shape {target}.")
    known = int(np.prod([t for t in target if t != -1], dtype=np.int64))
    if -1 in target:
        if total is None or known == 0 or total % known:
            raise ShapeError(f"{who}: cannot reshape {fmt(src)} to {target}: {total} elements do not divide "
                             f"into blocks of {known}.")
        return tuple(total // known if t == -1 else t for t in target)
    if total is not None and known != total:
        raise ShapeError(f"{who}: cannot reshape {fmt(src)} ({total} elements per sample) to {target} "
                         f"({known} elements). The sizes must match.")
    return target


@dataclass(frozen=True)
class ReshapeOp(Op):
    """Reshape to `shape`, the full target shape whose first entry is the batch (-1 or None) for
    symbolic inputs; concrete (eager) inputs follow NumPy."""

    type_name: ClassVar[str] = "reshape"
    shape: tuple[int | None, ...] = ()

    def output_specs(self, inputs, weights):
        if len(inputs) != 1:
            raise ShapeError(f"reshape takes 1 input, received {len(inputs)}.")
        x = inputs[0]
        target = tuple(-1 if s is None else int(s) for s in self.shape)
        if x.ndim and x.shape[0] is None:
            if not target or target[0] != -1:
                raise ShapeError(f"reshape: the target {self.shape} must start with -1 or None for the batch dim "
                                 f"of the input {fmt(x.shape)}; per-sample shapes go after it, e.g. "
                                 f"(-1,) + {tuple(target[1:]) or '(...)'}.")
            per = known_size(x.shape[1:])
            rest = target[1:]
            if per is None:  # an open dim (Input((None, 193))): -1 stays open until the data's length is known
                if sum(1 for t in rest if t == -1) > 1:
                    raise ShapeError(f"reshape: at most one -1 is allowed in the target shape {self.shape}.")
                # models/variable_dims.py records the graph again on the data's shape, where the sizes are checked
                return (TensorSpec((None,) + tuple(None if t == -1 else t for t in rest), x.dtype),)
            block = int(np.prod([t for t in rest if t != -1], dtype=np.int64))
            fits = per is not None and (per % block == 0 if -1 in rest and block else block == per)
            if not fits:
                raise ShapeError(f"reshape: the input {fmt(x.shape)} has {per} elements per sample but the "
                                 f"target {self.shape} asks for {block} per sample; reshape keeps the batch dim "
                                 f"and cannot merge it with other dims (ops.dense acts on the last axis of "
                                 f"inputs of any rank, so it needs no reshape).")
            rest = _resolve("reshape", x.shape, rest, per)
            return (TensorSpec((None,) + rest, x.dtype),)
        return (TensorSpec(_resolve("reshape", x.shape, target, known_size(x.shape)), x.dtype),)

    def tile(self, shapes, out_box, part=0, parts=1):
        x = shapes.inputs[0]
        lo, hi = out_box
        # a split of the leading dim alone reads the same rows, when that dim is the input's leading dim too
        # (the batch; not a weight's (5,) reshaped to (1, 1, 1, 5))
        if len(x) and x[0] == shapes.outputs[0][0] and lo[1:] == (0,) * (len(lo) - 1) and \
                tuple(hi[1:]) == tuple(shapes.outputs[0][1:]):
            return par.Tile(((lo[:1] + (0,) * (len(x) - 1), hi[:1] + tuple(x[1:])),), (), (out_box,))
        return par.Tile((par.whole(x),), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kshape, "copy_forward", ctx)(inputs[0], outputs[0])

    def backward_reads(self):
        return False, False  # the gradient alone

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(kshape, "copy_backward", ctx)(grad_outputs[0], grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class TransposeOp(Op):
    """Permute all dims (including the batch) by `perm`; the sample dim moves to ``perm.index(0)``."""

    type_name: ClassVar[str] = "transpose"
    perm: tuple[int, ...] = ()

    def output_specs(self, inputs, weights):
        if len(inputs) != 1:
            raise ShapeError(f"transpose takes 1 input, received {len(inputs)}.")
        x = inputs[0]
        if sorted(self.perm) != list(range(x.ndim)):
            raise ShapeError(f"transpose: perm {self.perm} is not a permutation of the {x.ndim} dims of "
                             f"{fmt(x.shape)}.")
        return (TensorSpec(tuple(x.shape[p] for p in self.perm), x.dtype),)

    def sample_dim(self):
        return self.perm.index(0) if 0 in self.perm else None

    def parallel_space(self, inputs, weights):
        return par.elementwise_space(self, inputs, weights)

    def tile(self, shapes, out_box, part=0, parts=1):
        lo, hi = [0] * len(self.perm), [0] * len(self.perm)
        for i, p in enumerate(self.perm):
            lo[p], hi[p] = out_box[0][i], out_box[1][i]
        return par.Tile(((tuple(lo), tuple(hi)),), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kshape, "transpose_forward", ctx)(inputs[0], self.perm, outputs[0])

    def backward_reads(self):
        return False, False  # the gradient alone

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(kshape, "transpose_backward", ctx)(grad_outputs[0], self.perm, grad_inputs[0], ctx.acc_input(0))


@dataclass(frozen=True)
class ConcatOp(Op):
    """Concatenate the inputs along `axis` (non-negative); axis 0 loses the batch split."""

    type_name: ClassVar[str] = "concatenate"
    axis: int = -1

    def output_specs(self, inputs, weights):
        if len(inputs) < 1:
            raise ShapeError("concatenate needs at least one input.")
        first = inputs[0]
        axis = norm_axis(self.axis, first.ndim, "concatenate")
        total = 0
        for t in inputs:
            ok = t.ndim == first.ndim and all(a == b for i, (a, b) in enumerate(zip(t.shape, first.shape,
                                                                                      strict=True)) if i != axis)
            if not ok:
                raise ShapeError(f"concatenate on axis {self.axis} needs inputs that match except on that axis; "
                                 f"received shapes {[fmt(s.shape) for s in inputs]}. Reshape them to agree.")
            total = None if total is None or t.shape[axis] is None else total + t.shape[axis]
        shape = list(first.shape)
        shape[axis] = total
        return (TensorSpec(tuple(shape), str(np.result_type(*[t.dtype for t in inputs]))),)

    def sample_dim(self):
        return None if self.axis == 0 else 0

    def parallel_space(self, inputs, weights):
        return par.space_except(self, inputs, weights, [self.axis], "concatenate joins its inputs along it")

    def tile(self, shapes, out_box, part=0, parts=1):
        axis = self.axis % len(shapes.outputs[0])
        ins = tuple(par.with_dims(out_box, {axis: (0, s[axis])}) for s in shapes.inputs)
        return par.Tile(ins, (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kshape, "concat_forward", ctx)(list(inputs), self.axis, outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        sizes = [tuple(t.shape)[self.axis] for t in inputs]
        kernel(kshape, "concat_backward", ctx)(grad_outputs[0], self.axis, sizes, list(grad_inputs),
                                               tuple(ctx.acc_input(i) for i in range(len(inputs))))
