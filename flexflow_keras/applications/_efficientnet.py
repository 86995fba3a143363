"""The EfficientNet builder behind `efficientnet.EfficientNetB0..B7` (Tan & Le, 2019): MBConv blocks
(expansion, depthwise convolution, squeeze-and-excitation, projection) scaled in width, depth and input
size per variant, with Keras' layer names and initializers. The model rescales and normalizes its own
input (its `preprocess_input` passes images through)."""

from __future__ import annotations

import math

from flexflow_keras.applications import _common
from flexflow_keras.applications.imagenet_utils import correct_pad

# (kernel, repeats, filters in, filters out, expansion, stride) of B0's seven stages; se_ratio 0.25
_STAGES = ((3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2), (3, 3, 40, 80, 6, 2),
           (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2), (3, 1, 192, 320, 6, 1))
# variant: (width coefficient, depth coefficient, default size, dropout rate)
VARIANTS = {0: (1.0, 1.0, 224, 0.2), 1: (1.0, 1.1, 240, 0.2), 2: (1.1, 1.2, 260, 0.3), 3: (1.2, 1.4, 300, 0.3),
            4: (1.4, 1.8, 380, 0.4), 5: (1.6, 2.2, 456, 0.4), 6: (1.8, 2.6, 528, 0.5), 7: (2.0, 3.1, 600, 0.5)}
_IMAGENET_MEAN_RGB = (0.485, 0.456, 0.406)
_IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)
_CONV_INIT = {"class_name": "VarianceScaling",
              "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
_DENSE_INIT = {"class_name": "VarianceScaling",
               "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}


def _initializer(spec):
    from flexflow_keras import initializers

    return initializers.get(spec)


def _block(x, name: str, filters_in: int, filters_out: int, kernel: int, stride: int, expansion: int,
           drop_rate: float):
    from flexflow_keras import layers

    inputs = x
    filters = filters_in * expansion
    if expansion != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=_initializer(_CONV_INIT),
                          name=name + "expand_conv")(x)
        x = layers.BatchNormalization(axis=3, name=name + "expand_bn")(x)
        x = layers.Activation("swish", name=name + "expand_activation")(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel), name=name + "dwconv_pad")(x)
    x = layers.DepthwiseConv2D(kernel, strides=stride, padding="valid" if stride == 2 else "same", use_bias=False,
                               depthwise_initializer=_initializer(_CONV_INIT), name=name + "dwconv")(x)
    x = layers.BatchNormalization(axis=3, name=name + "bn")(x)
    x = layers.Activation("swish", name=name + "activation")(x)
    # squeeze and excitation
    squeezed = max(1, int(filters_in * 0.25))
    se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
    se = layers.Conv2D(squeezed, 1, padding="same", activation="swish", kernel_initializer=_initializer(_CONV_INIT),
                       name=name + "se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=_initializer(_CONV_INIT),
                       name=name + "se_expand")(se)
    x = layers.Multiply(name=name + "se_excite")([x, se])
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False, kernel_initializer=_initializer(_CONV_INIT),
                      name=name + "project_conv")(x)
    x = layers.BatchNormalization(axis=3, name=name + "project_bn")(x)
    if stride == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.Add(name=name + "add")([x, inputs])
    return x


def build(variant: int, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
          name=None):
    """EfficientNetB{variant} as Keras builds it; see `flexflow_keras.applications` for the arguments."""
    from flexflow_keras import layers

    who = f"EfficientNetB{variant}"
    width, depth, default_size, dropout_rate = VARIANTS[variant]
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, default_size, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)

    def round_filters(filters: float, divisor: int = 8) -> int:
        filters *= width
        new = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        return int(new + divisor if new < 0.9 * filters else new)

    def round_repeats(repeats: int) -> int:
        return int(math.ceil(depth * repeats))

    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=3)(x)
    if weights == "imagenet":
        # Keras' files store the variance as the standard deviation, so the input is divided once more
        x = layers.Rescaling([1.0 / math.sqrt(s) for s in _IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=_initializer(_CONV_INIT), name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, name="stem_bn")(x)
    x = layers.Activation("swish", name="stem_activation")(x)
    total = float(sum(round_repeats(stage[1]) for stage in _STAGES))
    b = 0
    for i, (kernel, repeats, f_in, f_out, expansion, stride) in enumerate(_STAGES):
        f_in, f_out = round_filters(f_in), round_filters(f_out)
        for j in range(round_repeats(repeats)):
            x = _block(x, f"block{i + 1}{chr(j + 97)}_", f_in if j == 0 else f_out, f_out, kernel,
                       stride if j == 0 else 1, expansion, 0.2 * b / total)
            b += 1
    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=_initializer(_CONV_INIT), name="top_conv")(x)
    x = layers.BatchNormalization(axis=3, name="top_bn")(x)
    x = layers.Activation("swish", name="top_activation")(x)

    def top(x):
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        return layers.Dense(classes, activation=classifier_activation, kernel_initializer=_initializer(_DENSE_INIT),
                            name="predictions")(x)

    model = _common.finish(x, img_input, sources, name or f"efficientnetb{variant}", include_top, pooling, classes,
                           classifier_activation, weights, top)
    file_name = f"efficientnetb{variant}{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"https://storage.googleapis.com/keras-applications/"
                         f"{file_name}")
    return model
