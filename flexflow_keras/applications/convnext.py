"""`keras.applications.convnext`: ConvNeXtTiny, Small, Base, Large and XLarge (Liu et al., 2022: a
ResNet modernised with 7x7 depthwise convolutions, layer norm, GELU and layer scale) with Keras' layers,
names and order (the stem and downsampling blocks are nested Sequential models, as in Keras). The models
normalize their own input (`include_preprocessing`), so `preprocess_input` passes images (values in
[0, 255]) through unchanged."""

from __future__ import annotations

from flexflow_keras.applications import _common
from flexflow_keras.applications.imagenet_utils import decode_predictions
from flexflow_keras.layers.base import Layer
from flexflow_keras.utils.serialization import register_keras_serializable

__all__ = ["ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge", "LayerScale",
           "StochasticDepth", "decode_predictions", "preprocess_input"]

# variant: (blocks per stage, channels per stage)
VARIANTS = {"tiny": ((3, 3, 9, 3), (96, 192, 384, 768)), "small": ((3, 3, 27, 3), (96, 192, 384, 768)),
            "base": ((3, 3, 27, 3), (128, 256, 512, 1024)), "large": ((3, 3, 27, 3), (192, 384, 768, 1536)),
            "xlarge": ((3, 3, 27, 3), (256, 512, 1024, 2048))}


@register_keras_serializable(package="keras.applications")
class LayerScale(Layer):
    """Multiplies its input by a learned per-channel scale `gamma` (initialised to `init_values`)."""

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        from flexflow_keras import initializers

        self.gamma = self.add_weight(shape=(self.projection_dim,), initializer=initializers.Constant(self.init_values),
                                     trainable=True)

    def call(self, x):
        from flexflow_keras import ops

        return ops.multiply(x, self.gamma)

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values, "projection_dim": self.projection_dim}


@register_keras_serializable(package="keras.applications")
class StochasticDepth(Layer):
    """Drops a whole residual branch per sample with probability `drop_path_rate` in training (scaling the
    kept ones by 1 / (1 - rate)), as Dropout with one draw per sample; the identity at inference."""

    def __init__(self, drop_path_rate, **kwargs):
        from flexflow_keras.utils import rng

        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate
        self._seed = rng.make_seed()

    def call(self, x, training=None):
        from flexflow_keras import ops

        if not self.drop_path_rate:
            return x
        return ops.dropout(x, self.drop_path_rate, seed=self._seed,
                           noise_shape=(None,) + (1,) * (len(x.shape) - 1), training=training)

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


def _block(x, dim: int, drop_path_rate: float, layer_scale: float | None, name: str):
    from flexflow_keras import layers

    inputs = x
    x = layers.Conv2D(dim, kernel_size=7, padding="same", groups=dim, name=name + "_depthwise_conv")(x)
    x = layers.LayerNormalization(epsilon=1e-6, name=name + "_layernorm")(x)
    x = layers.Dense(4 * dim, name=name + "_pointwise_conv_1")(x)
    x = layers.Activation("gelu", name=name + "_gelu")(x)
    x = layers.Dense(dim, name=name + "_pointwise_conv_2")(x)
    if layer_scale is not None:
        x = LayerScale(layer_scale, dim, name=name + "_layer_scale")(x)
    if drop_path_rate:
        branch = StochasticDepth(drop_path_rate, name=name + "_stochastic_depth")
    else:
        branch = layers.Activation("linear", name=name + "_identity")
    return inputs + branch(x)


def _build(variant: str, include_top, include_preprocessing, weights, input_tensor, input_shape, pooling, classes,
           classifier_activation, name):
    from flexflow_keras import layers
    from flexflow_keras.models.sequential import Sequential

    who = f"ConvNeXt{variant.capitalize() if variant != 'xlarge' else 'XLarge'}"
    depths, dims = VARIANTS[variant]
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 224, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = img_input
    if include_preprocessing and shape[-1] == 3:
        x = layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                 variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2],
                                 name=f"{name}_prestem_normalization")(x)
    stages = [Sequential([layers.Conv2D(dims[0], kernel_size=4, strides=4, name=f"{name}_stem_conv"),
                          layers.LayerNormalization(epsilon=1e-6, name=f"{name}_stem_layernorm")],
                         name=f"{name}_stem")]
    for i in range(3):
        stages.append(Sequential([
            layers.LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
            layers.Conv2D(dims[i + 1], kernel_size=2, strides=2, name=f"{name}_downsampling_conv_{i}")],
            name=f"{name}_downsampling_block_{i}"))
    for i in range(4):
        x = stages[i](x)
        for j in range(depths[i]):  # Keras' public models train without drop path (rate 0: an identity layer)
            x = _block(x, dims[i], 0.0, 1e-6, f"{name}_stage_{i}_block_{j}")

    def top(x):
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_head_layernorm")(x)
        return layers.Dense(classes, activation=classifier_activation, name=f"{name}_head_dense")(x)

    if not include_top:  # Keras normalizes the features (pooled or not) with a final layer norm
        if pooling == "avg":
            x = layers.GlobalAveragePooling2D()(x)
        elif pooling == "max":
            x = layers.GlobalMaxPooling2D()(x)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
    model = _common.finish(x, img_input, sources, name, include_top, None, classes, classifier_activation,
                           weights, top)
    if weights == "imagenet" and f"convnext_{variant}" not in name:
        raise ValueError(f"{who}(): with weights='imagenet' the model name must contain 'convnext_{variant}' (its "
                         f"layers are named after the model, as in the weights file). Received: name={name!r}")
    file_name = f"{name}{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}convnext/{file_name}")
    return model


def _entry(variant: str):
    public = f"ConvNeXt{variant.capitalize() if variant != 'xlarge' else 'XLarge'}"

    def application(include_top=True, include_preprocessing=True, weights="imagenet", input_tensor=None,
                    input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
                    name=f"convnext_{variant}"):
        return _build(variant, include_top, include_preprocessing, weights, input_tensor, input_shape, pooling,
                      classes, classifier_activation, name)

    return _common.publish(application, __name__, public, extra="`include_preprocessing` normalizes [0, 255] inputs in the model; ")


ConvNeXtTiny = _entry("tiny")
ConvNeXtSmall = _entry("small")
ConvNeXtBase = _entry("base")
ConvNeXtLarge = _entry("large")
ConvNeXtXLarge = _entry("xlarge")


def preprocess_input(x, data_format=None):
    """A pass-through, as in Keras: ConvNeXt models normalize their input themselves."""
    return x
