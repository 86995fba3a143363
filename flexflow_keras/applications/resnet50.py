"""`keras.applications.resnet50`: ResNet50 and its ImageNet preprocessing (Keras 2's module path)."""

from flexflow_keras.applications.imagenet_utils import decode_predictions
from flexflow_keras.applications.resnet import ResNet50, preprocess_input

__all__ = ["ResNet50", "decode_predictions", "preprocess_input"]
