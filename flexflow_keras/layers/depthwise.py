"""DepthwiseConv2D, SeparableConv2D (Keras 2: SeparableConvolution2D) and their 1-D forms DepthwiseConv1D
and SeparableConv1D (SeparableConvolution1D): per-channel convolutions, the separable ones followed by a
pointwise (1x1) convolution; channels_first through transposes, as Conv2D."""

from __future__ import annotations

from flexflow_keras import activations, backend, constraints, initializers, ops, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.conv1d import steps_back, steps_hint, steps_last
from flexflow_keras.layers.convolutional import (
    check_window_fits,
    from_channels_last,
    image_hint,
    to_channels_last,
)
from flexflow_keras.layers.core import apply_activation
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops.conv1d import conv1d
from flexflow_keras.ops.depthwise import depthwise_conv1d, depthwise_conv2d

_PARTS = ("initializer", "regularizer", "constraint")
_MODULES = {"initializer": initializers, "regularizer": regularizers, "constraint": constraints}


class _DepthwiseBase(Layer):
    """Arguments shared by the depthwise layers; subclasses list their weights' names in `_kernels`."""

    _float_math = True
    _kernels: tuple[str, ...] = ("depthwise",)
    _rank = 2

    def __init__(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                 use_bias, bias_initializer, bias_regularizer, activity_regularizer, bias_constraint, kernel_args,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        n = self._rank
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, n)
        self.strides = _args.int_tuple(self, "strides", strides, n)
        self.padding = _args.padding(self, padding)
        self.depth_multiplier = _args.positive_int(self, "depth_multiplier", depth_multiplier)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, n)
        if set(self.dilation_rate) != {1} and set(self.strides) != {1}:
            raise ValueError(f"{_args.who(self)}: strides={self.strides} with dilation_rate={self.dilation_rate} "
                             f"is not supported (as in Keras); use one of them.")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        for part, value in (("initializer", bias_initializer), ("regularizer", bias_regularizer),
                            ("constraint", bias_constraint)):
            setattr(self, f"bias_{part}", _MODULES[part].get(value))
        for name, (init, reg, con) in kernel_args.items():
            for part, value in zip(_PARTS, (init, reg, con), strict=True):
                setattr(self, f"{name}_{part}", _MODULES[part].get(value))
        self.input_spec = InputSpec(ndim=n + 2)
        self.bias = None

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def _add(self, name: str, prefix: str, shape):
        return self.add_weight(name=name, shape=shape, initializer=getattr(self, f"{prefix}_initializer"),
                               regularizer=getattr(self, f"{prefix}_regularizer"),
                               constraint=getattr(self, f"{prefix}_constraint"))

    def _channels(self, input_shape) -> int:
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        self.input_spec = InputSpec(ndim=self._rank + 2, axes={self._channel_axis(): channels})
        return channels

    def _input_hint(self, index, shape, spec):
        return image_hint(self, shape) if self._rank == 2 else steps_hint(shape)

    def _to_last(self, x):
        return to_channels_last(self, x) if self._rank == 2 else steps_last(self, x)

    def _from_last(self, y):
        return from_channels_last(self, y) if self._rank == 2 else steps_back(self, y)

    def _depthwise(self, x, kernel, bias):
        if self._rank == 1:
            return depthwise_conv1d(x, kernel, bias, self.strides[0], self.padding, self.dilation_rate[0])
        window = tuple((k - 1) * d + 1 for k, d in zip(self.kernel_size, self.dilation_rate, strict=True))
        check_window_fits(self, x, window, f"the {window} (dilated) kernel", "kernel")
        return depthwise_conv2d(x, kernel, bias, self.strides, self.padding, self.dilation_rate)

    def get_config(self):
        config = {**super().get_config(), "kernel_size": self.kernel_size, "strides": self.strides,
                  "padding": self.padding, "depth_multiplier": self.depth_multiplier,
                  "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                  "activation": activations.serialize(self.activation), "use_bias": self.use_bias}
        for name in self._kernels + ("bias",):
            for part in _PARTS:
                config[f"{name}_{part}"] = _MODULES[part].serialize(getattr(self, f"{name}_{part}"))
        return config


class DepthwiseConv2D(_DepthwiseBase):
    """Depthwise 2-D convolution: each input channel convolved with its own `depth_multiplier` filters;
    output channel ``c * depth_multiplier + m``.

    Args:
        kernel_size: int or (height, width).
        strides: int or (sy, sx).
        padding: ``"valid"`` or ``"same"``.
        depth_multiplier: filters per input channel.
        data_format: ``"channels_last"`` or ``"channels_first"``; global default if None.
        dilation_rate: int or pair (strides must then be 1, as in Keras).
        activation: name or function, applied after the bias.
        use_bias: whether to add a bias of ``channels * depth_multiplier``.
        depthwise_initializer, depthwise_regularizer, depthwise_constraint: for the kernel of shape
            ``(kh, kw, channels, depth_multiplier)`` (named ``kernel`` as in Keras 3).
        bias_initializer, bias_regularizer, bias_constraint: for the bias.

    Example:
        >>> DepthwiseConv2D(3, depth_multiplier=2)(np.zeros((1, 8, 8, 3), "float32")).shape
        (1, 6, 6, 6)
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, activity_regularizer, bias_constraint,
                         {"depthwise": (depthwise_initializer, depthwise_regularizer, depthwise_constraint)},
                         **kwargs)
        self.kernel = None

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self._add("kernel", "depthwise", self.kernel_size + (channels, self.depth_multiplier))
        if self.use_bias:
            self.bias = self._add("bias", "bias", (channels * self.depth_multiplier,))

    def call(self, inputs):
        y = self._depthwise(self._to_last(inputs), self.kernel, self.bias)
        return apply_activation(self._from_last(y), self.activation)


class SeparableConv2D(_DepthwiseBase):
    """Depthwise then pointwise 2-D convolution: a DepthwiseConv2D (no bias) followed by a 1x1 Conv2D to
    `filters` channels with the bias and activation.

    Args:
        filters: output channels of the pointwise convolution.
        kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate: of the depthwise step.
        activation: name or function (element-wise ones are fused into the pointwise op).
        use_bias: whether to add a bias of `filters`.
        depthwise_initializer, depthwise_regularizer, depthwise_constraint: for ``depthwise_kernel``
            ``(kh, kw, channels, depth_multiplier)``.
        pointwise_initializer, pointwise_regularizer, pointwise_constraint: for ``pointwise_kernel``
            ``(1, 1, channels * depth_multiplier, filters)``.
        bias_initializer, bias_regularizer, bias_constraint: for the bias.

    Example:
        >>> SeparableConv2D(8, 3, padding="same")(np.zeros((1, 8, 8, 3), "float32")).shape
        (1, 8, 8, 8)
    """

    _kernels = ("depthwise", "pointwise")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, activity_regularizer, bias_constraint,
                         {"depthwise": (depthwise_initializer, depthwise_regularizer, depthwise_constraint),
                          "pointwise": (pointwise_initializer, pointwise_regularizer, pointwise_constraint)},
                         **kwargs)
        self.filters = _args.positive_int(self, "filters", filters)
        self.depthwise_kernel = self.pointwise_kernel = None

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._add("depthwise_kernel", "depthwise",
                                          self.kernel_size + (channels, self.depth_multiplier))
        self.pointwise_kernel = self._add("pointwise_kernel", "pointwise",
                                          (1,) * self._rank + (channels * self.depth_multiplier, self.filters))
        if self.use_bias:
            self.bias = self._add("bias", "bias", (self.filters,))

    def call(self, inputs):
        x = self._depthwise(self._to_last(inputs), self.depthwise_kernel, None)
        fused = activations.fusable_name(self.activation)
        pointwise = ops.conv2d if self._rank == 2 else conv1d
        y = self._from_last(pointwise(x, self.pointwise_kernel, self.bias, activation=fused))
        return y if fused is not None else apply_activation(y, self.activation)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters}


class DepthwiseConv1D(DepthwiseConv2D):
    """Depthwise 1-D convolution over steps: each channel convolved with its own `depth_multiplier`
    filters; output channel ``c * depth_multiplier + m``.

    Args:
        kernel_size, strides, dilation_rate: ints (or 1-tuples).
        padding, depth_multiplier, activation, use_bias, depthwise_*, bias_*: as for DepthwiseConv2D; the
            kernel has shape ``(kernel_size, channels, depth_multiplier)``.
        data_format: ``"channels_last"`` (batch, steps, channels) or ``"channels_first"``.

    Example:
        >>> DepthwiseConv1D(3, depth_multiplier=2)(np.zeros((1, 9, 3), "float32")).shape
        (1, 7, 6)
    """

    _rank = 1

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=1, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, **kwargs)


class SeparableConv1D(SeparableConv2D):
    """Depthwise then pointwise 1-D convolution: a DepthwiseConv1D (no bias) followed by a kernel-1 Conv1D
    to `filters` channels with the bias and activation.

    Args:
        filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier, activation,
        use_bias, depthwise_*, pointwise_*, bias_*: as for SeparableConv2D in 1-D (ints or 1-tuples);
            ``pointwise_kernel`` has shape ``(1, channels * depth_multiplier, filters)``.

    Example:
        >>> SeparableConv1D(8, 3, padding="same")(np.zeros((1, 9, 3), "float32")).shape
        (1, 9, 8)
    """

    _rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier,
                         **kwargs)


SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
