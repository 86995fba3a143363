"""Activation layers with parameters: ReLU, LeakyReLU, ELU, Softmax."""

from __future__ import annotations

from flexflow_keras import activations, ops
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer


def _non_negative(layer, arg: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = None
    if v is None or isinstance(value, bool) or v < 0:
        raise ValueError(f"{_args.who(layer)} expects {arg} to be a non-negative number, received "
                         f"{arg}={value!r}.")
    return v


class ReLU(Layer):
    """``max(x, 0)`` with an optional cap, leak below `threshold` and threshold.

    Args:
        max_value: the largest output (None: no cap).
        negative_slope: slope below `threshold`.
        threshold: values below it are leaked (or zeroed).
    """

    _float_math = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = _non_negative(self, "max_value", max_value, allow_none=True)
        self.negative_slope = _non_negative(self, "negative_slope", negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value, "negative_slope": self.negative_slope,
                "threshold": self.threshold}


class LeakyReLU(Layer):
    """``x`` for x >= 0 and ``negative_slope * x`` below (Keras 3 default slope 0.3; `alpha=` accepted).

    Args:
        negative_slope: the slope for negative inputs.
    """

    _float_math = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:  # Keras 2 spelling
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _non_negative(self, "negative_slope", negative_slope)

    def call(self, inputs):
        return ops.activation(inputs, "leaky_relu", negative_slope=self.negative_slope)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(Layer):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha: the scale of the negative part.
    """

    _float_math = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(Layer):
    """Softmax along `axis`.

    Args:
        axis: the axis to normalise (default -1).
    """

    _float_math = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"{_args.who(self)} expects an integer axis, received axis={axis!r}.")
        self.axis = axis

    def call(self, inputs, mask=None):
        return ops.softmax(inputs, axis=self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
