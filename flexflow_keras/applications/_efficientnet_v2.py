"""The EfficientNetV2 builder behind `efficientnet_v2.EfficientNetV2B0..B3/S/M/L` (Tan & Le, 2021):
fused MBConv blocks (one full convolution in place of expansion and depthwise) in the early stages,
MBConv blocks with squeeze-and-excitation after, with Keras' layer names and initializers. The model
rescales (and for the B variants normalizes) its own input."""

from __future__ import annotations

import math

from flexflow_keras.applications import _common
from flexflow_keras.applications._efficientnet import _CONV_INIT, _DENSE_INIT, _initializer

# (kernel, repeats, filters in, filters out, expansion, se ratio, stride, fused) per stage
_B = ((3, 1, 32, 16, 1, 0, 1, True), (3, 2, 16, 32, 4, 0, 2, True), (3, 2, 32, 48, 4, 0, 2, True),
      (3, 3, 48, 96, 4, 0.25, 2, False), (3, 5, 96, 112, 6, 0.25, 1, False), (3, 8, 112, 192, 6, 0.25, 2, False))
_S = ((3, 2, 24, 24, 1, 0, 1, True), (3, 4, 24, 48, 4, 0, 2, True), (3, 4, 48, 64, 4, 0, 2, True),
      (3, 6, 64, 128, 4, 0.25, 2, False), (3, 9, 128, 160, 6, 0.25, 1, False), (3, 15, 160, 256, 6, 0.25, 2, False))
_M = ((3, 3, 24, 24, 1, 0, 1, True), (3, 5, 24, 48, 4, 0, 2, True), (3, 5, 48, 80, 4, 0, 2, True),
      (3, 7, 80, 160, 4, 0.25, 2, False), (3, 14, 160, 176, 6, 0.25, 1, False), (3, 18, 176, 304, 6, 0.25, 2, False),
      (3, 5, 304, 512, 6, 0.25, 1, False))
_L = ((3, 4, 32, 32, 1, 0, 1, True), (3, 7, 32, 64, 4, 0, 2, True), (3, 7, 64, 96, 4, 0, 2, True),
      (3, 10, 96, 192, 4, 0.25, 2, False), (3, 19, 192, 224, 6, 0.25, 1, False), (3, 25, 224, 384, 6, 0.25, 2, False),
      (3, 7, 384, 640, 6, 0.25, 1, False))
# variant: (stages, width coefficient, depth coefficient, default size)
VARIANTS = {"b0": (_B, 1.0, 1.0, 224), "b1": (_B, 1.0, 1.1, 240), "b2": (_B, 1.1, 1.2, 260),
            "b3": (_B, 1.2, 1.4, 300), "s": (_S, 1.0, 1.0, 384), "m": (_M, 1.0, 1.0, 480), "l": (_L, 1.0, 1.0, 480)}
_MOMENTUM = 0.9


def _bn(name: str):
    from flexflow_keras import layers

    return layers.BatchNormalization(axis=3, momentum=_MOMENTUM, name=name)


def _se(x, filters_in: int, filters: int, se_ratio: float, name: str):
    from flexflow_keras import layers

    se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
    se = layers.Conv2D(max(1, int(filters_in * se_ratio)), 1, padding="same", activation="swish",
                       kernel_initializer=_initializer(_CONV_INIT), name=name + "se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=_initializer(_CONV_INIT),
                       name=name + "se_expand")(se)
    return layers.Multiply(name=name + "se_excite")([x, se])


def _block(inputs, fused: bool, kernel: int, f_in: int, f_out: int, expansion: int, se_ratio: float, stride: int,
           drop_rate: float, name: str):
    from flexflow_keras import layers

    filters = f_in * expansion
    x = inputs
    if expansion != 1:
        x = layers.Conv2D(filters, kernel_size=kernel if fused else 1, strides=stride if fused else 1,
                          kernel_initializer=_initializer(_CONV_INIT), padding="same", use_bias=False,
                          name=name + "expand_conv")(x)
        x = _bn(name + "expand_bn")(x)
        x = layers.Activation("swish", name=name + "expand_activation")(x)
    if not fused:
        x = layers.DepthwiseConv2D(kernel_size=kernel, strides=stride, depthwise_initializer=_initializer(_CONV_INIT),
                                   padding="same", use_bias=False, name=name + "dwconv2")(x)
        x = _bn(name + "bn")(x)
        x = layers.Activation("swish", name=name + "activation")(x)
    if 0 < se_ratio <= 1:
        x = _se(x, f_in, filters, se_ratio, name)
    one_by_one = not fused or expansion != 1
    x = layers.Conv2D(f_out, kernel_size=1 if one_by_one else kernel, strides=1 if one_by_one else stride,
                      kernel_initializer=_initializer(_CONV_INIT), padding="same", use_bias=False,
                      name=name + "project_conv")(x)
    x = _bn(name + "project_bn")(x)
    if fused and expansion == 1:
        x = layers.Activation("swish", name=name + "project_activation")(x)
    if stride == 1 and f_in == f_out:
        if drop_rate:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.Add(name=name + "add")([x, inputs])
    return x


def build(variant: str, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
          include_preprocessing, name):
    """EfficientNetV2{variant} as Keras builds it; see `flexflow_keras.applications` for the arguments."""
    from flexflow_keras import layers

    who = f"EfficientNetV2{variant.upper()}"
    stages, width, depth, default_size = VARIANTS[variant]
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, default_size, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)

    def round_filters(filters: float) -> int:
        return int(max(8, int(filters * width + 4) // 8 * 8))

    x = img_input
    if include_preprocessing:
        if variant.startswith("b") and shape[-1] == 3:
            x = layers.Rescaling(scale=1.0 / 255)(x)
            x = layers.Normalization(mean=[0.485, 0.456, 0.406], variance=[0.229 ** 2, 0.224 ** 2, 0.225 ** 2],
                                     axis=3)(x)
        else:
            x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)
    x = layers.Conv2D(round_filters(stages[0][2]), kernel_size=3, strides=2, kernel_initializer=_initializer(_CONV_INIT),
                      padding="same", use_bias=False, name="stem_conv")(x)
    x = _bn("stem_bn")(x)
    x = layers.Activation("swish", name="stem_activation")(x)
    total = float(sum(stage[1] for stage in stages))
    b = 0
    for i, (kernel, repeats, f_in, f_out, expansion, se_ratio, stride, fused) in enumerate(stages):
        f_in, f_out = round_filters(f_in), round_filters(f_out)
        for j in range(int(math.ceil(depth * repeats))):
            x = _block(x, fused, kernel, f_in if j == 0 else f_out, f_out, expansion, se_ratio, stride if j == 0 else 1,
                       0.2 * b / total, f"block{i + 1}{chr(j + 97)}_")
            b += 1
    x = layers.Conv2D(round_filters(1280), kernel_size=1, strides=1, kernel_initializer=_initializer(_CONV_INIT),
                      padding="same", use_bias=False, name="top_conv")(x)
    x = _bn("top_bn")(x)
    x = layers.Activation("swish", name="top_activation")(x)

    def top(x):
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        x = layers.Dropout(0.2, name="top_dropout")(x)
        return layers.Dense(classes, activation=classifier_activation, kernel_initializer=_initializer(_DENSE_INIT),
                            bias_initializer="zeros", name="predictions")(x)

    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, top)
    file_name = f"efficientnetv2-{variant}{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name,
                         f"{_common.WEIGHTS_BASE}efficientnet_v2/{file_name}")
    return model
