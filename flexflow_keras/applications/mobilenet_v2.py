"""`keras.applications.mobilenet_v2`: MobileNetV2 and its ImageNet preprocessing ('tf' mode: [-1, 1])."""

from __future__ import annotations

from flexflow_keras.applications import _mobilenet, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["MobileNetV2", "decode_predictions", "preprocess_input"]


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax", name=None):
    """MobileNetV2 as Keras builds it (layer names and order included); `alpha` scales every layer's
    width; the other arguments are those of every application (see `flexflow_keras.applications`)."""
    return _mobilenet.build_v2(alpha, include_top, weights, input_tensor, input_shape, pooling, classes,
                               classifier_activation, name)


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of MobileNetV2: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
