"""The DenseNet builder behind `densenet.DenseNet121/169/201` (Huang et al., 2017): dense blocks whose
layers each add 32 channels to everything before them, and transition blocks that halve the channels and
the image, with Keras' layer names."""

from __future__ import annotations

from flexflow_keras.applications import _common

_EPS = 1.001e-5
BLOCKS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}


def _conv_block(x, growth_rate: int, name: str):
    from flexflow_keras import layers

    x1 = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_0_bn")(x)
    x1 = layers.Activation("relu", name=name + "_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(x1)
    x1 = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_1_bn")(x1)
    x1 = layers.Activation("relu", name=name + "_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(x1)
    return layers.Concatenate(axis=3, name=name + "_concat")([x, x1])


def _transition_block(x, reduction: float, name: str):
    from flexflow_keras import layers

    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_bn")(x)
    x = layers.Activation("relu", name=name + "_relu")(x)
    x = layers.Conv2D(int(x.shape[3] * reduction), 1, use_bias=False, name=name + "_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def build(depth: int, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
          name=None):
    """DenseNet{depth} as Keras builds it; see `flexflow_keras.applications` for the arguments."""
    from flexflow_keras import layers

    who = f"DenseNet{depth}"
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 224, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    blocks = BLOCKS[depth]
    for i, n in enumerate(blocks):
        for j in range(n):
            x = _conv_block(x, 32, name=f"conv{i + 2}_block{j + 1}")
        if i < len(blocks) - 1:
            x = _transition_block(x, 0.5, name=f"pool{i + 2}")
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    model = _common.finish(x, img_input, sources, name or f"densenet{depth}", include_top, pooling, classes,
                           classifier_activation, weights, _common.dense_top(classes, classifier_activation))
    file_name = f"densenet{depth}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}densenet/{file_name}")
    return model
