"""Keras 3's convolution and pooling functions of `keras.ops` (`conv`, `conv_transpose`, `depthwise_conv`,
`separable_conv`, `max_pool`, `average_pool`) on the window ops of this package: 1-D, 2-D or 3-D (conv,
conv_transpose and the poolings) by the input's rank, channels last
(``data_format="channels_first"`` inputs are transposed in and out), Keras' argument names and kernel
layouts. Symbolic on KerasTensors, eager on arrays, as the ops they call.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError


def _rank(inputs, who: str, volumes: bool = False) -> int:
    n = len(inputs.shape) - 2
    if n not in ((1, 2, 3) if volumes else (1, 2)):
        what = "rank 3 (1-D), 4 (2-D) or 5 (3-D)" if volumes else "rank 3 (1-D) or 4 (2-D)"
        why = "" if volumes else "; 3-D depthwise and separable convolutions are not implemented in flexflow_keras"
        raise ArgumentError(f"keras.ops.{who} takes inputs of {what}, received shape {tuple(inputs.shape)}{why}.")
    return n


def _pair(v, n: int, who: str, what: str):
    t = (int(v),) * n if np.ndim(v) == 0 else tuple(int(s) for s in v)
    if len(t) != n:
        raise ArgumentError(f"keras.ops.{who}: {what} must be an int or {n} ints for a {n}-D convolution, received "
                            f"{v!r}.")
    return t if n >= 2 else t[0]


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
    from flexflow_keras.ops.conv3d import conv3d

    n = _rank(inputs, "conv", volumes=True)
    x, back = _channels_last(inputs, data_format, n)
    fn = {1: conv1d, 2: conv2d, 3: conv3d}[n]
    y = fn(x, kernel, strides=_pair(strides, n, "conv", "strides"), padding=padding,
           dilation_rate=_pair(dilation_rate, n, "conv", "dilation_rate"))
    return _back(y, back)


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1):
    """Keras 3's ``keras.ops.conv_transpose``: kernel (spatial..., out_channels, in_channels)."""
    from flexflow_keras.ops.conv3d import conv3d_transpose
    from flexflow_keras.ops.conv_transpose import conv1d_transpose, conv2d_transpose

    n = _rank(inputs, "conv_transpose", volumes=True)
    if _pair(dilation_rate, n, "conv_transpose", "dilation_rate") not in (1, (1,) * n):
        raise ArgumentError("keras.ops.conv_transpose with dilation_rate > 1 is not implemented in flexflow_keras.")
    x, back = _channels_last(inputs, data_format, n)
    fn = {1: conv1d_transpose, 2: conv2d_transpose, 3: conv3d_transpose}[n]
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


def _pool(who: str, mode: str, inputs, pool_size, strides, padding, data_format):
    from flexflow_keras.ops.conv1d import pool1d
    from flexflow_keras.ops.conv3d import pool3d
    from flexflow_keras.ops.pooling import pool2d

    n = _rank(inputs, who, volumes=True)
    p = padding.lower() if isinstance(padding, str) else padding
    if p not in ("valid", "same"):
        raise ArgumentError(f"keras.ops.{who}: padding must be 'valid' or 'same', received padding={padding!r}.")
    size = _pair(pool_size, n, who, "pool_size")
    x, back = _channels_last(inputs, data_format, n)
    fn = {1: pool1d, 2: pool2d, 3: pool3d}[n]
    return _back(fn(x, size, size if strides is None else _pair(strides, n, who, "strides"), p, mode), back)


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Keras 3's ``keras.ops.max_pool``: 1-D, 2-D or 3-D max pooling (strides default to pool_size)."""
    return _pool("max_pool", "max", inputs, pool_size, strides, padding, data_format)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Keras 3's ``keras.ops.average_pool`` ("same": the mean over the window's part inside the input)."""
    return _pool("average_pool", "avg", inputs, pool_size, strides, padding, data_format)


def tf_conv(input, filters, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    """TensorFlow's ``tf.nn.conv2d`` / ``conv1d`` / ``conv3d`` / ``convolution`` (NWC/NHWC/NDHWC or channels
    first; strides and dilations as TensorFlow takes them: `_tf_spatial`)."""
    n = len(np.shape(input)) - 2 if not hasattr(input, "shape") else len(input.shape) - 2
    fmt = _tf_format(data_format)

    def spatial(v, what):
        return 1 if v is None else _tf_spatial(v, n, fmt, f"tf.nn.conv{n}d", what)

    if isinstance(padding, (list, tuple)):
        raise ArgumentError("tf.nn.conv2d with explicit paddings is not supported by flexflow_keras; pad with tf.pad "
                            "and use padding='VALID'.")
    return conv(input, filters, spatial(strides, "strides"), str(padding).lower(), fmt, spatial(dilations, "dilations"))


def _tf_spatial(v, n: int, fmt, who: str, what: str):
    """TensorFlow's window argument: an int, one value for every spatial dim, the spatial values, or the
    full-rank list (batch and channel entries 1, where `fmt` puts them)."""
    if np.ndim(v) == 0:
        return int(v)
    v = [int(s) for s in v]
    if len(v) == 1:
        return v[0]
    if len(v) == n + 2:
        outer = (v[0], v[1]) if fmt == "channels_first" else (v[0], v[-1])
        if outer != (1, 1):
            raise ArgumentError(f"{who}: {what} {v} moves along the batch or channels; only the spatial entries "
                                f"may differ from 1.")
        return v[2:] if fmt == "channels_first" else v[1:-1]
    return v


def _tf_format(data_format):
    """Keras' data_format of TensorFlow's ("NHWC", "NCDHW", ...)."""
    if data_format in (None, "NWC", "NHWC", "NDHWC"):
        return None
    return "channels_first" if data_format in ("NCW", "NCHW", "NCDHW") else data_format


def tf_pool(mode: str):
    """TensorFlow's ``tf.nn.max_pool`` / ``avg_pool`` (and their 1d/2d/3d forms): ksize and strides as an int,
    the spatial values, or full-rank lists whose batch and channel entries are 1."""

    def pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
        n = len(input.shape) - 2
        fmt, who = _tf_format(data_format), f"tf.nn.{mode}_pool{n}d"
        fn = max_pool if mode == "max" else average_pool
        return fn(input, _tf_spatial(ksize, n, fmt, who, "ksize"), _tf_spatial(strides, n, fmt, who, "strides"),
                  str(padding).lower(), fmt)

    return pool
