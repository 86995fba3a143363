"""`keras.applications.efficientnet_v2`: EfficientNetV2B0 to B3, S, M and L. These models rescale their
input themselves (`include_preprocessing`), so `preprocess_input` passes images (values in [0, 255])
through unchanged."""

from __future__ import annotations

from flexflow_keras.applications import _efficientnet_v2
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L",
           "decode_predictions", "preprocess_input"]


def EfficientNetV2B0(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                     pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                     name="efficientnetv2-b0"):
    """EfficientNetV2B0 as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("b0", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def EfficientNetV2B1(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                     pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                     name="efficientnetv2-b1"):
    """EfficientNetV2B1 as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("b1", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def EfficientNetV2B2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                     pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                     name="efficientnetv2-b2"):
    """EfficientNetV2B2 as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("b2", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def EfficientNetV2B3(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                     pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                     name="efficientnetv2-b3"):
    """EfficientNetV2B3 as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("b3", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def EfficientNetV2S(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                    pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                    name="efficientnetv2-s"):
    """EfficientNetV2S as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("s", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def EfficientNetV2M(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                    pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                    name="efficientnetv2-m"):
    """EfficientNetV2M as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("m", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def EfficientNetV2L(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                    pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                    name="efficientnetv2-l"):
    """EfficientNetV2L as Keras builds it (layer names and order included); `include_preprocessing`
    rescales [0, 255] inputs in the model; the other arguments are those of every application (see
    `flexflow_keras.applications`)."""
    return _efficientnet_v2.build("l", include_top, weights, input_tensor, input_shape, pooling, classes,
                                  classifier_activation, include_preprocessing, name)


def preprocess_input(x, data_format=None):
    """A pass-through, as in Keras: EfficientNetV2 models rescale their input themselves."""
    return x
