"""`keras.applications.densenet`: DenseNet121, DenseNet169, DenseNet201 and their ImageNet preprocessing
('torch' mode: [0, 1], then ImageNet's mean and standard deviation per channel)."""

from __future__ import annotations

from flexflow_keras.applications import _common, _densenet, imagenet_utils
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "decode_predictions", "preprocess_input"]


DenseNet121 = _common.entry(__name__, "DenseNet121", "densenet121", _densenet.build, 121)
DenseNet169 = _common.entry(__name__, "DenseNet169", "densenet169", _densenet.build, 169)
DenseNet201 = _common.entry(__name__, "DenseNet201", "densenet201", _densenet.build, 201)


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing of DenseNet: pixels scaled to [0, 1], then normalized per channel by ImageNet's
    mean and standard deviation."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")
