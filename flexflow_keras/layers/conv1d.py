"""1-D window layers over (batch, steps, channels): Conv1D (Convolution1D), MaxPooling1D and
AveragePooling1D (MaxPool1D, AvgPool1D); channels_first through transposes, as Conv2D."""

from __future__ import annotations

from flexflow_keras import activations, backend, ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args, conv_op
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.core import (
    add_kernel_bias,
    apply_activation,
    kernel_bias_config,
    set_kernel_bias_args,
)
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops.conv1d import conv1d, pool1d

_SWAP = (0, 2, 1)


def steps_hint(shape) -> str:
    """The fix for a 2-D batch given to a 1-D window layer: add the channels dim."""
    if len(shape) == 2:
        return f" Add a channels dim, e.g. Reshape(({shape[1]}, 1)) before it, or x[..., None] on the data?"
    return ""


def steps_last(layer, x):
    """`x` as (batch, steps, channels): transposed from (batch, channels, steps) for channels_first."""
    return ops.transpose(x, _SWAP) if layer.data_format == "channels_first" else x


def steps_back(layer, y):
    """The inverse of `steps_last`."""
    return ops.transpose(y, _SWAP) if layer.data_format == "channels_first" else y


class Conv1D(Layer):
    """1-D convolution over steps: ``activation(conv1d(inputs, kernel) + bias)``.

    Args:
        filters: number of output channels.
        kernel_size: int (or a 1-tuple): taps.
        strides: int (or a 1-tuple).
        padding: ``"valid"``, ``"same"`` or ``"causal"`` (output t sees inputs up to t).
        data_format: ``"channels_last"`` (batch, steps, channels) or ``"channels_first"``.
        dilation_rate: int (or a 1-tuple).
        groups: only 1 is supported.
        activation: name or function; element-wise ones are fused into the conv op.
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as for Dense. The kernel has shape
        ``(kernel_size, in_channels, filters)`` as in Keras.

    Example:
        >>> Conv1D(8, 3, padding="causal")(np.zeros((2, 10, 4), "float32")).shape
        (2, 10, 8)
    """

    _float_math = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.filters = _args.positive_int(self, "filters", filters)
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, 1)
        self.strides = _args.int_tuple(self, "strides", strides, 1)
        p = padding.lower() if isinstance(padding, str) else padding
        if p not in ("valid", "same", "causal"):
            raise ValueError(f"{_args.who(self)} expects padding 'valid', 'same' or 'causal', received "
                             f"padding={padding!r}.")
        self.padding = p
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, 1)
        if groups != 1:
            raise ValueError(f"{_args.who(self)}: groups={groups!r} is not supported; only 1.")
        self.groups = 1
        set_kernel_bias_args(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                             bias_regularizer, kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(ndim=3)
        self.kernel = self.bias = None

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape):
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        add_kernel_bias(self, self.kernel_size + (channels, self.filters), self.filters)
        self.input_spec = InputSpec(ndim=3, axes={self._channel_axis(): channels})

    def _input_hint(self, index, shape, spec):
        return steps_hint(shape)

    def convolution_op(self, inputs, kernel):
        """The convolution alone (no bias, no activation), as Keras 3's; Conv1D's own call() does not read
        it, as Keras 3's does not (see layers/conv_op.py)."""
        return conv_op.convolution_op(self, inputs, kernel)

    def call(self, inputs):
        fused = activations.fusable_name(self.activation)
        y = conv1d(steps_last(self, inputs), self.kernel, self.bias, strides=self.strides[0], padding=self.padding,
                   dilation_rate=self.dilation_rate[0], activation=fused)
        y = steps_back(self, y)
        return y if fused is not None else apply_activation(y, self.activation)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups, **kernel_bias_config(self)}


class _Pooling1D(Layer):
    _float_math = True
    _mode = "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _args.int_tuple(self, "pool_size", pool_size, 1)
        self.strides = self.pool_size if strides is None else _args.int_tuple(self, "strides", strides, 1)
        self.padding = _args.padding(self, padding)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.input_spec = InputSpec(ndim=3)

    def _input_hint(self, index, shape, spec):
        return steps_hint(shape)

    def call(self, inputs):
        y = pool1d(steps_last(self, inputs), self.pool_size[0], self.strides[0], self.padding, self._mode)
        return steps_back(self, y)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(_Pooling1D):
    """Maximum over `pool_size` steps.

    Args:
        pool_size: int (or a 1-tuple).
        strides: int (or a 1-tuple); `pool_size` when None.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    _mode = "max"


class AveragePooling1D(_Pooling1D):
    """Mean over `pool_size` steps (with ``"same"`` padding, over the valid part of each window).

    Args:
        pool_size: int (or a 1-tuple).
        strides: int (or a 1-tuple); `pool_size` when None.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    _mode = "avg"


Convolution1D = Conv1D
MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D
