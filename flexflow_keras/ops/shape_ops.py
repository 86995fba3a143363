"""Data-movement ops: `ReshapeOp`, `TransposeOp`, `ConcatOp`.

Reshape of a batched tensor: the target's first entry is -1 or None (the batch dim). With the per-sample
size unchanged it keeps the batch rows. A target whose other entries are all known may also fold blocks
of each sample into the batch dim, as Swin's window partition does (``(B, 8, 8, C)`` to ``(-1, 4, 4, C)``:
``(B*4, 4, 4, C)``), and unfold them again (``(-1, 2, 2, 4, 4, C)``): the output's leading None then counts
k rows per sample (`batch_ratio`, ops/graph.py's `batch_scale`), the execution sizes it as k times the
batch and splits it by whole samples (`tile`). Rows of different samples are never joined.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import CrossBatchError, ShapeError
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
            if -1 not in rest and per and block and (per % block == 0 or block % per == 0):
                return (TensorSpec((None,) + rest, x.dtype),)  # keeps, folds or unfolds the batch rows
            fits = per is not None and (per % block == 0 if -1 in rest and block else block == per)
            if not fits:
                raise ShapeError(f"reshape: the input {fmt(x.shape)} has {per} elements per sample but the "
                                 f"target {self.shape} asks for {block} per row; the rows of the batch dim "
                                 f"may split each sample into equal blocks or join such blocks again, so one "
                                 f"size must divide the other.")
            rest = _resolve("reshape", x.shape, rest, per)
            return (TensorSpec((None,) + rest, x.dtype),)
        return (TensorSpec(_resolve("reshape", x.shape, target, known_size(x.shape)), x.dtype),)

    def batch_ratio(self, inputs):
        x = inputs[0]
        target = tuple(-1 if s is None else int(s) for s in self.shape)
        if not (x.ndim and x.shape[0] is None):
            return 1
        if -1 in target[1:]:
            return None  # the rows kept, unless they are folded blocks (then ambiguous: ops/graph.py refuses)
        per = known_size(x.shape[1:])
        block = int(np.prod(target[1:], dtype=np.int64))
        return Fraction(per, block) if per and block else 1

    def tile(self, shapes, out_box, part=0, parts=1):
        x, out = shapes.inputs[0], shapes.outputs[0]
        n_in, n_out = int(np.prod(x, dtype=np.int64)), int(np.prod(out, dtype=np.int64))
        if n_in != n_out:  # sized at a batch: an input with two dims of the batch's size (matmul(x, x.T))
            raise CrossBatchError(f"reshape to {self.shape}: at this batch size its input {tuple(x)} holds {n_in} "
                                  f"elements and its output {tuple(out)} {n_out}: the input has more than one dim "
                                  f"of the batch's size (a product over the batch, ops.matmul(x, ops.transpose(x))), "
                                  f"whose elements a -1 cannot count in a graph split by samples. Reduce it first "
                                  f"(ops.sum), or compute the term in an activity regularizer (run on the whole "
                                  f"batch).")
        lo, hi = out_box
        # a split of the leading dim alone reads the input's rows holding the same elements (row-major), when
        # its rows start and end on rows of the input: the batch rows kept, folded or unfolded
        if len(x) and len(out) and lo[1:] == (0,) * (len(lo) - 1) and tuple(hi[1:]) == tuple(out[1:]):
            row_out, row_in = int(np.prod(out[1:], dtype=np.int64)), int(np.prod(x[1:], dtype=np.int64))
            a, b = lo[0] * row_out, hi[0] * row_out
            if row_in and a % row_in == 0 and b % row_in == 0:
                return par.Tile((((a // row_in,) + (0,) * (len(x) - 1), (b // row_in,) + tuple(x[1:])),), (),
                                (out_box,))
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
        # axis 0 is the batch when it is the only None: with open dims too, a None there may be a length
        # (a time-major transpose of Input((None, 3))), and the graph recorded again at the data's lengths
        # (models/variable_dims.py) leaves the batch the only None, where this check applies
        if axis == 0 and len(inputs) > 1 and any(t.ndim and t.shape[0] is None and list(t.shape).count(None) == 1
                                                 for t in inputs):
            raise ShapeError(
                f"concatenate along axis 0 of {[fmt(t.shape) for t in inputs]}: axis 0 is the batch, so this "
                f"joins the samples of its inputs into one longer batch, and a model's graph here keeps each "
                f"row of a tensor with its own sample (it splits the batch across processors). Join them per "
                f"sample instead (axis=-1, or ops.stack(xs, axis=1)), or join the batches outside the model: "
                f"in the input pipeline, or in a custom train_step (which runs eagerly).")
        total = 0
        shape = list(first.shape)
        for t in inputs:
            # an open dim (None past the batch) joins any size, as in Keras: the data's sizes are checked
            # when the graph is recorded again at them (models/variable_dims.py)
            ok = t.ndim == first.ndim and all(a == b or (i > 0 and (a is None or b is None))
                                              for i, (a, b) in enumerate(zip(t.shape, first.shape, strict=True))
                                              if i != axis)
            if not ok:
                raise ShapeError(f"concatenate on axis {self.axis} needs inputs that match except on that axis; "
                                 f"received shapes {[fmt(s.shape) for s in inputs]}. Reshape them to agree.")
            total = None if total is None or t.shape[axis] is None else total + t.shape[axis]
            shape = [None if d is None or e is None else d for d, e in zip(shape, t.shape, strict=True)]
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
