"""The VGG builder behind `vgg16.VGG16` and `vgg19.VGG19` (Simonyan & Zisserman, 2015): five blocks of
3x3 convolutions and 2x2 max pooling, then (with the top) two 4096-unit Dense layers and the classifier."""

from __future__ import annotations

from flexflow_keras.applications import _common


def build(convs_per_block: tuple[int, ...], weights_file: str, include_top, weights, input_tensor, input_shape,
          pooling, classes, classifier_activation, name):
    from flexflow_keras import layers

    who = weights_file.upper()
    _common.check_args(who, weights, include_top, classes, pooling, classifier_activation)
    shape = _common.input_shape_for(who, input_shape, 224, 32, include_top, weights)
    img_input, sources = _common.model_input(input_tensor, shape)
    x = img_input
    for block, (filters, n) in enumerate(zip((64, 128, 256, 512, 512), convs_per_block, strict=True), start=1):
        for i in range(1, n + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{i}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)

    def top(x):
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)

    model = _common.finish(x, img_input, sources, name, include_top, pooling, classes, classifier_activation,
                           weights, top, pool_names=(None, None))
    file_name = f"{weights_file}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    _common.load_weights(model, f"{who}()", weights, file_name, f"{_common.WEIGHTS_BASE}{weights_file}/{file_name}")
    return model
