"""Keras 3's convolution functions of `keras.ops` (`conv`, `conv_transpose`, `depthwise_conv`,
`separable_conv`) on the convolution ops of this package: 1-D or 2-D by the input's rank, channels last
(``data_format="channels_first"`` inputs are transposed in and out), Keras' argument names and kernel
layouts. Symbolic on KerasTensors, eager on arrays, as the ops they call.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError


def _rank(inputs, who: str) -> int:
    n = len(inputs.shape) - 2
    if n not in (1, 2):
        raise ArgumentError(f"keras.ops.{who} takes inputs of rank 3 (1-D) or 4 (2-D), received shape "
                            f"{tuple(inputs.shape)}; 3-D convolutions are not implemented in flexflow_keras.")
    return n


def _pair(v, n: int, who: str, what: str):
    t = (int(v),) * n if np.ndim(v) == 0 else tuple(int(s) for s in v)
    if len(t) != n:
        raise ArgumentError(f"keras.ops.{who}: {what} must be an int or {n} ints for a {n}-D convolution, received "
                            f"{v!r}.")
    return t if n == 2 else t[0]


def _channels_last(inputs, data_format, n: int):
    from flexflow_keras import ops

    if data_format in (None, "channels_last"):
        return inputs, None
    if data_format != "channels_first":
        raise ArgumentError(f"keras.ops convolutions: data_format must be 'channels_last' or 'channels_first', "
                            f"received {data_format!r}.")
    to_last = (0,) + tuple(range(2, n + 2)) + (1,)
    back = (0, n + 1) + tuple(range(1, n + 1))
    return ops.transpose(inputs, to_last), back


def _back(y, back):
    from flexflow_keras import ops

    return y if back is None else ops.transpose(y, back)


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Keras 3's ``keras.ops.conv``: kernel (spatial..., in_channels, out_channels)."""
    from flexflow_keras.ops.conv import conv2d
    from flexflow_keras.ops.conv1d import conv1d

    n = _rank(inputs, "conv")
    x, back = _channels_last(inputs, data_format, n)
    fn = conv2d if n == 2 else conv1d
    y = fn(x, kernel, strides=_pair(strides, n, "conv", "strides"), padding=padding,
           dilation_rate=_pair(dilation_rate, n, "conv", "dilation_rate"))
    return _back(y, back)


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1):
    """Keras 3's ``keras.ops.conv_transpose``: kernel (spatial..., out_channels, in_channels)."""
    from flexflow_keras.ops.conv_transpose import conv1d_transpose, conv2d_transpose

    n = _rank(inputs, "conv_transpose")
    if _pair(dilation_rate, n, "conv_transpose", "dilation_rate") not in (1, (1, 1)):
        raise ArgumentError("keras.ops.conv_transpose with dilation_rate > 1 is not implemented in flexflow_keras.")
    x, back = _channels_last(inputs, data_format, n)
    fn = conv2d_transpose if n == 2 else conv1d_transpose
    pad = None if output_padding is None else _pair(output_padding, n, "conv_transpose", "output_padding")
    y = fn(x, kernel, strides=_pair(strides, n, "conv_transpose", "strides"), padding=padding, output_padding=pad)
    return _back(y, back)


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Keras 3's ``keras.ops.depthwise_conv``: kernel (spatial..., in_channels, depth_multiplier)."""
    from flexflow_keras.ops.depthwise import depthwise_conv1d, depthwise_conv2d

    n = _rank(inputs, "depthwise_conv")
    x, back = _channels_last(inputs, data_format, n)
    fn = depthwise_conv2d if n == 2 else depthwise_conv1d
    y = fn(x, kernel, strides=_pair(strides, n, "depthwise_conv", "strides"), padding=padding,
           dilation_rate=_pair(dilation_rate, n, "depthwise_conv", "dilation_rate"))
    return _back(y, back)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """Keras 3's ``keras.ops.separable_conv``: a depthwise convolution, then a 1x1 convolution."""
    n = _rank(inputs, "separable_conv")
    x, back = _channels_last(inputs, data_format, n)
    y = depthwise_conv(x, depthwise_kernel, strides, padding, None, dilation_rate)
    return _back(conv(y, pointwise_kernel, 1, "valid", None, 1), back)


def tf_conv(input, filters, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    """TensorFlow's ``tf.nn.conv2d`` / ``conv1d`` / ``convolution`` (channels last; strides and dilations as
    an int, the spatial values, or TensorFlow's full-rank lists whose batch and channel entries are 1)."""
    n = len(np.shape(input)) - 2 if not hasattr(input, "shape") else len(input.shape) - 2

    def spatial(v, what):
        if v is None:
            return 1
        if np.ndim(v) == 0:
            return int(v)
        v = [int(s) for s in v]
        if len(v) == n + 2:
            if v[0] != 1 or v[-1] != 1:
                raise ArgumentError(f"tf.nn.conv{n}d: {what} {v} moves along the batch or channels; only the spatial "
                                    f"entries may differ from 1.")
            v = v[1:-1]
        return v
    if isinstance(padding, (list, tuple)):
        raise ArgumentError("tf.nn.conv2d with explicit paddings is not supported by flexflow_keras; pad with tf.pad "
                            "and use padding='VALID'.")
    fmt = None if data_format in (None, "NHWC", "NWC") else "channels_first" if data_format in ("NCHW", "NCW") else \
        data_format
    return conv(input, filters, spatial(strides, "strides"), str(padding).lower(), fmt, spatial(dilations, "dilations"))
