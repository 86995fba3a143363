"""Unknown dims in shape arithmetic on symbolic tensors, as keras.io's transformers write it:

- ``ops.shape(x)`` gives a `BatchDim` for the batch (ops/numpy_api.py) and a `SeqDim` for another open dim
  (``Input(shape=(None,))``); both print as None and remember x.
- ``ops.arange(0, ops.shape(x)[-1])`` (a positional embedding over a variable length) is a `RangeOp` that
  reads the length from x: the model's graph is recorded again at each data length
  (models/variable_dims.py), so the range has the data's length.
- ``ops.reshape(mask, (1, n, n))`` with ``n = ops.shape(x)[1]`` inserts or removes size-1 dims around the
  open ones (the only reshapes an open size allows).
- A causal mask tiled over the batch: ``ops.tile(mask, mult)`` with ``mult = ops.concatenate([ops.expand_dims(
  batch_size, -1), ops.convert_to_tensor([1, 1])])`` (a `ShapeVector`), or ``ops.tile(mask, (batch_size, 1,
  1))``, ``ops.broadcast_to(mask, (batch_size, n, n))``, ``ops.repeat(mask, batch_size, axis=0)``: a tensor
  with a leading 1 broadcast to the batch of the tensor the batch size came from (a multiply by ones of
  shape (batch, 1, ...), so its gradient and GPU kernels are the element-wise ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops._util import kernel, write
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import KerasTensor, TensorSpec
from kernels import shape as kshape

_ARITHMETIC = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow")


def no_arithmetic(cls):
    """Give an unknown-dim class (`SeqDim`, numpy_api's `BatchDim`) arithmetic that raises a TypeError
    saying why (``tf.shape(x)[1] * num_nodes``, keras.io's traffic forecasting, met a bare "unsupported
    operand type(s)"): a product or sum of an unknown size is a shape that merges the batch or an open
    length with another dim, which a graph here cannot hold."""

    def refuse(self, other):
        raise TypeError(f"{self._dim_words()} is unknown while the graph is built, and arithmetic on it "
                        f"({self!r} and {other!r}) is not supported: flexflow_keras keeps the batch and open "
                        f"lengths as dims of their own, so a shape that multiplies one into another dim "
                        f"(batch * nodes) cannot be built. Reshape each sample instead, e.g. ops.reshape(x, "
                        f"(-1,) + per_sample_shape), or keep the dims apart (Dense acts on the last axis of "
                        f"inputs of any rank).")

    for name in _ARITHMETIC:
        setattr(cls, f"__{name}__", refuse)
        setattr(cls, f"__r{name}__", refuse)
    return cls


@no_arithmetic
class SeqDim:
    """A non-batch entry of ``ops.shape(x)`` that is unknown while the graph is recorded (an open Input dim)."""

    _is_dim = True

    def __init__(self, ref: KerasTensor, axis: int):
        self.ref, self.axis = ref, axis

    def __repr__(self) -> str:
        return "None"

    def _dim_words(self) -> str:
        return f"ops.shape(x)[{self.axis}] of a symbolic tensor (a dim left open, or the batch moved there)"

    def __index__(self):
        raise TypeError(f"ops.shape(x)[{self.axis}] of a symbolic tensor is a length left open by its Input "
                        f"(shape=(None, ...)), unknown while the graph is built; pass it to ops.arange, "
                        f"ops.reshape or ops.tile rather than to Python code that needs a number.")


class ShapeVector:
    """A shape held as a vector (``ops.concatenate([ops.expand_dims(batch_size, -1), [1, 1]])``): entries are
    ints, `BatchDim` or `SeqDim`."""

    def __init__(self, entries):
        self.entries = tuple(entries)

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i):
        return self.entries[i]

    def __repr__(self) -> str:
        return f"ShapeVector({list(self.entries)})"


def is_dim(x) -> bool:
    return getattr(x, "_is_dim", False)


def holds_dims(values) -> bool:
    """Whether a shape-like value (a ShapeVector, a tuple or list) holds an unknown dim."""
    if isinstance(values, ShapeVector):
        return True
    return isinstance(values, (list, tuple)) and any(is_dim(v) or isinstance(v, ShapeVector) for v in values)


def vector(parts) -> ShapeVector:
    """Entries of ShapeVectors, dims and int arrays joined (concatenate / stack of shape pieces)."""
    entries: list = []
    for p in parts:
        if isinstance(p, ShapeVector):
            entries += p.entries
        elif is_dim(p):
            entries.append(p)
        else:
            entries += [int(v) for v in np.asarray(p).reshape(-1)]
    return ShapeVector(entries)


# --- arange over an open length --------------------------------------------------------------------------
@dataclass(frozen=True)
class RangeOp(Op):
    """``arange(start, n, step)`` where n is dim `axis` of the input (read for its shape only). No batch dim,
    no gradient."""

    type_name: ClassVar[str] = "range"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    start: int = 0
    step: int = 1
    axis: int = 1
    dtype: str = "int32"

    def output_specs(self, inputs, weights):
        n = tuple(inputs[0].shape)[self.axis]
        size = None if n is None else max(0, math.ceil((n - self.start) / self.step))
        return (TensorSpec((size,), self.dtype),)

    def sample_dim(self):
        return None

    def tile(self, shapes, out_box, part=0, parts=1):
        from flexflow_keras.ops import parallel as par

        ref = shapes.inputs[0]  # read for its shape only: one element, not the whole (sharded) tensor
        return par.Tile((((0,) * len(ref), tuple(min(1, int(d)) for d in ref)),), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        n = outputs[0].shape[0]  # the length, from the graph recorded at the data's shape
        write(outputs[0], (self.start + self.step * np.arange(n)).astype(np.dtype(self.dtype)))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """A range has no gradient."""


def arange(start, stop, step, dtype):
    """`ops.arange` with a `SeqDim` bound."""
    if stop is None:
        start, stop = 0, start
    if is_dim(start) or not is_dim(stop) or getattr(stop, "axis", 0) == 0:  # a BatchDim has no axis: it is 0
        raise ShapeError("ops.arange over an unknown length takes it as the stop (ops.arange(0, ops.shape(x)[1])); "
                         "the batch size (ops.shape(x)[0]) cannot be a range.")
    return apply_op(RangeOp(int(start), int(step), stop.axis, str(np.dtype(dtype or "int32"))), [stop.ref])


# --- reshapes around open dims -----------------------------------------------------------------------------
def reshape(x, new_shape):
    """A reshape whose target holds SeqDims: only inserting or removing size-1 dims around the open ones."""
    from flexflow_keras.ops import functional as F
    from flexflow_keras.ops.numpy_api import BatchDim

    target = [None if isinstance(s, BatchDim) or (i == 0 and s == -1) else s for i, s in enumerate(new_shape)]
    src = list(x.shape)
    keep_t = [(i, s) for i, s in enumerate(target) if s != 1 or is_dim(s)]
    keep_s = [(i, s) for i, s in enumerate(src) if s != 1]
    same = len(keep_t) == len(keep_s) and all(
        (is_dim(t) and s is None) or (t is None and s is None) or (not is_dim(t) and t == s)
        for (_, t), (_, s) in zip(keep_t, keep_s, strict=True))
    if not same:
        dims = _one_open_length(src, target)
        if dims is not None:
            return F.reshape(x, dims)
        raise ShapeError(f"reshape of {tuple(src)} to {tuple(target)}: with lengths unknown while the graph is built "
                         f"(ops.shape(x)[i] of an open Input dim), a reshape can only add or remove dims of size 1, "
                         f"or, with one open length on each side, regroup the known dims (the same product).")
    y = x
    for i in reversed([i for i, s in enumerate(src) if s == 1]):
        y = F.squeeze(y, i)
    for i in [i for i, s in enumerate(target) if s == 1 and not is_dim(s)]:
        y = apply_op(InsertAxisOp(i), [y])
    return y


def _one_open_length(src: list, target: list) -> list | None:
    """``(B, N, 24) -> (B, N, 3, 2, 4)`` (keras.io's CaiT splits heads with ``tf.reshape(qkv, (B, N, 3, h,
    C // h))`` over a variable token count): one open length on each side and the same product of the known
    dims, so the open length carries over; F.reshape's -1 takes it (the target with the batch and the open
    length as -1), and the graph recorded at the data's length checks the sizes. None when it does not fit."""
    rest_t, rest_s = target[1:], src[1:]
    if sum(is_dim(t) for t in rest_t) != 1 or sum(s is None for s in rest_s) != 1:
        return None
    if any(t is None or (not is_dim(t) and int(t) < 1) for t in rest_t):
        return None
    known_t = math.prod(int(t) for t in rest_t if not is_dim(t))
    known_s = math.prod(int(s) for s in rest_s if s is not None)
    if known_t != known_s:
        return None
    return [-1] + [-1 if is_dim(t) else int(t) for t in rest_t]


@dataclass(frozen=True)
class InsertAxisOp(Op):
    """A dim of size 1 inserted at `axis`, with no rule about the batch (its input may be a tensor without
    one whose first size is open: a mask built from ``ops.arange(ops.shape(x)[1])``). The data is copied."""

    type_name: ClassVar[str] = "insert_axis"
    axis: int = 0

    def output_specs(self, inputs, weights):
        shape = list(inputs[0].shape)
        shape.insert(self.axis, 1)
        return (TensorSpec(tuple(shape), inputs[0].dtype),)

    def sample_dim(self):
        return None if self.axis == 0 else 0

    def parallel_space(self, inputs, weights):
        from flexflow_keras.ops import parallel as par

        return par.space_except(self, inputs, weights, [self.axis], "it is the inserted dim of size 1")

    def tile(self, shapes, out_box, part=0, parts=1):
        from flexflow_keras.ops import parallel as par

        lo, hi = out_box
        a = self.axis
        return par.Tile(((lo[:a] + lo[a + 1:], hi[:a] + hi[a + 1:]),), (), (out_box,))

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        kernel(kshape, "copy_forward", ctx)(inputs[0], outputs[0])

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        if grad_inputs[0] is not None:
            kernel(kshape, "copy_backward", ctx)(grad_outputs[0], grad_inputs[0], ctx.acc_input(0))


# --- broadcasting to the batch -----------------------------------------------------------------------------
def _batch_of(reps):
    from flexflow_keras.ops.numpy_api import BatchDim

    return next((r for r in reps if isinstance(r, BatchDim)), None)


def to_batch(x, batch, who: str):
    """x, whose first dim is 1, repeated over the batch that `batch` (a BatchDim) stands for."""
    from flexflow_keras.ops import functional as F
    from flexflow_keras.ops.random_ops import FillOp

    shape = tuple(x.shape)
    if not shape or shape[0] != 1:
        raise ShapeError(f"{who}: repeating over the batch (ops.shape(x)[0]) needs a tensor whose first dim is 1, "
                         f"received shape {shape}.")
    dtype = str(x.dtype)
    ones = apply_op(FillOp((None,) + (1,) * (len(shape) - 1), 1.0, dtype), [batch.ref])
    return F.logical_and(x, ones) if dtype == "bool" else F.multiply(x, ones)


def tile(x, reps):
    """`ops.tile` whose repeats hold the batch size: broadcast over the batch, then the other repeats."""
    from flexflow_keras.ops import numpy_api

    reps = list(reps)
    batch = _batch_of(reps)
    if batch is None or not is_dim(reps[0]) or any(is_dim(r) for r in reps[1:]):
        raise ShapeError(f"tile: repeats {reps}: the batch size (ops.shape(x)[0]) can only repeat the first dim, and "
                         f"open lengths cannot be repeats.")
    y = to_batch(x, batch, "tile")
    rest = [int(r) for r in reps[1:]]
    return numpy_api.tile(y, [1] + rest) if any(r != 1 for r in rest) else y


def broadcast_to(x, shape):
    """`ops.broadcast_to` to (batch_size, ...): x's leading 1 becomes the batch; other dims as given."""
    from flexflow_keras.ops import numpy_api

    shape = list(shape)
    batch = _batch_of(shape)
    if batch is None or not is_dim(shape[0]):
        raise ShapeError(f"broadcast_to {shape}: the batch size (ops.shape(x)[0]) can only be the first dim.")
    nd = len(shape)
    x = x if len(x.shape) == nd else numpy_api.reshape(x, (1,) * (nd - len(x.shape)) + tuple(x.shape))
    y = to_batch(x, batch, "broadcast_to")
    rest = [None if is_dim(s) else int(s) for s in shape[1:]]
    if all(r is None or r == s for r, s in zip(rest, y.shape[1:], strict=True)):
        return y
    return numpy_api.broadcast_to(y, (batch,) + tuple(r if r is not None else s for r, s in
                                                      zip(rest, y.shape[1:], strict=True)))


def repeat(x, repeats, axis):
    """`ops.repeat(x, batch_size, axis=0)`: x's leading 1 repeated over the batch."""
    if axis not in (0, -len(x.shape)):
        raise ShapeError("repeat: the batch size (ops.shape(x)[0]) can only repeat axis 0.")
    return to_batch(x, repeats, "repeat")
