"""`keras.applications.vgg19`: the VGG19 model and its ImageNet preprocessing ('caffe' mode)."""

from __future__ import annotations

from flexflow_keras.applications import _common, _vgg, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["VGG19", "decode_predictions", "preprocess_input"]


VGG19 = _common.entry(__name__, "VGG19", "vgg19", _vgg.build, (2, 2, 4, 4, 4), "vgg19")


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of VGG19: RGB to BGR, then ImageNet's mean subtracted per channel."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
