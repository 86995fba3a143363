"""Conv2DTranspose (Keras 2: Deconvolution2D, Deconv2D, Convolution2DTranspose) and Conv1DTranspose: the
transposed convolutions that upsample feature maps, channels_last by default, channels_first through
transposes."""

from __future__ import annotations

from flexflow_keras import activations, backend
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.conv1d import steps_back, steps_hint, steps_last
from flexflow_keras.layers.convolutional import from_channels_last, image_hint, to_channels_last
from flexflow_keras.layers.core import (
    add_kernel_bias,
    apply_activation,
    kernel_bias_config,
    set_kernel_bias_args,
)
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops.conv_transpose import conv1d_transpose, conv2d_transpose


class Conv2DTranspose(Layer):
    """Transposed 2-D convolution: ``activation(conv2d_transpose(inputs, kernel) + bias)``.

    With ``padding="same"`` the output is ``strides`` times the input; with ``"valid"`` it is
    ``(size - 1) * stride + kernel + max(stride - kernel, 0)``; ``output_padding`` picks another of the
    sizes the matching convolution maps back to the input (as Keras).

    Args:
        filters: number of output channels.
        kernel_size: int or (height, width).
        strides: int or (sy, sx).
        padding: ``"valid"`` or ``"same"``.
        output_padding: None, an int or (ph, pw), each smaller than its stride.
        data_format: ``"channels_last"`` (NHWC) or ``"channels_first"`` (NCHW); global default if None.
        dilation_rate: only 1 is supported.
        activation: name or function, applied after the bias (element-wise ones fused into the op).
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as for Dense. The kernel has shape
        ``(kh, kw, filters, in_channels)`` as in Keras.

    Example:
        >>> Conv2DTranspose(4, 3, strides=2, padding="same")(np.zeros((1, 7, 7, 8), "float32")).shape
        (1, 14, 14, 4)
    """

    _float_math = True
    _rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.filters = _args.positive_int(self, "filters", filters)
        n = self._rank
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, n)
        self.strides = _args.int_tuple(self, "strides", strides, n)
        self.padding = _args.padding(self, padding)
        self.output_padding = (None if output_padding is None else
                               _args.int_tuple(self, "output_padding", output_padding, n, allow_zero=True))
        if self.output_padding is not None and any(p >= s for p, s in zip(self.output_padding, self.strides, strict=True)):
            raise ValueError(f"{_args.who(self)}: each output_padding must be smaller than its stride, received "
                             f"output_padding={output_padding!r} with strides={self.strides}.")
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, n)
        if set(self.dilation_rate) != {1}:
            raise ValueError(f"{_args.who(self)}: dilation_rate={dilation_rate!r} is not supported; only 1.")
        set_kernel_bias_args(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                             bias_regularizer, kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(ndim=n + 2)
        self.kernel = self.bias = None

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape):
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        add_kernel_bias(self, self.kernel_size + (self.filters, channels), self.filters)
        self.input_spec = InputSpec(ndim=self._rank + 2, axes={self._channel_axis(): channels})

    def _input_hint(self, index, shape, spec):
        return image_hint(self, shape)

    def call(self, inputs):
        fused = activations.fusable_name(self.activation)
        y = conv2d_transpose(to_channels_last(self, inputs), self.kernel, self.bias, strides=self.strides,
                             padding=self.padding, output_padding=self.output_padding, activation=fused)
        y = from_channels_last(self, y)
        return y if fused is not None else apply_activation(y, self.activation)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "output_padding": self.output_padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate, **kernel_bias_config(self)}


class Conv1DTranspose(Conv2DTranspose):
    """Transposed 1-D convolution over steps: ``activation(conv1d_transpose(inputs, kernel) + bias)``.

    Args:
        filters: number of output channels.
        kernel_size: int (or a 1-tuple): taps.
        strides: int (or a 1-tuple).
        padding: ``"valid"`` or ``"same"``.
        output_padding: None or an int smaller than the stride.
        data_format: ``"channels_last"`` (batch, steps, channels) or ``"channels_first"``.
        dilation_rate: only 1 is supported.
        activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as for Conv2DTranspose. The kernel has shape
        ``(kernel_size, filters, in_channels)`` as in Keras.

    Example:
        >>> Conv1DTranspose(4, 3, strides=2)(np.zeros((2, 5, 8), "float32")).shape
        (2, 11, 4)
    """

    _rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format, dilation_rate,
                         **kwargs)

    def _input_hint(self, index, shape, spec):
        return steps_hint(shape)

    def call(self, inputs):
        fused = activations.fusable_name(self.activation)
        y = conv1d_transpose(steps_last(self, inputs), self.kernel, self.bias, strides=self.strides[0],
                             padding=self.padding, activation=fused,
                             output_padding=None if self.output_padding is None else self.output_padding[0])
        y = steps_back(self, y)
        return y if fused is not None else apply_activation(y, self.activation)


Convolution2DTranspose = Deconvolution2D = Deconv2D = Conv2DTranspose
