"""The MobileNet builders behind `mobilenet.MobileNet` (Howard et al., 2017: depthwise separable
convolutions) and `mobilenet_v2.MobileNetV2` (Sandler et al., 2018: inverted residual blocks with linear
bottlenecks), with Keras' layer names, the width multiplier `alpha`, and Keras' ImageNet file names."""

from __future__ import annotations

import logging

from flexflow_keras.applications import _common
from flexflow_keras.applications.imagenet_utils import correct_pad

log = logging.getLogger("flexflow_keras")

_V1_ALPHAS = {0.25: "2_5", 0.50: "5_0", 0.75: "7_5", 1.0: "1_0"}
_V2_ALPHAS = (0.35, 0.50, 0.75, 1.0, 1.3, 1.4)
_SIZES = (128, 160, 192, 224)


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """`v` rounded to a multiple of `divisor`, never more than 10% below it (the MobileNet rule)."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _rows(who: str, input_shape, input_tensor, weights, include_top, sizes: tuple[int, ...],
          from_tensor: bool) -> tuple:
    """(the input shape, the size in the model's and weights file's names), by Keras' rules: the default
    size is the input's own square size when it is one of `sizes` (MobileNetV2 also reads it from
    `input_tensor`), else 224, which ImageNet weights fall back to, with a warning."""
    probe = input_shape
    if probe is None and input_tensor is not None and from_tensor:  # sets the default size only, as Keras
        probe = tuple(input_tensor.shape[1:])
    default = 224
    if probe is not None and len(probe) == 3 and probe[0] == probe[1] and probe[0] in sizes:
        default = probe[0]
    shape = _common.input_shape_for(who, input_shape, default, 32, include_top, weights)
    rows = shape[0]
    if weights == "imagenet" and (rows != shape[1] or rows not in sizes):
        rows = 224
        log.warning("%s(): `input_shape` is undefined or non-square, or `rows` is not in %s. Weights for input "
                    "shape (224, 224) will be loaded as the default.", who, list(sizes))
    return shape, rows


def build_v1(alpha, depth_multiplier, dropout, include_top, weights, input_tensor, input_shape, pooling, classes,
             classifier_activation, name=None):
    """MobileNet as Keras builds it; see `flexflow_keras.applications` for the arguments."""
    from flexflow_keras import layers

    who = "MobileNet"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError(f"{who}(): with weights='imagenet', depth_multiplier must be 1. Received: "
                             f"depth_multiplier={depth_multiplier}")
        if alpha not in _V1_ALPHAS:
            raise ValueError(f"{who}(): with weights='imagenet', alpha can be one of 0.25, 0.50, 0.75 or 1.0. "
                             f"Received: alpha={alpha}")
    shape, rows = _rows(who, input_shape, input_tensor, weights, include_top, _SIZES, False)
    img_input, sources = _common.model_input(input_tensor, shape)

    x = layers.Conv2D(int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2), name="conv1")(
        img_input)
    x = layers.BatchNormalization(axis=-1, name="conv1_bn")(x)
    x = layers.ReLU(6.0, name="conv1_relu")(x)
    plan = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
            (512, 1), (1024, 2), (1024, 1))
    for block_id, (filters, stride) in enumerate(plan, start=1):
        x = _depthwise_block(x, int(filters * alpha), depth_multiplier, stride, block_id)

    def top(x):
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        return layers.Activation(activation=classifier_activation, name="predictions")(x)

    model = _common.finish(x, img_input, sources, name or f"mobilenet_{alpha:0.2f}_{rows}", include_top, pooling,
                           classes, classifier_activation, weights, top, pool_names=(None, None))
    file_name = None
    if alpha in _V1_ALPHAS:
        file_name = f"mobilenet_{_V1_ALPHAS[alpha]}_{rows}_tf{'' if include_top else '_no_top'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}mobilenet/{file_name}")
    return model


def _depthwise_block(x, filters: int, depth_multiplier: int, stride: int, block_id: int):
    from flexflow_keras import layers

    if stride != 1:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = layers.DepthwiseConv2D((3, 3), padding="same" if stride == 1 else "valid", depth_multiplier=depth_multiplier,
                               strides=(stride, stride), use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(filters, (1, 1), padding="same", use_bias=False, strides=(1, 1), name=f"conv_pw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


# (filters, stride, expansion) of MobileNetV2's 17 inverted residual blocks
_V2_PLAN = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6), (64, 1, 6),
            (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6),
            (320, 1, 6))


def build_v2(alpha, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
             name=None):
    """MobileNetV2 as Keras builds it; see `flexflow_keras.applications` for the arguments."""
    from flexflow_keras import layers

    who = "MobileNetV2"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    if weights == "imagenet" and alpha not in _V2_ALPHAS:
        raise ValueError(f"{who}(): with weights='imagenet', alpha can be one of 0.35, 0.50, 0.75, 1.0, 1.3 or "
                         f"1.4. Received: alpha={alpha}")
    shape, rows = _rows(who, input_shape, input_tensor, weights, include_top, (96,) + _SIZES, True)
    img_input, sources = _common.model_input(input_tensor, shape)

    bn = {"epsilon": 1e-3, "momentum": 0.999}
    x = layers.Conv2D(make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same",
                      use_bias=False, name="Conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="bn_Conv1", **bn)(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_V2_PLAN):
        x = _inverted_res_block(x, filters, alpha, stride, expansion, block_id, bn)
    last = make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=-1, name="Conv_1_bn", **bn)(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    model = _common.finish(x, img_input, sources, name or f"mobilenetv2_{alpha:0.2f}_{rows}", include_top,
                           pooling, classes, classifier_activation, weights,
                           _common.dense_top(classes, classifier_activation, pool_name=None), pool_names=(None, None))
    file_name = (f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}"
                 f"{'' if include_top else '_no_top'}.h5")
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}mobilenet_v2/{file_name}")
    return model


def _inverted_res_block(inputs, filters: int, alpha: float, stride: int, expansion: int, block_id: int, bn: dict):
    from flexflow_keras import layers

    in_channels = inputs.shape[-1]
    pointwise = make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False, activation=None,
                          name=prefix + "expand")(x)
        x = layers.BatchNormalization(axis=-1, name=prefix + "expand_BN", **bn)(x)
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid", name=prefix + "depthwise")(x)
    x = layers.BatchNormalization(axis=-1, name=prefix + "depthwise_BN", **bn)(x)
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = layers.Conv2D(pointwise, kernel_size=1, padding="same", use_bias=False, activation=None,
                      name=prefix + "project")(x)
    x = layers.BatchNormalization(axis=-1, name=prefix + "project_BN", **bn)(x)
    if in_channels == pointwise and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x
