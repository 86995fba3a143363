"""`keras.constraints`: projections applied to a weight's value after each optimizer update.

A constraint is a callable ``w -> projected w`` on NumPy arrays (the training loop calls it on the host
value or inside the update task).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.utils.serialization import Configurable, deserialize_instance, serialize_keras_object


def _eps() -> float:
    from flexflow_keras import backend

    return backend.epsilon()


class Constraint(Configurable):
    """Base class: subclasses implement ``__call__(w)`` and `get_config`."""

    def __call__(self, w) -> np.ndarray:
        return w


class MaxNorm(Constraint):
    """Rescale each slice along `axis` whose L2 norm exceeds `max_value`.

    Args:
        max_value: the largest allowed norm.
        axis: the axis (or axes) the norm is taken over; 0 for a Dense kernel's input dim, ``[0, 1, 2]``
            for a channels_last Conv2D kernel.
    """

    def __init__(self, max_value=2.0, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = np.asarray(w)
        axis = tuple(self.axis) if isinstance(self.axis, (list, tuple)) else self.axis
        norms = np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))
        desired = np.clip(norms, 0, self.max_value)
        return (w * (desired / (_eps() + norms))).astype(w.dtype)

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Set negative entries to zero."""

    def __call__(self, w):
        w = np.asarray(w)
        return (w * (w >= 0)).astype(w.dtype)


class UnitNorm(Constraint):
    """Divide each slice along `axis` by its L2 norm.

    Args:
        axis: the axis (or axes) the norm is taken over.
    """

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = np.asarray(w)
        axis = tuple(self.axis) if isinstance(self.axis, (list, tuple)) else self.axis
        norms = np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))
        return (w / (_eps() + norms)).astype(w.dtype)

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move each slice's norm towards [min_value, max_value] at `rate` (1.0: all the way).

    Args:
        min_value: smallest allowed norm.
        max_value: largest allowed norm.
        rate: fraction of the way to move (0 to 1).
        axis: the axis (or axes) the norm is taken over.
    """

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = np.asarray(w)
        axis = tuple(self.axis) if isinstance(self.axis, (list, tuple)) else self.axis
        norms = np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))
        desired = self.rate * np.clip(norms, self.min_value, self.max_value) + (1 - self.rate) * norms
        return (w * (desired / (_eps() + norms))).astype(w.dtype)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
maxnorm, nonneg, unitnorm = MaxNorm, NonNeg, UnitNorm  # Keras 2's spellings (from keras.constraints import maxnorm)

ALL_OBJECTS = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm,
               "max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm,
               "maxnorm": MaxNorm, "nonneg": NonNeg, "unitnorm": UnitNorm,
               "Constraint": Constraint}


def serialize(constraint):
    """``{"class_name", "config"}`` of a constraint."""
    return serialize_keras_object(constraint)


def deserialize(config, custom_objects=None):
    """A constraint from `serialize`'s output."""
    return deserialize_instance(config, ALL_OBJECTS, custom_objects, kind="constraint")


def get(identifier):
    """A constraint from a name (``"max_norm"``, ``"non_neg"``, ...), config, class, instance or function."""
    if identifier is None or isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, str):
        if identifier not in ALL_OBJECTS:
            raise ValueError(f"Unknown constraint '{identifier}'. Valid names: "
                             f"{sorted(k for k in ALL_OBJECTS if k[0].islower())}.")
        return ALL_OBJECTS[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier {identifier!r}.")
