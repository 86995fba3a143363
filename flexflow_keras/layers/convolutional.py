"""Conv2D: 2-D convolution over images (channels_last by default; channels_first through transposes)."""

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
from flexflow_keras.ops.conv import check_strides_with_dilation

_TO_LAST = (0, 2, 3, 1)
_TO_FIRST = (0, 3, 1, 2)


def image_hint(layer, shape) -> str:
    """The fix for a 3-D batch given to a 2-D image layer: add the channels dim."""
    if len(shape) == 3:
        h, w = shape[1], shape[2]
        if layer.data_format == "channels_first":
            return f" Add a channels dim, e.g. Reshape((1, {h}, {w})) before it, or x[:, None] on the data?"
        return f" Add a channels dim, e.g. Reshape(({h}, {w}, 1)) before it, or x[..., None] on the data?"
    return ""


def to_channels_last(layer, x):
    """`x` in NHWC: transposed from NCHW when `layer.data_format` is ``"channels_first"``."""
    return ops.transpose(x, _TO_LAST) if layer.data_format == "channels_first" else x


def from_channels_last(layer, y):
    """The NHWC `y` back in `layer.data_format` (the inverse of `to_channels_last`)."""
    return ops.transpose(y, _TO_FIRST) if layer.data_format == "channels_first" else y


def check_window_fits(layer, x, window: tuple, described: str, smaller: str) -> None:
    """Raise if the `window` (kh, kw) of a ``padding='valid'`` layer is larger than the spatial dims of the
    channels-last `x`; `described` names the window in the message, `smaller` the argument to shrink."""
    h, w = x.shape[1], x.shape[2]
    if layer.padding == "valid" and ((h is not None and h < window[0]) or (w is not None and w < window[1])):
        raise ShapeError(f"{_args.who(layer)}: {described} is larger than the {h}x{w} input with "
                         f"padding='valid'. Use padding='same' or a smaller {smaller}.")


class Conv2D(Layer):
    """2-D convolution: ``activation(conv2d(inputs, kernel) + bias)``.

    Args:
        filters: number of output channels.
        kernel_size: int or (height, width).
        strides: int or (sy, sx).
        padding: ``"valid"`` or ``"same"`` (TensorFlow's placement of the extra row/column).
        data_format: ``"channels_last"`` (NHWC) or ``"channels_first"`` (NCHW); global default if None.
        dilation_rate: int or (dy, dx): an atrous convolution whose kernel taps are dilation_rate pixels
            apart (a 3x3 kernel at rate 6 spans 13x13 pixels with 9 weights); above 1, strides must be 1.
        groups: 1, or the input channels when filters equals them too (one group per channel: a depthwise
            convolution with Keras' grouped kernel shape (kh, kw, 1, filters), as ConvNeXt uses).
        activation: name or function; element-wise ones are fused into the conv op.
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as for Dense. The kernel has shape
        ``(kh, kw, in_channels, filters)`` as in Keras.
    """

    _float_math = True

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.filters = _args.positive_int(self, "filters", filters)
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, 2)
        self.strides = _args.int_tuple(self, "strides", strides, 2)
        self.padding = _args.padding(self, padding)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, 2)
        check_strides_with_dilation(_args.who(self), self.strides, self.dilation_rate)
        self.groups = _args.positive_int(self, "groups", groups)
        if self.filters % self.groups:
            raise ValueError(f"{_args.who(self)}: filters ({self.filters}) must be a multiple of groups "
                             f"({self.groups}).")
        set_kernel_bias_args(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                             bias_regularizer, kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(ndim=4)
        self.kernel = self.bias = None

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape):
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        if self.groups != 1 and not channels == self.groups == self.filters:
            raise ValueError(f"{_args.who(self)}: groups={self.groups} is supported when it equals both the input "
                             f"channels and filters (one group per channel, a depthwise convolution, as in "
                             f"ConvNeXt); received {channels} input channels and filters={self.filters}. Use "
                             "groups=1, or DepthwiseConv2D followed by a 1x1 Conv2D.")
        add_kernel_bias(self, self.kernel_size + (channels // self.groups, self.filters), self.filters)
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis(): channels})

    def _input_hint(self, index, shape, spec):
        return image_hint(self, shape)

    def convolution_op(self, inputs, kernel):
        """The convolution alone (no bias, no activation), as Keras 3's: a subclass may override it (see
        layers/conv_op.py) or call it on a changed kernel."""
        return conv_op.convolution_op(self, inputs, kernel)

    def call(self, inputs):
        if conv_op.overridden(self, Conv2D):
            return conv_op.call_through_hook(self, inputs)
        x = to_channels_last(self, inputs)
        if self.dilation_rate == (1, 1):
            check_window_fits(self, x, self.kernel_size, f"the {self.kernel_size} kernel", "kernel")
        else:
            window = tuple((k - 1) * d + 1 for k, d in zip(self.kernel_size, self.dilation_rate, strict=True))
            check_window_fits(self, x, window, f"the {self.kernel_size} kernel dilated by {self.dilation_rate} "
                              f"(spanning {window})", "kernel or dilation_rate")
        if self.groups != 1:  # one group per channel (build): the depthwise op reads the grouped kernel
            from flexflow_keras.ops.depthwise import depthwise_conv2d

            y = depthwise_conv2d(x, self.kernel, self.bias, self.strides, self.padding, self.dilation_rate,
                                 grouped=True)
            return apply_activation(from_channels_last(self, y), self.activation)
        fused = activations.fusable_name(self.activation)
        y = ops.conv2d(x, self.kernel, self.bias, strides=self.strides, padding=self.padding,
                       activation=fused, dilation_rate=self.dilation_rate)
        y = from_channels_last(self, y)
        return y if fused is not None else apply_activation(y, self.activation)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups, **kernel_bias_config(self)}


Convolution2D = Conv2D
