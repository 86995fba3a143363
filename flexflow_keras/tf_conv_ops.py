"""TensorFlow's transposed, depthwise and separable convolutions under `python -m flexflow_keras`
(tf_compat.py's `mapped_call` looks here): `tf.nn.conv1d_transpose`, `conv2d_transpose`, `conv3d_transpose`,
`conv_transpose`, `depthwise_conv2d` and `separable_conv2d`, with TensorFlow's arguments, onto keras.ops'
conv_transpose / depthwise_conv / separable_conv (ops/conv_api.py): eager on arrays, symbolic in a model,
differentiable under a GradientTape, as those are. Kernel layouts are TensorFlow's and Keras' alike.

A transposed convolution's output size is TensorFlow's explicit `output_shape`; Keras takes an
`output_padding` instead, computed here from the spatial sizes (``(in - 1) * stride + kernel + p`` for
VALID, ``(in - 1) * stride + kernel - 2 * (kernel // 2) + p`` for SAME). An output size the input could
not come from (TensorFlow's own condition: ``ceil(out / stride) == in`` for SAME, ``ceil((out - kernel +
1) / stride) == in`` for VALID) is TensorFlow's InvalidArgumentError, naming the sizes that would be.
Dilated transposed convolutions, explicit paddings and a depthwise convolution with strides and dilations
both above 1 (TensorFlow warns and computes it through space-to-batch) are refused naming the call.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.conv_api import _tf_format, _tf_spatial
from flexflow_keras.tf_convert import invalid, refuse
from flexflow_keras.tf_convert import ops as _ops


def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _padding(call: str, padding) -> str:
    if isinstance(padding, list | tuple) or str(padding).upper() not in ("SAME", "VALID"):
        refuse(call, f"is mapped for padding 'SAME' or 'VALID' only, received padding={padding!r}.",
               "Pad with tf.pad and use padding='VALID', or run the script with TensorFlow itself.")
    return str(padding).lower()


def _ones(call: str, values, what: str) -> None:
    if any(v != 1 for v in np.atleast_1d(values)):
        refuse(call, f"with {what}={values!r} is not mapped (flexflow_keras' transposed convolutions take no "
                     f"dilation).", "Use dilations=1, or run the script with TensorFlow itself.")


def _output_padding(call: str, inputs: tuple, kernel: tuple, strides: tuple, out: tuple, padding: str) -> tuple:
    """Keras' output_padding for TensorFlow's spatial output sizes `out`."""
    pads = []
    for i, k, s, o in zip(inputs, kernel, strides, out, strict=True):
        lo, hi = ((i - 1) * s + 1, i * s) if padding == "same" else ((i - 1) * s + k, (i - 1) * s + k + s - 1)
        if i is not None and not lo <= o <= hi:
            invalid(f"Conv{len(inputs)}DBackpropInput: output_shape's spatial size {o} cannot come from an input of "
                    f"size {i} with kernel {k}, stride {s} and padding {padding.upper()} ({call}): give a size from "
                    f"{lo} to {hi} [Op:Conv{len(inputs)}DBackpropInputV2]")
        pads.append(o - (i - 1) * s - (k if padding == "valid" else k - 2 * (k // 2)))
    return tuple(pads)


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None,  # noqa: A002
                   dilations=None, name=None, _call="tf.nn.conv_transpose"):
    """`tf.nn.conv_transpose(input, filters, output_shape, strides, padding="SAME")`: the gradient of a
    convolution, filters (spatial..., out_channels, in_channels), output of shape `output_shape`."""
    shape = _shape(input)
    n = len(shape) - 2
    if n not in (1, 2, 3):
        invalid(f"{_call}: input must be of rank 3, 4 or 5 (batch, spatial..., channels), received shape "
                f"{list(shape)}.")
    fmt = _tf_format(data_format)
    pad = _padding(_call, padding)
    if dilations is not None:
        _ones(_call, _tf_spatial(dilations, n, fmt, _call, "dilations"), "dilations")
    stride = _tf_spatial(strides, n, fmt, _call, "strides")
    stride = (stride,) * n if np.ndim(stride) == 0 else tuple(stride)
    if len(stride) != n:
        invalid(f"{_call}: strides must have 1, {n} or {n + 2} entries, received {strides!r}.")
    out = list(output_shape) if isinstance(output_shape, list | tuple) else list(np.asarray(output_shape).reshape(-1))
    if len(out) != n + 2:
        invalid(f"{_call}: output_shape must have {n + 2} entries (batch, spatial..., channels), received "
                f"{output_shape!r}.")
    channel_at = 1 if fmt == "channels_first" else n + 1
    spatial_in = shape[2:] if fmt == "channels_first" else shape[1:-1]
    spatial_out = [int(v) for v in (out[2:] if fmt == "channels_first" else out[1:-1])]
    kernel = _shape(filters)
    if len(kernel) != n + 2:
        invalid(f"{_call}: filters must have rank {n + 2} (spatial..., out_channels, in_channels), received shape "
                f"{list(kernel)}.")
    if int(out[channel_at]) != kernel[-2]:
        invalid(f"{_call}: output_shape's channels {int(out[channel_at])} must equal filters' out_channels "
                f"{kernel[-2]} (filters shape {list(kernel)}).")
    if shape[channel_at] is not None and shape[channel_at] != kernel[-1]:
        invalid(f"{_call}: input has {shape[channel_at]} channels but filters' in_channels is {kernel[-1]} "
                f"(filters shape {list(kernel)}).")
    batch = out[0]
    if shape[0] is not None and isinstance(batch, int | np.integer) and int(batch) != shape[0]:
        invalid(f"{_call}: output_shape's batch {int(batch)} must equal the input's batch {shape[0]}.")
    extra = _output_padding(_call, spatial_in, kernel[:n], stride, tuple(spatial_out), pad)
    return _ops().conv_transpose(input, filters, strides=stride, padding=pad, output_padding=extra,
                                 data_format=fmt)


def _rank_fixed(n: int, default_format: str):
    call = f"tf.nn.conv{n}d_transpose"

    def fn(input, filters, output_shape, strides, padding="SAME", data_format=default_format,  # noqa: A002
           dilations=None, name=None):
        if len(_shape(input)) != n + 2:
            invalid(f"{call}: input must be of rank {n + 2}, received shape {list(_shape(input))}.")
        return conv_transpose(input, filters, output_shape, strides, padding, data_format, dilations, _call=call)

    fn.__name__ = f"conv{n}d_transpose"
    fn.__doc__ = f"`{call}(input, filters, output_shape, strides, padding=\"SAME\")`: see `conv_transpose`."
    return fn


def _depthwise_args(call: str, input, strides, padding, data_format, dilations):  # noqa: A002
    if len(_shape(input)) != 4:
        invalid(f"{call}: input must be of rank 4 (batch, height, width, channels), received shape "
                f"{list(_shape(input))}.")
    fmt = _tf_format(data_format)
    stride = [int(s) for s in np.asarray(strides).reshape(-1)]
    if len(stride) != 4:
        raise ValueError(f"{call}: strides must have 4 entries [1, stride, stride, 1], received {strides!r}.")
    stride = _tf_spatial(stride, 2, fmt, call, "strides")
    rate = 1 if dilations is None else _tf_spatial(dilations, 2, fmt, call, "dilations")
    if np.any(np.asarray(rate) > 1) and np.any(np.asarray(stride) > 1):
        refuse(call, f"with strides {strides!r} and dilations {dilations!r} both above 1 is not mapped: TensorFlow "
                     f"only warns and computes it through space-to-batch, with its own output sizes.",
               "Use strides of 1 with dilations (then stride with a slice), or run the script with TensorFlow itself.")
    return fmt, _padding(call, padding), stride, rate


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    """`tf.nn.depthwise_conv2d(input, filter, strides, padding, dilations=None)`: each input channel convolved
    with its own `filter[:, :, c, :]` (height, width, in_channels, channel_multiplier)."""
    fmt, pad, stride, rate = _depthwise_args("tf.nn.depthwise_conv2d", input, strides, padding, data_format,
                                             dilations)
    return _ops().depthwise_conv(input, filter, strides=stride, padding=pad, data_format=fmt, dilation_rate=rate)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """`tf.nn.separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding)`: a depthwise
    convolution, then a 1x1 convolution with pointwise_filter (1, 1, in_channels * multiplier, out_channels)."""
    fmt, pad, stride, rate = _depthwise_args("tf.nn.separable_conv2d", input, strides, padding, data_format,
                                             dilations)
    return _ops().separable_conv(input, depthwise_filter, pointwise_filter, strides=stride, padding=pad,
                                 data_format=fmt, dilation_rate=rate)


CALLS = {"tf.nn.conv_transpose": conv_transpose, "tf.nn.conv1d_transpose": _rank_fixed(1, "NWC"),
         "tf.nn.conv2d_transpose": _rank_fixed(2, "NHWC"), "tf.nn.conv3d_transpose": _rank_fixed(3, "NDHWC"),
         "tf.nn.depthwise_conv2d": depthwise_conv2d, "tf.nn.separable_conv2d": separable_conv2d}
