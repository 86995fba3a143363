"""`keras.applications.mobilenet_v3`: MobileNetV3Small and MobileNetV3Large (Howard et al., 2019:
inverted residual blocks with squeeze-and-excitation and hard-swish), with Keras' layers, names and
order. The models rescale their own input (`include_preprocessing`), so `preprocess_input` passes
images (values in [0, 255]) through unchanged."""

from __future__ import annotations

import logging

from flexflow_keras.applications import _common
from flexflow_keras.applications._mobilenet import make_divisible
from flexflow_keras.applications.imagenet_utils import correct_pad, decode_predictions

__all__ = ["MobileNetV3Large", "MobileNetV3Small", "decode_predictions", "preprocess_input"]

log = logging.getLogger("flexflow_keras")
_BN = {"epsilon": 1e-3, "momentum": 0.999}

# (expansion, filters, kernel (0: the model's), stride, squeeze-excite, hard-swish (else relu)) per block
_SMALL = ((1, 16, 3, 2, True, False), (72 / 16, 24, 3, 2, False, False), (88 / 24, 24, 3, 1, False, False),
          (4, 40, 0, 2, True, True), (6, 40, 0, 1, True, True), (6, 40, 0, 1, True, True),
          (3, 48, 0, 1, True, True), (3, 48, 0, 1, True, True), (6, 96, 0, 2, True, True),
          (6, 96, 0, 1, True, True), (6, 96, 0, 1, True, True))
_LARGE = ((1, 16, 3, 1, False, False), (4, 24, 3, 2, False, False), (3, 24, 3, 1, False, False),
          (3, 40, 0, 2, True, False), (3, 40, 0, 1, True, False), (3, 40, 0, 1, True, False),
          (6, 80, 3, 2, False, True), (2.5, 80, 3, 1, False, True), (2.3, 80, 3, 1, False, True),
          (2.3, 80, 3, 1, False, True), (6, 112, 3, 1, True, True), (6, 112, 3, 1, True, True),
          (6, 160, 0, 2, True, True), (6, 160, 0, 1, True, True), (6, 160, 0, 1, True, True))


def _relu(x):
    from flexflow_keras import layers

    return layers.ReLU()(x)


def _hard_swish(x):
    from flexflow_keras import layers

    return layers.Activation("hard_swish")(x)


def _se_block(inputs, filters: int, prefix: str):
    from flexflow_keras import layers

    x = layers.GlobalAveragePooling2D(keepdims=True, name=prefix + "squeeze_excite_avg_pool")(inputs)
    x = layers.Conv2D(make_divisible(filters * 0.25), kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite_conv")(x)
    x = layers.ReLU(name=prefix + "squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", name=prefix + "squeeze_excite_conv_1")(x)
    x = layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)  # hard sigmoid, as Keras writes it
    return layers.Multiply(name=prefix + "squeeze_excite_mul")([inputs, x])


def _block(x, expansion: float, filters: int, kernel: int, stride: int, se: bool, activation, block_id: int):
    from flexflow_keras import layers

    shortcut = x
    in_filters = x.shape[-1]
    prefix = "expanded_conv_"
    if block_id:
        prefix = f"expanded_conv_{block_id}_"
        x = layers.Conv2D(make_divisible(in_filters * expansion), kernel_size=1, padding="same", use_bias=False,
                          name=prefix + "expand")(x)
        x = layers.BatchNormalization(axis=-1, name=prefix + "expand_bn", **_BN)(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel), name=prefix + "depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel, strides=stride, padding="same" if stride == 1 else "valid", use_bias=False,
                               name=prefix + "depthwise")(x)
    x = layers.BatchNormalization(axis=-1, name=prefix + "depthwise_bn", **_BN)(x)
    x = activation(x)
    if se:
        x = _se_block(x, make_divisible(in_filters * expansion), prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False, name=prefix + "project")(x)
    x = layers.BatchNormalization(axis=-1, name=prefix + "project_bn", **_BN)(x)
    if stride == 1 and in_filters == filters:
        x = layers.Add(name=prefix + "add")([shortcut, x])
    return x


def _build(model_type: str, plan, last_point_ch: int, input_shape, alpha, minimalistic, include_top, weights,
           input_tensor, classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name):
    from flexflow_keras import layers

    who = f"MobileNetV3{model_type.capitalize()}"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    if input_shape is None and input_tensor is not None:
        input_shape = (input_tensor.shape[2], input_tensor.shape[1], 3)
    input_shape = tuple(input_shape) if input_shape is not None else (None, None, 3)
    rows, cols = input_shape[0], input_shape[1]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"{who}(): input size must be at least 32x32. Received: input_shape={input_shape}")
    if weights == "imagenet":
        if (not minimalistic and alpha not in (0.75, 1.0)) or (minimalistic and alpha != 1.0):
            raise ValueError(f"{who}(): with weights='imagenet', alpha can be 0.75 or 1.0 (1.0 only with "
                             f"minimalistic=True). Received: alpha={alpha}, minimalistic={minimalistic}")
        if rows != cols or rows != 224:
            log.warning("%s(): `input_shape` is undefined or non-square, or `rows` is not 224. Weights for input "
                        "shape (224, 224) will be loaded as the default.", who)
    img_input, sources = _common.model_input(input_tensor, input_shape)
    kernel, activation, se_allowed = (3, _relu, False) if minimalistic else (5, _hard_swish, True)

    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False, name="conv")(x)
    x = layers.BatchNormalization(axis=-1, name="conv_bn", **_BN)(x)
    x = activation(x)
    for block_id, (expansion, filters, k, stride, se, swish) in enumerate(plan):
        x = _block(x, expansion, make_divisible(filters * alpha), k or kernel, stride, se and se_allowed,
                   activation if swish else _relu, block_id)
    last_conv_ch = make_divisible(x.shape[-1] * 6)
    if alpha > 1.0:
        last_point_ch = make_divisible(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False, name="conv_1")(x)
    x = layers.BatchNormalization(axis=-1, name="conv_1_bn", **_BN)(x)
    x = activation(x)

    def top(x):
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True, name="conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="logits")(x)
        x = layers.Flatten()(x)
        return layers.Activation(activation=classifier_activation, name="predictions")(x)

    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, top)
    variant = f"{model_type}{'_minimalistic' if minimalistic else ''}_224_{alpha}_float"
    file_name = f"weights_mobilenet_v3_{variant}{'' if include_top else '_no_top_v2'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}mobilenet_v3/{file_name}")
    return model


def MobileNetV3Small(input_shape=None, alpha=1.0, minimalistic=False, include_top=True, weights="imagenet",  # noqa: N802
                     input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True, name="MobileNetV3Small"):
    """MobileNetV3Small as Keras builds it (layer names and order included): `alpha` scales the widths,
    `minimalistic` drops squeeze-and-excitation, hard-swish and 5x5 kernels, `dropout_rate` is the top's,
    `include_preprocessing` rescales [0, 255] inputs to [-1, 1] in the model; the other arguments are those
    of every application (see `flexflow_keras.applications`)."""
    return _build("small", _SMALL, 1024, input_shape, alpha, minimalistic, include_top, weights, input_tensor,
                  classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name)


def MobileNetV3Large(input_shape=None, alpha=1.0, minimalistic=False, include_top=True, weights="imagenet",  # noqa: N802
                     input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True, name="MobileNetV3Large"):
    """MobileNetV3Large as Keras builds it; the arguments are MobileNetV3Small's."""
    return _build("large", _LARGE, 1280, input_shape, alpha, minimalistic, include_top, weights, input_tensor,
                  classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name)


def preprocess_input(x, data_format=None):
    """A pass-through, as in Keras: MobileNetV3 models rescale their input themselves."""
    return x
