"""`keras.applications.inception_resnet_v2`: InceptionResNetV2 (Szegedy et al., 2016: Inception blocks
with scaled residual connections) with Keras' layers, names and order, and its ImageNet preprocessing
('tf' mode: [-1, 1]). Most of its layers have Keras' automatic names."""

from __future__ import annotations

from flexflow_keras.applications import _common, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions
from flexflow_keras.layers.base import Layer
from flexflow_keras.utils.serialization import register_keras_serializable

__all__ = ["InceptionResNetV2", "decode_predictions", "preprocess_input"]


@register_keras_serializable(package="keras.applications")
class CustomScaleLayer(Layer):
    """``inputs[0] + inputs[1] * scale``: the scaled residual sum of an Inception-ResNet block."""

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs):
        from flexflow_keras import ops

        return ops.add(inputs[0], ops.multiply(inputs[1], self.scale))

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def _conv_bn(x, filters: int, kernel, strides=1, padding: str = "same", activation="relu", use_bias=False,
             name=None):
    from flexflow_keras import layers

    x = layers.Conv2D(filters, kernel, strides=strides, padding=padding, use_bias=use_bias, name=name)(x)
    if not use_bias:
        x = layers.BatchNormalization(axis=3, scale=False, name=None if name is None else name + "_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else name + "_ac")(x)
    return x


def _block(x, scale: float, block_type: str, block_idx: int, activation="relu"):
    from flexflow_keras import layers

    if block_type == "block35":
        branches = [_conv_bn(x, 32, 1), _conv_bn(_conv_bn(x, 32, 1), 32, 3),
                    _conv_bn(_conv_bn(_conv_bn(x, 32, 1), 48, 3), 64, 3)]
    elif block_type == "block17":
        branches = [_conv_bn(x, 192, 1), _conv_bn(_conv_bn(_conv_bn(x, 128, 1), 160, [1, 7]), 192, [7, 1])]
    else:
        branches = [_conv_bn(x, 192, 1), _conv_bn(_conv_bn(_conv_bn(x, 192, 1), 224, [1, 3]), 256, [3, 1])]
    name = f"{block_type}_{block_idx}"
    mixed = layers.Concatenate(axis=3, name=name + "_mixed")(branches)
    up = _conv_bn(mixed, x.shape[3], 1, activation=None, use_bias=True, name=name + "_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=name + "_ac")(x)
    return x


def _build(include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    from flexflow_keras import layers

    who = "InceptionResNetV2"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 299, 75, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = _conv_bn(img_input, 32, 3, strides=2, padding="valid")
    x = _conv_bn(x, 32, 3, padding="valid")
    x = _conv_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = _conv_bn(x, 80, 1, padding="valid")
    x = _conv_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = layers.Concatenate(axis=3, name="mixed_5b")([
        _conv_bn(x, 96, 1), _conv_bn(_conv_bn(x, 48, 1), 64, 5),
        _conv_bn(_conv_bn(_conv_bn(x, 64, 1), 96, 3), 96, 3),
        _conv_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)])
    for i in range(1, 11):
        x = _block(x, 0.17, "block35", i)
    x = layers.Concatenate(axis=3, name="mixed_6a")([
        _conv_bn(x, 384, 3, strides=2, padding="valid"),
        _conv_bn(_conv_bn(_conv_bn(x, 256, 1), 256, 3), 384, 3, strides=2, padding="valid"),
        layers.MaxPooling2D(3, strides=2, padding="valid")(x)])
    for i in range(1, 21):
        x = _block(x, 0.1, "block17", i)
    x = layers.Concatenate(axis=3, name="mixed_7a")([
        _conv_bn(_conv_bn(x, 256, 1), 384, 3, strides=2, padding="valid"),
        _conv_bn(_conv_bn(x, 256, 1), 288, 3, strides=2, padding="valid"),
        _conv_bn(_conv_bn(_conv_bn(x, 256, 1), 288, 3), 320, 3, strides=2, padding="valid"),
        layers.MaxPooling2D(3, strides=2, padding="valid")(x)])
    for i in range(1, 10):
        x = _block(x, 0.2, "block8", i)
    x = _block(x, 1.0, "block8", 10, activation=None)
    x = _conv_bn(x, 1536, 1, name="conv_7b")
    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, _common.dense_top(classes, classifier_activation), pool_names=(None, None))
    file_name = f"inception_resnet_v2_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name,
                         f"{_common.WEIGHTS_BASE}inception_resnet_v2/{file_name}")
    return model


InceptionResNetV2 = _common.entry(__name__, "InceptionResNetV2", "inception_resnet_v2", _build,
                                  doc=" (input 299x299x3 by default, at least 75x75)")


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of InceptionResNetV2: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
