"""Argument validation shared by the layers: every error names the layer, the argument and the value."""

from __future__ import annotations

import numpy as np

from flexflow_keras.utils import tree


def who(layer) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


def positive_int(layer, arg: str, value) -> int:
    """`value` as an int > 0, else ``Dense 'fc1' expects a positive integer for units, received units=0``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{who(layer)} expects a positive integer for {arg}, received {arg}={value!r}.")
    return int(value)


def int_tuple(layer, arg: str, value, n: int, allow_zero: bool = False) -> tuple[int, ...]:
    """An int or a tuple of `n` ints (each positive), as Keras' `standardize_tuple`."""
    vals = (value,) * n if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
    try:
        vals = tuple(vals)
    except TypeError:
        vals = None
    if vals is None or len(vals) != n or any(
            isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (0 if allow_zero else 1)
            for v in vals):
        raise ValueError(f"{who(layer)} expects {arg} to be a positive integer or a tuple of {n} positive "
                         f"integers, received {arg}={value!r}.")
    return tuple(int(v) for v in vals)


def padding(layer, value) -> str:
    p = str(value).lower() if isinstance(value, str) else value
    if p not in ("valid", "same"):
        raise ValueError(f"{who(layer)} expects padding 'valid' or 'same', received padding={value!r}.")
    return p


def rate(layer, arg: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = None
    if v is None or isinstance(value, bool) or not 0.0 <= v <= 1.0:
        raise ValueError(f"{who(layer)} expects {arg} to be a float between 0 and 1, received "
                         f"{arg}={value!r}.")
    return v


def axis(layer, value, ndim: int, arg: str = "axis") -> int:
    """A normalised (non-negative) axis for an input of rank `ndim`; the batch axis is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not -ndim <= value < ndim:
        raise ValueError(f"{who(layer)} received {arg}={value!r}, out of range for inputs of rank {ndim}.")
    a = int(value) % ndim
    if a == 0:
        raise ValueError(f"{who(layer)} cannot use the batch axis ({arg}={value!r}); pick a feature axis "
                         f"such as -1.")
    return a


def static_batch(layer, inputs) -> int | None:
    """The batch size declared for `layer`'s inputs: its own ``batch_input_shape``/``batch_size``, or an
    ``Input(batch_size=...)`` (``batch_shape``) the inputs come from; None when none was declared."""
    own = getattr(layer, "_batch_input_shape", None)
    if own is not None and own[0] is not None:
        return int(own[0])
    seen, todo = set(), list(tree.flatten(inputs))
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        batch = getattr(t, "_static_batch", None)
        if batch is not None:
            return int(batch)
        node = getattr(t, "node", None)
        if node is not None:
            todo.extend(node.inputs)
    return None
