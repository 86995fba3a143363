"""`keras.applications.mobilenet`: MobileNet and its ImageNet preprocessing ('tf' mode: [-1, 1])."""

from __future__ import annotations

from flexflow_keras.applications import _mobilenet, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["MobileNet", "decode_predictions", "preprocess_input"]


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3, include_top=True,  # noqa: N802
              weights="imagenet", input_tensor=None, pooling=None, classes=1000, classifier_activation="softmax",
              name=None):
    """MobileNet as Keras builds it (layer names and order included); `alpha` scales every layer's width,
    `depth_multiplier` the depthwise convolutions', `dropout` is the top's rate; the other arguments are
    those of every application (see `flexflow_keras.applications`)."""
    return _mobilenet.build_v1(alpha, depth_multiplier, dropout, include_top, weights, input_tensor, input_shape,
                               pooling, classes, classifier_activation, name)


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of MobileNet: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
