"""`keras.applications.nasnet`: NASNetMobile and NASNetLarge (Zoph et al., 2018: normal and reduction
cells found by architecture search) with Keras' layers, names and order, and their ImageNet
preprocessing ('tf' mode: [-1, 1]). Many of their layers have Keras' automatic names."""

from __future__ import annotations

from flexflow_keras.applications import _common, imagenet_utils
from flexflow_keras.applications.imagenet_utils import correct_pad, decode_predictions

__all__ = ["NASNetLarge", "NASNetMobile", "decode_predictions", "preprocess_input"]


def _bn(name=None):
    from flexflow_keras import layers

    return layers.BatchNormalization(axis=-1, momentum=0.9997, epsilon=1e-3, name=name)


def _conv1x1(filters: int, name: str, strides=(1, 1)):
    from flexflow_keras import layers

    return layers.Conv2D(filters, (1, 1), strides=strides, padding="same", use_bias=False, name=name,
                         kernel_initializer="he_normal")


def _sep_block(x, filters: int, kernel=(3, 3), strides=(1, 1), block_id: str = ""):
    """relu, separable conv (strided: after a correcting pad), bn, relu, separable conv, bn."""
    from flexflow_keras import layers

    x = layers.Activation("relu")(x)
    if strides == (2, 2):
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel), name=f"separable_conv_1_pad_{block_id}")(x)
    x = layers.SeparableConv2D(filters, kernel, strides=strides, name=f"separable_conv_1_{block_id}",
                               padding="valid" if strides == (2, 2) else "same", use_bias=False)(x)
    x = _bn(f"separable_conv_1_bn_{block_id}")(x)
    x = layers.Activation("relu")(x)
    x = layers.SeparableConv2D(filters, kernel, name=f"separable_conv_2_{block_id}", padding="same",
                               use_bias=False)(x)
    return _bn(f"separable_conv_2_bn_{block_id}")(x)


def _adjust(p, ip, filters: int, block_id: str):
    """The previous cell's output brought to this cell's size (a factorized reduction) or width."""
    from flexflow_keras import layers

    if p is None:
        return ip
    if p.shape[-2] != ip.shape[-2]:
        p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_1_{block_id}")(p)
        p1 = _conv1x1(filters // 2, f"adjust_conv_1_{block_id}")(p1)
        p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
        p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
        p2 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_2_{block_id}")(p2)
        p2 = _conv1x1(filters // 2, f"adjust_conv_2_{block_id}")(p2)
        p = layers.Concatenate(axis=-1)([p1, p2])
        return _bn(f"adjust_bn_{block_id}")(p)
    if p.shape[-1] != filters:
        p = layers.Activation("relu")(p)
        p = _conv1x1(filters, f"adjust_conv_projection_{block_id}")(p)
        return _bn(f"adjust_bn_{block_id}")(p)
    return p


def _avg(name: str, strides=(1, 1), padding="same"):
    from flexflow_keras import layers

    return layers.AveragePooling2D((3, 3), strides=strides, padding=padding, name=name)


def _normal_cell(ip, p, filters: int, block_id: str):
    from flexflow_keras import layers

    p = _adjust(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = _bn(f"normal_bn_1_{block_id}")(_conv1x1(filters, f"normal_conv_1_{block_id}")(h))
    x1 = layers.Add(name=f"normal_add_1_{block_id}")([
        _sep_block(h, filters, (5, 5), block_id=f"normal_left1_{block_id}"),
        _sep_block(p, filters, block_id=f"normal_right1_{block_id}")])
    x2 = layers.Add(name=f"normal_add_2_{block_id}")([
        _sep_block(p, filters, (5, 5), block_id=f"normal_left2_{block_id}"),
        _sep_block(p, filters, (3, 3), block_id=f"normal_right2_{block_id}")])
    x3 = layers.Add(name=f"normal_add_3_{block_id}")([_avg(f"normal_left3_{block_id}")(h), p])
    x4 = layers.Add(name=f"normal_add_4_{block_id}")([_avg(f"normal_left4_{block_id}")(p),
                                                      _avg(f"normal_right4_{block_id}")(p)])
    x5 = layers.Add(name=f"normal_add_5_{block_id}")([_sep_block(h, filters, block_id=f"normal_left5_{block_id}"), h])
    return layers.Concatenate(axis=-1, name=f"normal_concat_{block_id}")([p, x1, x2, x3, x4, x5]), ip


def _reduction_cell(ip, p, filters: int, block_id: str):
    from flexflow_keras import layers

    p = _adjust(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = _bn(f"reduction_bn_1_{block_id}")(_conv1x1(filters, f"reduction_conv_1_{block_id}")(h))
    h3 = layers.ZeroPadding2D(padding=correct_pad(h, 3), name=f"reduction_pad_1_{block_id}")(h)
    x1 = layers.Add(name=f"reduction_add_1_{block_id}")([
        _sep_block(h, filters, (5, 5), strides=(2, 2), block_id=f"reduction_left1_{block_id}"),
        _sep_block(p, filters, (7, 7), strides=(2, 2), block_id=f"reduction_right1_{block_id}")])
    x2 = layers.Add(name=f"reduction_add_2_{block_id}")([
        layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid", name=f"reduction_left2_{block_id}")(h3),
        _sep_block(p, filters, (7, 7), strides=(2, 2), block_id=f"reduction_right2_{block_id}")])
    x3 = layers.Add(name=f"reduction_add3_{block_id}")([
        _avg(f"reduction_left3_{block_id}", strides=(2, 2), padding="valid")(h3),
        _sep_block(p, filters, (5, 5), strides=(2, 2), block_id=f"reduction_right3_{block_id}")])
    x4 = layers.Add()([x2, _avg(f"reduction_left4_{block_id}")(x1)])
    x5 = layers.Add(name=f"reduction_add4_{block_id}")([
        _sep_block(x1, filters, (3, 3), block_id=f"reduction_left4_{block_id}"),
        layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid", name=f"reduction_right5_{block_id}")(h3)])
    return layers.Concatenate(axis=-1, name=f"reduction_concat_{block_id}")([x2, x3, x4, x5]), ip


def _build(who: str, input_shape, penultimate_filters: int, num_blocks: int, stem_filters: int,
           skip_reduction: bool, default_size: int, include_top, weights, input_tensor, pooling, classes,
           classifier_activation, name, file_stem: str):
    from flexflow_keras import layers

    multiplier = 2
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError(f"{who}(): with ImageNet weights the input_shape must be static (no None entries). "
                         f"Received: input_shape={input_shape}")
    shape = _common.input_shape_for(who, input_shape, default_size, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    filters = penultimate_filters // 24
    x = layers.Conv2D(stem_filters, (3, 3), strides=(2, 2), padding="valid", use_bias=False, name="stem_conv1",
                      kernel_initializer="he_normal")(img_input)
    x = _bn("stem_bn1")(x)
    p = None
    x, p = _reduction_cell(x, p, filters // multiplier ** 2, "stem_1")
    x, p = _reduction_cell(x, p, filters // multiplier, "stem_2")
    for stage in range(3):
        width = filters * multiplier ** stage
        if stage:
            x, p0 = _reduction_cell(x, p, width, f"reduce_{stage * num_blocks}")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            x, p = _normal_cell(x, p, width, f"{stage * num_blocks + i + (1 if stage else 0)}")
    x = layers.Activation("relu")(x)

    def top(x):
        x = layers.GlobalAveragePooling2D()(x)
        return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)

    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, top, pool_names=(None, None))
    file_name = f"{file_stem}{'' if include_top else '_no_top'}.h5"
    origin = f"NASNet-{file_stem.split('_')[1]}{'' if include_top else '-no-top'}.h5"  # Keras caches it renamed
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}nasnet/{origin}")
    return model


def NASNetMobile(input_shape=None, include_top=True, weights="imagenet", input_tensor=None, pooling=None,  # noqa: N802
                 classes=1000, classifier_activation="softmax", name="nasnet_mobile"):
    """NASNetMobile as Keras builds it (layer names and order included; input 224x224x3 by default); the
    arguments are those of every application (see `flexflow_keras.applications`)."""
    if not include_top and input_shape is None:
        input_shape = (224, 224, 3)
    return _build("NASNetMobile", input_shape, 1056, 4, 32, False, 224, include_top, weights, input_tensor, pooling,
                  classes, classifier_activation, name, "nasnet_mobile")


def NASNetLarge(input_shape=None, include_top=True, weights="imagenet", input_tensor=None, pooling=None,  # noqa: N802
                classes=1000, classifier_activation="softmax", name="nasnet_large"):
    """NASNetLarge as Keras builds it (layer names and order included; input 331x331x3 by default); the
    arguments are those of every application (see `flexflow_keras.applications`)."""
    return _build("NASNetLarge", input_shape, 4032, 6, 96, True, 331, include_top, weights, input_tensor, pooling,
                  classes, classifier_activation, name, "nasnet_large")


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of NASNet: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
