"""What every `keras.applications` builder shares: the checks of its arguments (weights, classes,
classifier activation, pooling), the input shape rules of Keras' `obtain_input_shape`, the input tensor,
the classifier or pooling top, and ImageNet weights read from the Keras cache.

Nothing is downloaded: `weights="imagenet"` reads the file Keras itself would have cached
(``$KERAS_HOME/models`` or ``~/.keras/models``, Keras' file names); when it is not there the error names
the file, where to put it and the address Keras fetches it from. Weights files of Keras 2 / tf.keras
(the ImageNet files are those) load by the position of each layer that holds weights, as in Keras, so the
builders create layers in Keras' order, under Keras' names.
"""

from __future__ import annotations

import logging
import os

from flexflow_keras import activations, backend
from flexflow_keras.errors import DataError, MissingFileError

log = logging.getLogger("flexflow_keras")

WEIGHTS_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/"


def check_args(model: str, weights, include_top: bool, classes: int, pooling=None,
               classifier_activation="softmax") -> None:
    """Keras' checks of the arguments shared by every application, with the model's name in front."""
    if not (weights in {"imagenet", None} or (isinstance(weights, (str, os.PathLike)) and os.path.exists(weights))):
        if isinstance(weights, (str, os.PathLike)) and str(weights) != "imagenet":
            raise MissingFileError(
                f"{model}(): the weights file {weights} does not exist. Pass weights=None (random "
                "initialization), weights='imagenet' (ImageNet weights from the Keras cache) or the path of "
                "an existing weights file.")
        raise ValueError(f"{model}(): the `weights` argument should be either None (random initialization), "
                         f"'imagenet' (pre-training on ImageNet), or the path to the weights file to be loaded. "
                         f"Received: weights={weights!r}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(f"{model}(): with weights='imagenet' and include_top=True, `classes` should be 1000 "
                         f"(ImageNet's). Received classes={classes}. For another number of classes pass "
                         "include_top=False and put your own classifier on top.")
    if pooling not in (None, "avg", "max"):
        raise ValueError(f"{model}(): `pooling` should be None, 'avg' or 'max'. Received: pooling={pooling!r}")
    if include_top:
        validate_activation(model, classifier_activation, weights)
    if backend.image_data_format() != "channels_last":
        raise ValueError(f"{model}(): flexflow_keras builds the applications in channels_last layout only; "
                         f"keras.config.image_data_format() is {backend.image_data_format()!r}. Call "
                         "keras.config.set_image_data_format('channels_last').")


def validate_activation(model: str, classifier_activation, weights) -> None:
    """Pretrained classifiers allow only softmax or no activation (their weights were trained so)."""
    if weights is None:
        return
    if activations.get(classifier_activation) not in (activations.get("softmax"), activations.get(None)):
        raise ValueError(f"{model}(): only None and 'softmax' are allowed for `classifier_activation` when "
                         "using pretrained weights with include_top=True. Received: "
                         f"classifier_activation={classifier_activation!r}")


def input_shape_for(model: str, input_shape, default_size: int, min_size: int, require_flatten: bool,
                    weights) -> tuple:
    """The model's input shape (Keras' `obtain_input_shape`, channels_last): a given shape is checked, a
    missing one is the default size with a top (`require_flatten`) and open height and width without."""
    if input_shape is not None:
        input_shape = tuple(input_shape)
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        if input_shape[-1] not in (1, 3):
            log.warning("%s(): this model usually expects 1 or 3 input channels; input_shape %s has %s.", model,
                        input_shape, input_shape[-1])
        default_shape = (default_size, default_size, input_shape[-1])
    else:
        default_shape = (default_size, default_size, 3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and input_shape != default_shape:
            raise ValueError(f"{model}(): with include_top=True and weights='imagenet', `input_shape` should be "
                             f"{default_shape}. Received: input_shape={input_shape}. Pass include_top=False to "
                             "use another image size.")
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError(f"{model}(): `input_shape` must be a tuple of three integers (height, width, "
                             f"channels). Received: input_shape={input_shape}")
        if input_shape[-1] != 3 and weights == "imagenet":
            raise ValueError(f"{model}(): ImageNet weights need 3 input channels. Received: "
                             f"input_shape={input_shape}")
        if any(s is not None and s < min_size for s in input_shape[:2]):
            raise ValueError(f"{model}(): input size must be at least {min_size}x{min_size}. Received: "
                             f"input_shape={input_shape}")
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError(f"{model}(): with include_top=True, specify a static `input_shape`. Received: "
                         f"input_shape={input_shape}")
    return input_shape


def model_input(input_tensor, input_shape):
    """(the tensor the network starts from, the model's inputs): a new Input, or `input_tensor` and the
    Input(s) it comes from."""
    from flexflow_keras.layers.input_layer import Input

    if input_tensor is None:
        return Input(shape=input_shape), None
    if not backend.is_keras_tensor(input_tensor):
        raise ValueError("keras.applications: `input_tensor` must be a symbolic tensor (keras.Input(...) or a "
                         f"layer's output). Received: {type(input_tensor).__name__}. Pass input_shape= for "
                         "arrays.")
    from flexflow_keras.layers.node import get_source_inputs

    return input_tensor, get_source_inputs(input_tensor)


def finish(x, img_input, sources, name: str, include_top: bool, pooling, classes: int, classifier_activation,
           weights, top=None, pool_names=("avg_pool", "max_pool")):
    """The top (the `top(x)` classifier, or `pooling`) and the Model; pool layers are named `pool_names`
    (None: Keras' automatic names)."""
    from flexflow_keras import layers
    from flexflow_keras.models.functional import Model

    if include_top:
        x = top(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D(name=pool_names[0])(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D(name=pool_names[1])(x)
    # with input_tensor, the Inputs behind it as a list (model.input is then a list, as in Keras)
    return Model(sources if sources is not None else img_input, x, name=name)


def dense_top(classes: int, classifier_activation, pool_name: str | None = "avg_pool", **dense_kwargs):
    """The usual classifier: global average pooling, then a Dense `predictions` layer."""
    from flexflow_keras import layers

    def top(x):
        x = layers.GlobalAveragePooling2D(name=pool_name)(x)
        return layers.Dense(classes, activation=classifier_activation, name="predictions", **dense_kwargs)(x)

    return top


def cached_file(who: str, file_name: str, origin: str, what: str = "ImageNet weights") -> str:
    """The path of `file_name` in the Keras models cache; a MissingFileError naming where to put it."""
    from flexflow_keras.utils.files import keras_cache_dirs

    dirs = keras_cache_dirs("models")
    for d in dirs:
        path = os.path.join(d, file_name)
        if os.path.exists(path):
            return path
    raise MissingFileError(
        f"{who}: the {what} file {file_name} is not in the Keras cache ({', '.join(dirs)}), and flexflow_keras "
        f"never downloads. Fetch it where there is internet ({origin}) and copy it to {dirs[0]}/, or pass "
        "weights=None (random initialization) or weights='/path/to/weights.h5'.")


def load_weights(model, who: str, weights, file_name: str | None = None, origin: str | None = None) -> None:
    """Load `weights` into `model`: 'imagenet' from the cache (`file_name`, fetched by Keras from `origin`),
    or a path the user gave; None leaves the random initialization."""
    if weights is None:
        return
    if weights == "imagenet":
        if file_name is None:
            raise ValueError(f"{who}: there are no ImageNet weights for this configuration; pass weights=None.")
        path = cached_file(who, file_name, origin)
        log.info("%s: loading ImageNet weights from %s", who, path)
    else:
        path = os.fspath(weights)
    try:
        model.load_weights(path)
    except DataError:
        raise
    except ValueError as e:
        raise ValueError(f"{who}: {path} does not fit this model: {e}") from e


def entry(module: str, public: str, default_name: str, build, *build_args, doc: str = ""):
    """A Keras application function with Keras' usual signature (`include_top, weights, input_tensor,
    input_shape, pooling, classes, classifier_activation, name`) that calls `build(*build_args, ...)`."""
    def application(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                    classes=1000, classifier_activation="softmax", name=default_name):
        return build(*build_args, include_top, weights, input_tensor, input_shape, pooling, classes,
                     classifier_activation, name)

    return publish(application, module, public, doc)


def publish(application, module: str, public: str, doc: str = "", extra: str = ""):
    """`application` named `public` in `module`, with the docstring of the applications (`doc` after the
    model's name, `extra` describing its own arguments)."""
    application.__name__ = application.__qualname__ = public
    application.__module__ = module
    application.__doc__ = (f"{public} as Keras builds it (layer names and order included){doc}; {extra}the "
                           f"{'other ' if extra else ''}arguments are those of every application (see "
                           "`flexflow_keras.applications`).")
    return application
