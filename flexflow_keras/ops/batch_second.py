"""`BatchSecondStack`, ``ops.stack(xs, axis=0)`` of batch-first symbolic tensors (numpy_api.stack makes it), and
what it can be used for besides the transpose that puts the batch first again.

A graph tensor keeps the batch first, so the stack keeps its parts and is never one tensor with the stacked
axis in front. Its logical axes are (stack, batch, rest...); the same values laid out batch first are
``stack(parts, axis=1)``, axes (batch, stack, rest...): the two differ by swapping axes 0 and 1. keras.io's
attention-based MIL layer stacks one attention score per instance, takes ``ops.softmax(s, axis=0)`` across
the instances and returns ``[alpha[i] for i in range(alpha.shape[0])]``; this module gives it that:

- `item`: ``s[i]`` is part i, ``s[a:b]`` (a step too) the stack of those parts, and a tuple key indexes the
  chosen parts by the rest of the key (``s[i, :, 0]`` is ``parts[i][:, 0]``).
- `along`: an op that takes an axis (softmax, log_softmax, the reductions) runs on the batch-first layout
  with the axis swapped; when the stacked axis survives (softmax, a reduction over other axes, keepdims)
  the result is unstacked on axis 1 into a stack again, otherwise (``sum(s, axis=0)``) it is a batch-first
  tensor already.

Other uses (arithmetic, element-wise ops, a tensor index) stay errors that say how to write the model.
"""

from __future__ import annotations

import builtins

from flexflow_keras.errors import ArgumentError, ShapeError
from flexflow_keras.ops.graph import KerasTensor


class StackedBeforeBatchError(ShapeError, AttributeError):
    """A use of a `BatchSecondStack` other than the transpose that puts the batch first: a ShapeError, and an
    AttributeError for a missing attribute, so ``hasattr(s, "numpy")`` is False."""


class BatchSecondStack:
    """``stack(xs, axis=0)`` of symbolic tensors whose first dim is the batch: a graph tensor keeps the batch
    first, so the parts are kept until a transpose puts the batch back in front (``tf.transpose(s, [1, 0, 2])``
    after stacking a decoder's step outputs, as TensorFlow's time-series tutorial's FeedBack model does; also
    ``moveaxis(s, 0, 1)`` and ``swapaxes(s, 0, 1)``); that transpose stacks them on axis 1, and
    ``unstack(s, axis=0)`` gives the parts back. Indexing on axis 0 and softmax / log_softmax / reductions
    along an axis work too (`item`, `along` below). Any other use is an error that says how to write it."""

    def __init__(self, parts: list):
        self.parts = parts

    @property
    def shape(self) -> tuple:
        return (len(self.parts),) + tuple(self.parts[0].shape)

    def error(self) -> StackedBeforeBatchError:
        return StackedBeforeBatchError(
            f"stack: {len(self.parts)} symbolic tensors of shape {tuple(self.parts[0].shape)} stacked on axis 0 put "
            f"the new axis before the batch dim; flexflow_keras keeps the batch first in every tensor of a model, "
            f"so such a stack can only be transposed to put the batch first again (tf.transpose(s, [1, 0, 2]), "
            f"ops.moveaxis(s, 0, 1), ops.swapaxes(s, 0, 1)), unstacked on axis 0, indexed on axis 0 (s[i], s[a:b]), or "
            f"given to softmax, log_softmax or a reduction (sum, mean, max, min, prod, logsumexp) along an axis. "
            f"Stack on axis=1 and index [:, i] instead (keras.ops.stack(xs, axis=1)).")

    def transposed(self, perm) -> KerasTensor:
        """The stack transposed by `perm` (whose first entry must be 1, the batch)."""
        from flexflow_keras.ops import functional as F  # (functional imports this module)
        from flexflow_keras.ops.numpy_api import stack

        nd = len(self.shape)
        perm = [int(p) % nd for p in perm]
        if sorted(perm) != list(range(nd)) or perm[0] != 1:
            raise self.error()
        moved = [{0: 1, 1: 0}.get(p, p) for p in perm]  # the axes of the batch-first stack
        out = stack(self.parts, axis=1)
        return out if moved == list(range(nd)) else F.transpose(out, moved)

    def unstacked(self, axis) -> list:
        """The parts (unstack on axis 0, the stacking axis)."""
        if int(axis) % len(self.shape) != 0:
            raise self.error()
        return list(self.parts)

    def __getitem__(self, key):
        """``s[i]`` is part i, ``s[a:b]`` a stack of parts (`item`)."""
        return item(self, key)

    def __len__(self) -> int:
        return len(self.parts)

    def __iter__(self):
        return iter(self.parts)

    def __getattr__(self, name):
        raise self.error()

    def _refuse(self, *args, **kwargs):
        raise self.error()

    __array__ = __bool__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _refuse
    __neg__ = __pos__ = __abs__ = _refuse


def _parts_of(stack, physical):
    from flexflow_keras.ops.numpy_arrays import unstack

    return BatchSecondStack(unstack(physical, axis=1))


def item(stack, key):
    """``stack[key]`` on the logical layout (stack, batch, rest...)."""
    key = key if isinstance(key, tuple) else (key,)
    if not key:
        return stack
    first, rest = key[0], tuple(key[1:])
    if isinstance(first, bool) or not isinstance(first, int | slice) and not hasattr(first, "__index__"):
        raise stack.error()
    if isinstance(first, slice):
        chosen = stack.parts[first]
        if not chosen:
            raise ArgumentError(f"stack[{first!r}]: the slice selects none of the {len(stack.parts)} stacked "
                                f"tensors; a stack of symbolic tensors needs at least one.")
        return BatchSecondStack([p[rest] if rest else p for p in chosen])
    index = int(first)
    if not -len(stack.parts) <= index < len(stack.parts):
        raise IndexError(f"index {index} is out of bounds for axis 0 of a stack of {len(stack.parts)} tensors "
                         f"(shape {tuple(stack.shape)}).")
    part = stack.parts[index]
    return part[rest] if rest else part


def along(stack, fn, axis, keepdims: bool = True):
    """``fn(x, axis)`` of the stack: `fn` runs on the batch-first layout with logical axes 0 and 1 swapped;
    `keepdims` False means `fn` drops the axes it is given (a reduction)."""
    from flexflow_keras.ops.numpy_api import stack as stack_fn

    nd = len(stack.shape)
    swap = {0: 1, 1: 0}
    if axis is None:
        logical = list(range(nd))
        physical_axis = None
    else:
        many = isinstance(axis, list | tuple)
        logical = [int(a) % nd for a in (axis if many else [axis])]
        mapped = [swap.get(a, a) for a in logical]
        physical_axis = tuple(mapped) if many else mapped[0]
    out = fn(stack_fn(stack.parts, axis=1), physical_axis)
    stacked_axis_kept = keepdims or 0 not in logical
    batch_kept = keepdims or 1 not in logical
    if stacked_axis_kept and batch_kept:
        return _parts_of(stack, out)
    return out


def is_stack(x) -> bool:
    return builtins.isinstance(x, BatchSecondStack)
