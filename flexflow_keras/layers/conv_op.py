"""Keras 3's ``Conv.convolution_op(inputs, kernel)`` hook of Conv1D, Conv2D and Conv3D.

A subclass may replace the convolution itself (a weight-standardized conv: keras.io's
subclassing_conv_layers) by overriding ``convolution_op``, or call it from its own ``call()`` on a
changed kernel. The layers' own ``call()`` runs the fused conv op (bias and activation inside the kernel)
unless a subclass overrides ``convolution_op``; then it computes as Keras 3's ``BaseConv.call``:
``activation(convolution_op(inputs, kernel) + bias)``, the bias on the data_format's channel axis.
Keras 3's Conv1D.call never reads the hook (it calls ``ops.conv`` itself), so neither does ours.
"""

from __future__ import annotations

from flexflow_keras import ops
from flexflow_keras.layers.core import apply_activation


def convolution_op(layer, inputs, kernel):
    """``keras.ops.conv`` with the layer's strides, padding, dilation and data_format (no bias, no
    activation); a grouped Conv2D (one group per channel) runs its depthwise op."""
    if getattr(layer, "groups", 1) != 1:
        from flexflow_keras.layers.convolutional import from_channels_last, to_channels_last
        from flexflow_keras.ops.depthwise import depthwise_conv2d

        y = depthwise_conv2d(to_channels_last(layer, inputs), kernel, None, layer.strides, layer.padding,
                             layer.dilation_rate, grouped=True)
        return from_channels_last(layer, y)
    padding = layer.padding
    if padding == "causal":  # Conv1D: pad the start of the steps, as its call() does
        left = layer.dilation_rate[0] * (layer.kernel_size[0] - 1)
        steps = 2 if layer.data_format == "channels_first" else 1
        inputs = ops.pad(inputs, [[left, 0] if axis == steps else [0, 0] for axis in range(3)])
        padding = "valid"
    return ops.conv(inputs, kernel, strides=list(layer.strides), padding=padding,
                    dilation_rate=layer.dilation_rate, data_format=layer.data_format)


def overridden(layer, base: type) -> bool:
    """Whether `layer`'s class replaces `base`'s ``convolution_op``."""
    return type(layer).convolution_op is not base.convolution_op


def call_through_hook(layer, inputs):
    """Keras 3's ``BaseConv.call``: ``activation(layer.convolution_op(inputs, kernel) + bias)``."""
    outputs = layer.convolution_op(inputs, layer.kernel)
    if layer.use_bias:
        rank = len(layer.kernel_size)
        shape = (1,) * (rank + 1) + (layer.filters,) if layer.data_format != "channels_first" else \
            (1, layer.filters) + (1,) * rank
        outputs = ops.add(outputs, ops.reshape(layer.bias, shape))
    return apply_activation(outputs, layer.activation)
