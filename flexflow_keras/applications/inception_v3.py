"""`keras.applications.inception_v3`: InceptionV3 (Szegedy et al., 2016) with Keras' layers and order,
and its ImageNet preprocessing ('tf' mode: [-1, 1]). Most of its layers have Keras' automatic names."""

from __future__ import annotations

from flexflow_keras.applications import _common, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["InceptionV3", "decode_predictions", "preprocess_input"]


def _conv_bn(x, filters: int, rows: int, cols: int, padding: str = "same", strides=(1, 1), name=None):
    from flexflow_keras import layers

    x = layers.Conv2D(filters, (rows, cols), strides=strides, padding=padding, use_bias=False,
                      name=None if name is None else name + "_conv")(x)
    x = layers.BatchNormalization(axis=3, scale=False, name=None if name is None else name + "_bn")(x)
    return layers.Activation("relu", name=name)(x)


def _avg_branch(x, filters: int):
    from flexflow_keras import layers

    return _conv_bn(layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x), filters, 1, 1)


def _mixed_35(x, pool_filters: int, name: str):
    from flexflow_keras import layers

    b1 = _conv_bn(x, 64, 1, 1)
    b5 = _conv_bn(_conv_bn(x, 48, 1, 1), 64, 5, 5)
    b3 = _conv_bn(_conv_bn(_conv_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3)
    return layers.Concatenate(axis=3, name=name)([b1, b5, b3, _avg_branch(x, pool_filters)])


def _mixed_17(x, c: int, name: str):
    from flexflow_keras import layers

    b1 = _conv_bn(x, 192, 1, 1)
    b7 = _conv_bn(_conv_bn(_conv_bn(x, c, 1, 1), c, 1, 7), 192, 7, 1)
    b7d = _conv_bn(x, c, 1, 1)
    for filters, rows, cols in ((c, 7, 1), (c, 1, 7), (c, 7, 1), (192, 1, 7)):
        b7d = _conv_bn(b7d, filters, rows, cols)
    return layers.Concatenate(axis=3, name=name)([b1, b7, b7d, _avg_branch(x, 192)])


def _mixed_8(x, i: int):
    from flexflow_keras import layers

    b1 = _conv_bn(x, 320, 1, 1)
    b3 = _conv_bn(x, 384, 1, 1)
    b3 = layers.Concatenate(axis=3, name=f"mixed9_{i}")([_conv_bn(b3, 384, 1, 3), _conv_bn(b3, 384, 3, 1)])
    b3d = _conv_bn(_conv_bn(x, 448, 1, 1), 384, 3, 3)
    b3d = layers.Concatenate(axis=3)([_conv_bn(b3d, 384, 1, 3), _conv_bn(b3d, 384, 3, 1)])
    return layers.Concatenate(axis=3, name=f"mixed{9 + i}")([b1, b3, b3d, _avg_branch(x, 192)])


def _build(include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    from flexflow_keras import layers

    who = "InceptionV3"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 299, 75, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = _conv_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = _conv_bn(x, 32, 3, 3, padding="valid")
    x = _conv_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = _conv_bn(x, 80, 1, 1, padding="valid")
    x = _conv_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _mixed_35(x, pool_filters, f"mixed{i}")
    # mixed 3: 35x35 to 17x17
    b3 = _conv_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")
    b3d = _conv_bn(_conv_bn(_conv_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3, strides=(2, 2), padding="valid")
    x = layers.Concatenate(axis=3, name="mixed3")([b3, b3d, layers.MaxPooling2D((3, 3), strides=(2, 2))(x)])
    for i, c in enumerate((128, 160, 160, 192)):
        x = _mixed_17(x, c, f"mixed{4 + i}")
    # mixed 8: 17x17 to 8x8
    b3 = _conv_bn(_conv_bn(x, 192, 1, 1), 320, 3, 3, strides=(2, 2), padding="valid")
    b7 = _conv_bn(x, 192, 1, 1)
    for filters, rows, cols in ((192, 1, 7), (192, 7, 1)):
        b7 = _conv_bn(b7, filters, rows, cols)
    b7 = _conv_bn(b7, 192, 3, 3, strides=(2, 2), padding="valid")
    x = layers.Concatenate(axis=3, name="mixed8")([b3, b7, layers.MaxPooling2D((3, 3), strides=(2, 2))(x)])
    for i in range(2):
        x = _mixed_8(x, i)
    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, _common.dense_top(classes, classifier_activation), pool_names=(None, None))
    file_name = f"inception_v3_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}inception_v3/{file_name}")
    return model


InceptionV3 = _common.entry(__name__, "InceptionV3", "inception_v3", _build, doc=" (input 299x299x3 by default, at least 75x75)")


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of InceptionV3: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
