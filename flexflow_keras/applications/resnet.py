"""`keras.applications.resnet`: ResNet50, ResNet101, ResNet152 and their ImageNet preprocessing ('caffe' mode)."""

from __future__ import annotations

from flexflow_keras.applications import _common, _resnet, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["ResNet101", "ResNet152", "ResNet50", "decode_predictions", "preprocess_input"]


ResNet50 = _common.entry(__name__, "ResNet50", "resnet50", _resnet.build, 50, False)
ResNet101 = _common.entry(__name__, "ResNet101", "resnet101", _resnet.build, 101, False)
ResNet152 = _common.entry(__name__, "ResNet152", "resnet152", _resnet.build, 152, False)


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of these models: RGB to BGR, then ImageNet's mean subtracted per channel."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
