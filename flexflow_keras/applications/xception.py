"""`keras.applications.xception`: Xception (Chollet, 2017: depthwise separable convolutions with
residual connections) with Keras' layers, names and order, and its ImageNet preprocessing ('tf' mode)."""

from __future__ import annotations

from flexflow_keras.applications import _common, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["Xception", "decode_predictions", "preprocess_input"]


def _sep_bn(x, filters: int, name: str, act_first: bool):
    """[relu], separable 3x3 convolution, batch norm: Xception's unit (`name`: e.g. block4_sepconv1)."""
    from flexflow_keras import layers

    if act_first:
        x = layers.Activation("relu", name=name + "_act")(x)
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=name + "_bn")(x)


def _down_block(x, filters: tuple[int, int], block: int, first_act: bool = True):
    """Two separable units and a stride-2 max pool, plus a strided 1x1 convolution as the shortcut."""
    from flexflow_keras import layers

    residual = layers.Conv2D(filters[1], (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    residual = layers.BatchNormalization(axis=-1)(residual)
    x = _sep_bn(x, filters[0], f"block{block}_sepconv1", first_act)
    x = _sep_bn(x, filters[1], f"block{block}_sepconv2", True)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"block{block}_pool")(x)
    return layers.Add()([x, residual])


def _build(include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    from flexflow_keras import layers

    who = "Xception"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 299, 71, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)
    x = _down_block(x, (128, 128), 2, first_act=False)
    x = _down_block(x, (256, 256), 3)
    x = _down_block(x, (728, 728), 4)
    for block in range(5, 13):
        residual = x
        for i in (1, 2, 3):
            x = _sep_bn(x, 728, f"block{block}_sepconv{i}", True)
        x = layers.Add()([x, residual])
    x = _down_block(x, (728, 1024), 13)
    x = layers.SeparableConv2D(1536, (3, 3), padding="same", use_bias=False, name="block14_sepconv1")(x)
    x = layers.BatchNormalization(axis=-1, name="block14_sepconv1_bn")(x)
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = layers.SeparableConv2D(2048, (3, 3), padding="same", use_bias=False, name="block14_sepconv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block14_sepconv2_bn")(x)
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)
    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, _common.dense_top(classes, classifier_activation), pool_names=(None, None))
    file_name = f"xception_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}xception/{file_name}")
    return model


Xception = _common.entry(__name__, "Xception", "xception", _build, doc=" (input 299x299x3 by default, at least 71x71)")


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of Xception: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
