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

    supports_masking = True  # passes the input's mask on (Keras 3)

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

    supports_masking = True  # passes the input's mask on (Keras 3)

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

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(Layer):
    """Softmax along `axis`; with a mask (broadcastable to the inputs) masked positions output zero and
    do not take part, as in Keras 3.

    Args:
        axis: the axis to normalise (default -1).
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"{_args.who(self)} expects an integer axis, received axis={axis!r}.")
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.softmax(inputs, axis=self.axis)
        # Keras 3: masked positions (mask False or <= 0.5) get a large negative logit, then output zero
        ms, xs = tuple(mask.shape), tuple(inputs.shape)
        if len(ms) > len(xs) or any(m is not None and i is not None and m not in (1, i)
                                    for m, i in zip(ms[::-1], xs[::-1], strict=False)):
            raise ValueError(f"{_args.who(self)} expects a mask broadcastable to the inputs' shape {xs}, received a "
                             f"mask of shape {ms}.")
        if str(mask.dtype) != "bool":
            mask = ops.greater(mask, 0.5)
        big = -3e4 if str(inputs.dtype) == "float16" else -1e9
        y = ops.softmax(ops.where(mask, inputs, big), axis=self.axis)
        return ops.where(mask, y, 0.0)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
