"""`keras.regularizers`: weight penalties the training loop adds to the loss and to the gradients.

Each regularizer has `penalty(w) -> float` (what it adds to the loss; also `__call__`) and
`gradient(w) -> np.ndarray` (d penalty / d w, what the training loop adds to the weight's gradient).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.utils.serialization import (
    Configurable,
    deserialize_instance,
    named_instance,
    serialize_keras_object,
)


def _check_factor(who: str, name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{who} expects a number for {name}, received {name}={value!r}.") from None
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{who} expects a non-negative finite {name}, received {name}={value!r}.")
    return v


class Regularizer(Configurable):
    """Base class: subclasses implement `penalty`, `gradient` and `get_config`."""

    def __call__(self, w) -> float:
        return self.penalty(w)

    def penalty(self, w) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement penalty(w).")

    def gradient(self, w) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement gradient(w).")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.get_config().items())})"


class L1L2(Regularizer):
    """``l1 * sum(|w|) + l2 * sum(w**2)``.

    Args:
        l1: L1 factor.
        l2: L2 factor.
    """

    elementwise = True  # penalty and gradient are sums / maps over elements: a weight's pieces add up

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _check_factor(type(self).__name__, "l1", l1)
        self.l2 = _check_factor(type(self).__name__, "l2", l2)

    def penalty(self, w) -> float:
        w = np.asarray(w, dtype=np.float64)
        out = 0.0
        if self.l1:
            out += self.l1 * float(np.sum(np.abs(w)))
        if self.l2:
            out += self.l2 * float(np.sum(np.square(w)))
        return out

    def gradient(self, w) -> np.ndarray:
        w = np.asarray(w)
        g = np.zeros_like(w)
        if self.l1:
            g += self.l1 * np.sign(w)
        if self.l2:
            g += (2.0 * self.l2) * w
        return g

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|w|)``; the gradient at 0 is 0.

    Args:
        l1: the factor (default 0.01).
    """

    def __init__(self, l1=0.01):
        super().__init__(l1=l1, l2=0.0)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(w**2)``.

    Args:
        l2: the factor (default 0.01).
    """

    def __init__(self, l2=0.01):
        super().__init__(l1=0.0, l2=l2)

    def get_config(self):
        return {"l2": self.l2}


# Keras spellings: `regularizers.l2(1e-4)` and `regularizers.l1_l2(l1=..., l2=...)`.
l1, l2, l1_l2 = L1, L2, L1L2

ALL_OBJECTS = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2,
               "Regularizer": Regularizer}


def serialize(regularizer):
    """``{"class_name", "config"}`` of a regularizer."""
    return serialize_keras_object(regularizer)


def deserialize(config, custom_objects=None):
    """A regularizer from `serialize`'s output."""
    return deserialize_instance(config, ALL_OBJECTS, custom_objects, kind="regularizer")


def get(identifier):
    """A regularizer from a name (``"l1"``, ``"l2"``, ``"l1_l2"``), config dict, class or instance.

    Plain callables are accepted as they are; they must then provide `penalty` and `gradient` to be
    used in training.
    """
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        obj = named_instance(identifier, ALL_OBJECTS)
        if obj is None:
            raise ValueError(f"Unknown regularizer '{identifier}'. Valid names: ['l1', 'l2', 'l1_l2'].")
        return obj
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier {identifier!r}; pass 'l2', "
                     "regularizers.L2(1e-4) or similar.")
