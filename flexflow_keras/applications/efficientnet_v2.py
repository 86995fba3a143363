"""`keras.applications.efficientnet_v2`: EfficientNetV2B0 to B3, S, M and L. These models rescale their
input themselves (`include_preprocessing`), so `preprocess_input` passes images (values in [0, 255])
through unchanged."""

from __future__ import annotations

from flexflow_keras.applications import _common, _efficientnet_v2
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L",
           "decode_predictions", "preprocess_input"]


def _entry(variant: str):
    public = f"EfficientNetV2{variant.upper()}"

    def application(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                    classes=1000, classifier_activation="softmax", include_preprocessing=True,
                    name=f"efficientnetv2-{variant}"):
        return _efficientnet_v2.build(variant, include_top, weights, input_tensor, input_shape, pooling, classes,
                                      classifier_activation, include_preprocessing, name)

    return _common.publish(application, __name__, public, extra="`include_preprocessing` rescales [0, 255] inputs in the model; ")


EfficientNetV2B0 = _entry("b0")
EfficientNetV2B1 = _entry("b1")
EfficientNetV2B2 = _entry("b2")
EfficientNetV2B3 = _entry("b3")
EfficientNetV2S = _entry("s")
EfficientNetV2M = _entry("m")
EfficientNetV2L = _entry("l")


def preprocess_input(x, data_format=None):
    """A pass-through, as in Keras: EfficientNetV2 models rescale their input themselves."""
    return x
