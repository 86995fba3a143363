"""Layers over volumes (batch, depth, height, width, channels): Conv3D (Convolution3D), Conv3DTranspose
(Convolution3DTranspose), MaxPooling3D and
AveragePooling3D (MaxPool3D, AvgPool3D), GlobalAveragePooling3D and GlobalMaxPooling3D (GlobalAvgPool3D,
GlobalMaxPool3D), UpSampling3D, ZeroPadding3D and Cropping3D. channels_first runs through transposes, as
the 2-D layers do. The convolutions and the poolings are ops of `flexflow_keras.ops.conv3d`; the others compose
repeat, pad, slicing and reductions, as Keras 3 does.
"""

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
from flexflow_keras.ops.conv3d import conv3d, conv3d_transpose, pool3d

_TO_LAST = (0, 2, 3, 4, 1)
_TO_FIRST = (0, 4, 1, 2, 3)
_DIMS = ("depth", "height", "width")


def volume_hint(layer, shape) -> str:
    """The fix for a 4-D batch given to a 3-D layer: add the channels dim."""
    if len(shape) == 4:
        d, h, w = shape[1:4]
        if getattr(layer, "data_format", "channels_last") == "channels_first":
            return f" Add a channels dim, e.g. Reshape((1, {d}, {h}, {w})) before it, or x[:, None] on the data?"
        return f" Add a channels dim, e.g. Reshape(({d}, {h}, {w}, 1)) before it, or x[..., None] on the data?"
    return ""


class _Volume(Layer):
    """A layer over 5-D inputs with a data_format, computing on the channels-last view."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.input_spec = InputSpec(ndim=5)

    def _input_hint(self, index, shape, spec):
        return volume_hint(self, shape)

    def _last(self, x):
        return ops.transpose(x, _TO_LAST) if self.data_format == "channels_first" else x

    def _back(self, y):
        return ops.transpose(y, _TO_FIRST) if self.data_format == "channels_first" else y

    def _check_window(self, x, window, described: str, smaller: str) -> None:
        if self.padding != "valid":
            return
        for size, k, name in zip(x.shape[1:4], window, _DIMS, strict=True):
            if size is not None and size < k:
                raise ShapeError(f"{_args.who(self)}: {described} is larger than the input's {name} {size} "
                                 f"(channels-last shape {tuple(x.shape)}) with padding='valid'. Use "
                                 f"padding='same' or a smaller {smaller}.")

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Conv3D(_Volume):
    """3-D convolution: ``activation(conv3d(inputs, kernel) + bias)``.

    Args:
        filters: number of output channels.
        kernel_size: int or (kd, kh, kw).
        strides: int or 3 ints.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` (batch, depth, height, width, channels) or ``"channels_first"``.
        dilation_rate: int or 3 ints (with strides 1, as in Keras).
        groups: only 1 is supported.
        activation: name or function; element-wise ones are fused into the conv op.
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, kernel_constraint,
        bias_constraint: as for Dense. The kernel has shape ``(kd, kh, kw, in_channels, filters)`` as in Keras.

    Example:
        >>> Conv3D(8, 3, padding="same")(np.zeros((2, 4, 6, 6, 1), "float32")).shape
        (2, 4, 6, 6, 8)
    """

    _float_math = True

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(data_format, activity_regularizer=activity_regularizer, **kwargs)
        self.filters = _args.positive_int(self, "filters", filters)
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, 3)
        self.strides = _args.int_tuple(self, "strides", strides, 3)
        self.padding = _args.padding(self, padding)
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, 3)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{_args.who(self)}: strides={self.strides} above 1 cannot be combined with "
                             f"dilation_rate={self.dilation_rate} above 1 (as in Keras); set one of them to 1.")
        if groups != 1:
            raise ValueError(f"{_args.who(self)}: groups={groups!r} is not supported; only 1.")
        self.groups = 1
        set_kernel_bias_args(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                             bias_regularizer, kernel_constraint, bias_constraint)
        self.kernel = self.bias = None

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape):
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        add_kernel_bias(self, self.kernel_size + (channels, self.filters), self.filters)
        self.input_spec = InputSpec(ndim=5, axes={self._channel_axis(): channels})

    def convolution_op(self, inputs, kernel):
        """The convolution alone (no bias, no activation), as Keras 3's (see layers/conv_op.py)."""
        return conv_op.convolution_op(self, inputs, kernel)

    def call(self, inputs):
        if conv_op.overridden(self, Conv3D):
            return conv_op.call_through_hook(self, inputs)
        x = self._last(inputs)
        window = tuple((k - 1) * d + 1 for k, d in zip(self.kernel_size, self.dilation_rate, strict=True))
        self._check_window(x, window, f"the {self.kernel_size} kernel", "kernel")
        fused = activations.fusable_name(self.activation)
        y = self._back(conv3d(x, self.kernel, self.bias, strides=self.strides, padding=self.padding,
                              dilation_rate=self.dilation_rate, activation=fused))
        return y if fused is not None else apply_activation(y, self.activation)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "dilation_rate": self.dilation_rate,
                "groups": self.groups, **kernel_bias_config(self)}


class Conv3DTranspose(_Volume):
    """Transposed 3-D convolution: ``activation(conv3d_transpose(inputs, kernel) + bias)``.

    With ``padding="same"`` the output is ``strides`` times the input; with ``"valid"`` it is
    ``(size - 1) * stride + kernel + max(stride - kernel, 0)``; ``output_padding`` picks another of the sizes
    the matching convolution maps back to the input (as Keras).

    Args:
        filters: number of output channels.
        kernel_size: int or (kd, kh, kw).
        strides: int or 3 ints.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        output_padding: None, an int or 3 ints, each smaller than its stride.
        dilation_rate: only 1 is supported.
        activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as for Conv3D. The kernel has shape ``(kd, kh, kw, filters,
        in_channels)`` as in Keras.

    Example:
        >>> Conv3DTranspose(4, 3, strides=2, padding="same")(np.zeros((1, 2, 4, 4, 8), "float32")).shape
        (1, 4, 8, 8, 4)
    """

    _float_math = True

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 output_padding=None, dilation_rate=(1, 1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(data_format, activity_regularizer=activity_regularizer, **kwargs)
        self.filters = _args.positive_int(self, "filters", filters)
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, 3)
        self.strides = _args.int_tuple(self, "strides", strides, 3)
        self.padding = _args.padding(self, padding)
        self.output_padding = (None if output_padding is None else
                               _args.int_tuple(self, "output_padding", output_padding, 3, allow_zero=True))
        if self.output_padding is not None and any(p >= s for p, s in zip(self.output_padding, self.strides,
                                                                          strict=True)):
            raise ValueError(f"{_args.who(self)}: each output_padding must be smaller than its stride, received "
                             f"output_padding={output_padding!r} with strides={self.strides}.")
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, 3)
        if set(self.dilation_rate) != {1}:
            raise ValueError(f"{_args.who(self)}: dilation_rate={dilation_rate!r} is not supported; only 1.")
        set_kernel_bias_args(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                             bias_regularizer, kernel_constraint, bias_constraint)
        self.kernel = self.bias = None

    def build(self, input_shape):
        axis = 1 if self.data_format == "channels_first" else -1
        channels = input_shape[axis]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        add_kernel_bias(self, self.kernel_size + (self.filters, channels), self.filters)
        self.input_spec = InputSpec(ndim=5, axes={axis: channels})

    def call(self, inputs):
        y = conv3d_transpose(self._last(inputs), self.kernel, self.bias, strides=self.strides, padding=self.padding,
                             output_padding=self.output_padding)
        return apply_activation(self._back(y), self.activation)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "output_padding": self.output_padding,
                "dilation_rate": self.dilation_rate, **kernel_bias_config(self)}


class _Pooling3D(_Volume):
    _float_math = True
    _mode = "max"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.pool_size = _args.int_tuple(self, "pool_size", pool_size, 3)
        self.strides = self.pool_size if strides is None else _args.int_tuple(self, "strides", strides, 3)
        self.padding = _args.padding(self, padding)

    def call(self, inputs):
        x = self._last(inputs)
        self._check_window(x, self.pool_size, f"pool_size {self.pool_size}", "pool_size")
        return self._back(pool3d(x, self.pool_size, self.strides, self.padding, self._mode))

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding}


class MaxPooling3D(_Pooling3D):
    """Maximum over `pool_size` windows of depth, height and width.

    Args:
        pool_size: int or (pd, ph, pw).
        strides: int or 3 ints; `pool_size` when None.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    _mode = "max"


class AveragePooling3D(_Pooling3D):
    """Mean over `pool_size` windows (with ``"same"`` padding, over the part of each window inside the input).

    Args:
        pool_size: int or (pd, ph, pw).
        strides: int or 3 ints; `pool_size` when None.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    _mode = "avg"

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, **kwargs):  # no default, as Keras 3
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling3D(_Volume):
    _float_math = True
    _mode = "avg"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format, **kwargs)
        self.keepdims = bool(keepdims)

    def call(self, inputs):
        axes = (2, 3, 4) if self.data_format == "channels_first" else (1, 2, 3)
        reduce = ops.mean if self._mode == "avg" else ops.max
        return reduce(inputs, axis=axes, keepdims=self.keepdims)

    def get_config(self):
        return {**super().get_config(), "keepdims": self.keepdims}


class GlobalAveragePooling3D(_GlobalPooling3D):
    """Mean over depth, height and width: ``(N, D, H, W, C) -> (N, C)``.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.
        keepdims: keep the spatial dims as size 1.
    """

    _mode = "avg"


class GlobalMaxPooling3D(_GlobalPooling3D):
    """Maximum over depth, height and width: ``(N, D, H, W, C) -> (N, C)``.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.
        keepdims: keep the spatial dims as size 1.
    """

    _mode = "max"


def _triple_pairs(layer, arg: str, value) -> tuple[tuple[int, int], ...]:
    """Keras' 3-D padding/cropping argument: an int, 3 ints (symmetric per dim) or 3 pairs."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * 3
    try:
        items = tuple(value)
    except TypeError:
        items = ()
    if len(items) != 3:
        raise ValueError(f"{_args.who(layer)} expects {arg} to be an int, a tuple of 3 ints or a tuple of 3 "
                         f"tuples of 2 ints, received {arg}={value!r}.")
    return tuple(_args.int_tuple(layer, arg, v, 2, allow_zero=True) for v in items)


class UpSampling3D(_Volume):
    """Repeat each voxel along depth, height and width (nearest neighbour).

    Args:
        size: int or (fd, fh, fw).
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = _args.int_tuple(self, "size", size, 3)

    def call(self, inputs):
        first = 2 if self.data_format == "channels_first" else 1
        y = inputs
        for d, f in enumerate(self.size):
            if f != 1:
                y = ops.repeat(y, f, axis=first + d)
        return y

    def get_config(self):
        return {**super().get_config(), "size": self.size}


class ZeroPadding3D(_Volume):
    """Add zeros around each volume.

    Args:
        padding: int, (pd, ph, pw) or ((front, back), (top, bottom), (left, right)).
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _triple_pairs(self, "padding", padding)

    def call(self, inputs):
        pads = [(0, 0), *self.padding, (0, 0)] if self.data_format == "channels_last" else \
            [(0, 0), (0, 0), *self.padding]
        return ops.pad(inputs, pads)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding}


class Cropping3D(_Volume):
    """Remove voxels at the borders of each volume.

    Args:
        cropping: int, (cd, ch, cw) or ((front, back), (top, bottom), (left, right)).
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _triple_pairs(self, "cropping", cropping)

    def call(self, inputs):
        first = 2 if self.data_format == "channels_first" else 1
        index = [slice(None)] * 5
        for d, (before, after) in enumerate(self.cropping):
            size = inputs.shape[first + d]
            if size is not None and before + after >= size:
                raise ShapeError(f"{_args.who(self)}: cropping {self.cropping} leaves nothing of the input's "
                                 f"{_DIMS[d]} {size} (input shape {tuple(inputs.shape)}); crop less.")
            index[first + d] = slice(before, None if after == 0 else -after)
        return inputs[tuple(index)]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


Convolution3D = Conv3D
Convolution3DTranspose = Conv3DTranspose
MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D
