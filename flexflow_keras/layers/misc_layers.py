"""Small layers composed of existing ops: Identity, UnitNormalization, PReLU and the Dot merge layer
(Keras 3 semantics)."""

from __future__ import annotations

from flexflow_keras import backend, constraints, initializers, ops, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec


def l2_normalize(x, axis, epsilon: float):
    """``x * min(rsqrt(sum(x^2, axis)), 1 / epsilon)``: Keras' L2 normalisation."""
    inv = ops.rsqrt(ops.sum(ops.square(x), axis=axis, keepdims=True))
    return ops.multiply(x, ops.minimum(inv, 1.0 / epsilon))


class Identity(Layer):
    """Return the inputs unchanged (a placeholder layer)."""

    supports_masking = True  # passes the input's mask on (Keras 3)

    def call(self, inputs):
        return inputs


class UnitNormalization(Layer):
    """Scale each sample to unit L2 norm along `axis`.

    Args:
        axis: an int or a list of ints (default -1).
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = axis
        else:
            raise ValueError(f"{_args.who(self)} expects axis to be an int or a list of ints, received "
                             f"axis={axis!r}.")

    def call(self, inputs):
        nd = len(inputs.shape)
        axes = [self.axis] if isinstance(self.axis, int) else self.axis
        return l2_normalize(inputs, tuple(_args.axis(self, a, nd) for a in axes), 1e-12)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class PReLU(Layer):
    """``max(x, 0) + alpha * min(x, 0)`` with a learned `alpha` per element (or shared along axes).

    Args:
        alpha_initializer: initializer of alpha (``"zeros"``).
        alpha_regularizer, alpha_constraint: penalty and projection of alpha.
        shared_axes: the (1-based, non-batch) axes along which alpha is shared, e.g. ``[1, 2]`` for one
            alpha per channel of a channels_last image.
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = [shared_axes] if isinstance(shared_axes, int) else list(shared_axes)
            if any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in axes):
                raise ValueError(f"{_args.who(self)} expects shared_axes to be positive (non-batch) axes, "
                                 f"received shared_axes={shared_axes!r}.")
            self.shared_axes = axes
        self.alpha = None

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for a in self.shared_axes or ():
            if a >= len(input_shape):
                raise ValueError(f"{_args.who(self)}: shared axis {a} is out of range for input shape "
                                 f"{tuple(input_shape)}.")
            shape[a - 1] = 1
        if any(s is None for s in shape):
            raise ShapeError(f"{_args.who(self)} needs known sizes on the axes alpha is not shared along; "
                             f"received input shape {tuple(input_shape)} (share the unknown axes with "
                             f"shared_axes).")
        self.alpha = self.add_weight(name="alpha", shape=tuple(shape), initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint)
        axes = {i: input_shape[i] for i in range(1, len(input_shape)) if i not in (self.shared_axes or ())}
        self.input_spec = InputSpec(ndim=len(input_shape), axes=axes)

    def call(self, inputs):
        pos = ops.relu(inputs)
        # -alpha * relu(-x), with the Variable as a direct operand so the graph reads (and trains) it
        neg = ops.multiply(ops.negative(ops.relu(ops.negative(inputs))), self.alpha)
        return ops.add(pos, neg)

    def get_config(self):
        return {**super().get_config(), "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}


class Dot(Layer):
    """The dot product of two samples along `axes` (Keras' batch_dot), for inputs of rank 2 or 3.

    Args:
        axes: an int, or a pair (one axis per input; the batch axis 0 is not allowed).
        normalize: L2-normalise both inputs along their axes first (the output is then the cosine
            similarity).

    A pair of (batch, n) inputs gives (batch, 1); (batch, t, n) and (batch, s, n) with axes=2 give
    (batch, t, s).
    """

    _float_math = True

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        pair = [axes, axes] if isinstance(axes, int) else list(axes) if isinstance(axes, (list, tuple)) else None
        if pair is None or len(pair) != 2 or any(isinstance(a, bool) or not isinstance(a, int) for a in pair):
            raise ValueError(f"{_args.who(self)} expects axes to be an int or a pair of ints, received "
                             f"axes={axes!r}.")
        self.axes = axes if isinstance(axes, int) else tuple(axes)
        self.normalize = bool(normalize)

    def _resolve(self, shapes) -> tuple[int, int]:
        if not isinstance(shapes, (list, tuple)) or len(shapes) != 2:
            raise ValueError(f"{_args.who(self)} must be called on a list of 2 inputs.")
        pair = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        out = []
        for i, (a, s) in enumerate(zip(pair, shapes, strict=True)):
            nd = len(s)
            if nd not in (2, 3):
                raise ShapeError(f"{_args.who(self)} supports inputs of rank 2 or 3; input {i} has shape "
                                 f"{tuple(s)}. Reshape it (e.g. Flatten or Reshape) first.")
            out.append(_args.axis(self, a, nd, "axes"))
        if shapes[0][out[0]] != shapes[1][out[1]]:
            raise ShapeError(f"{_args.who(self)}: the dot axes must have the same size; received shapes "
                             f"{tuple(shapes[0])} (axis {out[0]}) and {tuple(shapes[1])} (axis {out[1]}).")
        return out[0], out[1]

    def build(self, input_shape):
        self._resolve(input_shape)

    def call(self, inputs):
        x, y = inputs
        ax, ay = self._resolve([tuple(x.shape), tuple(y.shape)])
        if self.normalize:
            x = l2_normalize(x, (ax,), backend.epsilon())
            y = l2_normalize(y, (ay,), backend.epsilon())
        # x to (batch, rest_x, n), y to (batch, n, rest_y); then one batched matmul
        x3 = _to_rank3(x) if len(x.shape) == 2 else (x if ax == 2 else ops.transpose(x, (0, 2, 1)))
        y3 = _to_rank3(y, first=True) if len(y.shape) == 2 else (y if ay == 1 else ops.transpose(y, (0, 2, 1)))
        out = ops.matmul(x3, y3)
        rest = [x.shape[d] for d in range(1, len(x.shape)) if d != ax] + \
               [y.shape[d] for d in range(1, len(y.shape)) if d != ay]
        return ops.reshape(out, [-1] + (rest or [1]))

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def _to_rank3(x, first: bool = False):
    """A rank-2 (batch, n) tensor as (batch, 1, n) (or (batch, n, 1) with `first`); rank 3 as is."""
    if len(x.shape) == 3:
        return x
    n = x.shape[1]
    return ops.reshape(x, [-1, n, 1] if first else [-1, 1, n])


def dot(inputs, axes=-1, normalize=False, **kwargs):
    """The functional form of `Dot`: ``Dot(axes, normalize, **kwargs)(inputs)``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
