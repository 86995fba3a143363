"""What a `BatchSecondStack` (``ops.stack(xs, axis=0)`` of batch-first symbolic tensors) can be used for,
besides the transpose that puts the batch first again (numpy_api.BatchSecondStack).

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

from flexflow_keras.errors import ArgumentError


def _stack_type():
    from flexflow_keras.ops.numpy_api import BatchSecondStack

    return BatchSecondStack


def _parts_of(stack, physical):
    from flexflow_keras.ops.numpy_arrays import unstack

    return _stack_type()(unstack(physical, axis=1))


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
        return _stack_type()([p[rest] if rest else p for p in chosen])
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
    return builtins.isinstance(x, _stack_type())
