"""The ResNet builders behind `resnet.ResNet50/101/152` (He et al., 2015: bottleneck blocks, batch norm
after each convolution) and `resnet_v2.ResNet50V2/101V2/152V2` (He et al., 2016: pre-activation blocks),
with Keras' layer names (`conv2_block1_1_conv`, ...) so Keras' weights files load."""

from __future__ import annotations

from flexflow_keras.applications import _common

_EPS = 1.001e-5
DEPTHS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}


def _block_v1(x, filters: int, stride: int = 1, conv_shortcut: bool = True, name: str = ""):
    from flexflow_keras import layers

    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_0_bn")(shortcut)
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.Conv2D(filters, 3, padding="same", name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_3_bn")(x)
    x = layers.Add(name=name + "_add")([shortcut, x])
    return layers.Activation("relu", name=name + "_out")(x)


def _block_v2(x, filters: int, stride: int = 1, conv_shortcut: bool = False, name: str = ""):
    from flexflow_keras import layers

    preact = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_preact_bn")(x)
    preact = layers.Activation("relu", name=name + "_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = layers.Conv2D(filters, 3, strides=stride, use_bias=False, name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return layers.Add(name=name + "_out")([shortcut, x])


def _stack_v1(x, filters: int, blocks: int, stride1: int, name: str):
    x = _block_v1(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = _block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def _stack_v2(x, filters: int, blocks: int, stride1: int, name: str):
    x = _block_v2(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = _block_v2(x, filters, name=f"{name}_block{i}")
    return _block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def build(depth: int, v2: bool, include_top, weights, input_tensor, input_shape, pooling, classes,
          classifier_activation, name=None):
    """ResNet{depth} (or its V2) as Keras builds it; see resnet.ResNet50 for the arguments."""
    from flexflow_keras import layers

    model_name = f"resnet{depth}{'v2' if v2 else ''}"
    who = f"ResNet{depth}{'V2' if v2 else ''}"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 224, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    if not v2:
        x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    stack = _stack_v2 if v2 else _stack_v1
    for i, (filters, blocks) in enumerate(zip((64, 128, 256, 512), DEPTHS[depth], strict=True)):
        if v2:
            stride1 = 1 if i == 3 else 2
        else:
            stride1 = 1 if i == 0 else 2
        x = stack(x, filters, blocks, stride1, name=f"conv{i + 2}")
    if v2:
        x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    model = _common.finish(x, img_input, sources, name or model_name, include_top, pooling, classes,
                           classifier_activation, weights, _common.dense_top(classes, classifier_activation))
    file_name = f"{model_name}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}resnet/{file_name}")
    return model
