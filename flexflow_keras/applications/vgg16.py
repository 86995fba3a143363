"""`keras.applications.vgg16`: the VGG16 model and its ImageNet preprocessing ('caffe' mode)."""

from __future__ import annotations

from flexflow_keras.applications import _common, _vgg, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["VGG16", "decode_predictions", "preprocess_input"]


VGG16 = _common.entry(__name__, "VGG16", "vgg16", _vgg.build, (2, 2, 3, 3, 3), "vgg16")


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of VGG16: RGB to BGR, then ImageNet's mean subtracted per channel."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
