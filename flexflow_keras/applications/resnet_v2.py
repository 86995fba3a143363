"""`keras.applications.resnet_v2`: ResNet50V2, ResNet101V2, ResNet152V2 and their ImageNet preprocessing ('tf' mode)."""

from __future__ import annotations

from flexflow_keras.applications import _common, _resnet, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["ResNet101V2", "ResNet152V2", "ResNet50V2", "decode_predictions", "preprocess_input"]


ResNet50V2 = _common.entry(__name__, "ResNet50V2", "resnet50v2", _resnet.build, 50, True)
ResNet101V2 = _common.entry(__name__, "ResNet101V2", "resnet101v2", _resnet.build, 101, True)
ResNet152V2 = _common.entry(__name__, "ResNet152V2", "resnet152v2", _resnet.build, 152, True)


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of these models: pixels scaled from [0, 255] to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
