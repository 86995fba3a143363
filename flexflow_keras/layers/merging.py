"""Merge layers (Add, Subtract, Multiply, Maximum, Minimum, Average, Concatenate) and their functions; masks
follow Keras 3's rules (`layers.merge_masks`)."""

from __future__ import annotations

from flexflow_keras import ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args, merge_masks
from flexflow_keras.layers.base import Layer


class _Merge(Layer):
    """Element-wise merge of a list of tensors of the same (or broadcast-compatible) shape."""

    _float_math = True

    _min_inputs = 2
    _max_inputs: int | None = None

    def _check_list(self, inputs) -> list:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{_args.who(self)} expects a list of inputs, e.g. {type(self).__name__}()([a, b]); "
                             f"received a single {type(inputs).__name__}.")
        n = len(inputs)
        if n < self._min_inputs or (self._max_inputs is not None and n > self._max_inputs):
            want = (f"exactly {self._min_inputs}" if self._max_inputs == self._min_inputs
                    else f"at least {self._min_inputs}")
            raise ValueError(f"{_args.who(self)} expects {want} inputs, received {n}.")
        return list(inputs)

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not all(isinstance(s, (list, tuple)) for s in input_shape):
            raise ValueError(f"{_args.who(self)} expects a list of inputs, e.g. {type(self).__name__}()([a, b]); "
                             f"received one input of shape {input_shape}.")
        shapes = [tuple(s) for s in self._check_list(input_shape)]
        out = list(shapes[0])
        for s in shapes[1:]:
            if len(s) != len(out):
                raise ShapeError(f"{_args.who(self)} needs inputs of the same rank, received shapes {shapes}.")
            for i, (a, b) in enumerate(zip(out, s, strict=False)):
                if i == 0 or a is None or b is None or a == b or 1 in (a, b):
                    out[i] = a if b in (1, None) else b
                else:
                    raise ShapeError(f"{_args.who(self)} needs inputs of the same shape (or broadcastable), "
                                     f"received shapes {shapes}: dim {i} differs ({a} vs {b}).")

    def _op(self, a, b):
        raise NotImplementedError(f"{type(self).__name__} must define _op(a, b), the merge of two inputs.")

    def call(self, inputs):
        xs = self._check_list(inputs)
        out = xs[0]
        for x in xs[1:]:
            out = self._op(out, x)
        return merge_masks.set_mask(out, merge_masks.or_masks(merge_masks.masks_of(xs)))


class Add(_Merge):
    """Sum of the inputs: ``Add()([a, b, ...])``."""

    def _op(self, a, b):
        return ops.add(a, b)


class Subtract(_Merge):
    """``a - b`` of exactly two inputs: ``Subtract()([a, b])``."""

    _max_inputs = 2

    def _op(self, a, b):
        return ops.subtract(a, b)


class Multiply(_Merge):
    """Element-wise product of the inputs (masked positions count as 1, as in Keras 3)."""

    def _op(self, a, b):
        return ops.multiply(a, b)

    def call(self, inputs):
        xs = self._check_list(inputs)
        masks = merge_masks.masks_of(xs)
        if all(m is None for m in masks):
            return super().call(xs)
        return merge_masks.set_mask(*merge_masks.merge_multiply(xs, masks))


class Maximum(_Merge):
    """Element-wise maximum of the inputs (a masked position takes the other inputs' value, as in Keras 3)."""

    def _op(self, a, b):
        return ops.maximum(a, b)

    def call(self, inputs):
        xs = self._check_list(inputs)
        masks = merge_masks.masks_of(xs)
        if all(m is None for m in masks):
            return super().call(xs)
        return merge_masks.set_mask(*merge_masks.merge_select(self._op, xs, masks))


class Minimum(_Merge):
    """Element-wise minimum of the inputs (a masked position takes the other inputs' value, as in Keras 3)."""

    def _op(self, a, b):
        return ops.minimum(a, b)

    def call(self, inputs):
        xs = self._check_list(inputs)
        masks = merge_masks.masks_of(xs)
        if all(m is None for m in masks):
            return super().call(xs)
        return merge_masks.set_mask(*merge_masks.merge_select(self._op, xs, masks))


class Average(_Merge):
    """Element-wise mean of the inputs."""

    def call(self, inputs):
        xs = self._check_list(inputs)
        total = xs[0]
        for x in xs[1:]:
            total = ops.add(total, x)
        out = ops.multiply(total, 1.0 / len(xs))
        return merge_masks.set_mask(out, merge_masks.or_masks(merge_masks.masks_of(xs)))


class Concatenate(Layer):
    """Join the inputs along `axis` (all other dims must match).

    Args:
        axis: the axis to join on (default -1); not the batch axis.
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"{_args.who(self)} expects an integer axis, received axis={axis!r}.")
        self.axis = axis

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not input_shape or not isinstance(
                input_shape[0], (list, tuple)):
            raise ValueError(f"{_args.who(self)} expects a list of inputs, e.g. Concatenate()([a, b]).")
        shapes = [tuple(s) for s in input_shape]
        if len(shapes) < 1:
            raise ValueError(f"{_args.who(self)} expects at least one input.")
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            raise ShapeError(f"{_args.who(self)} needs inputs of the same rank, received shapes {shapes}.")
        axis = _args.axis(self, self.axis, rank)
        for d in range(1, rank):
            if d == axis:
                continue
            sizes = {s[d] for s in shapes if s[d] is not None}
            if len(sizes) > 1:
                raise ShapeError(f"{_args.who(self)} needs inputs that match except on the concat axis "
                                 f"{self.axis}, received shapes {shapes} (dim {d} differs).")

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{_args.who(self)} expects a list of inputs, received {type(inputs).__name__}.")
        xs = list(inputs)
        if len(xs) == 1:
            return xs[0]
        axis = _args.axis(self, self.axis, len(xs[0].shape))
        out = ops.concatenate(xs, axis=axis)
        return merge_masks.set_mask(out, merge_masks.concat_mask(xs, merge_masks.masks_of(xs), axis))

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def add(inputs, **kwargs):
    """``Add(**kwargs)(inputs)``."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``Subtract(**kwargs)(inputs)``."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """``Multiply(**kwargs)(inputs)``."""
    return Multiply(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """``Maximum(**kwargs)(inputs)``."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """``Minimum(**kwargs)(inputs)``."""
    return Minimum(**kwargs)(inputs)


def average(inputs, **kwargs):
    """``Average(**kwargs)(inputs)``."""
    return Average(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis=axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
