"""`keras.applications.efficientnet`: EfficientNetB0 to B7. These models rescale and normalize their
input themselves, so `preprocess_input` passes images (values in [0, 255]) through unchanged."""

from __future__ import annotations

from flexflow_keras.applications import _common, _efficientnet
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "decode_predictions",
           "preprocess_input"]


def _entry(variant: int):
    size = _efficientnet.VARIANTS[variant][2]
    return _common.entry(__name__, f"EfficientNetB{variant}", f"efficientnetb{variant}", _efficientnet.build, variant,
                         doc=f" (input {size}x{size}x3 by default)")


EfficientNetB0 = _entry(0)
EfficientNetB1 = _entry(1)
EfficientNetB2 = _entry(2)
EfficientNetB3 = _entry(3)
EfficientNetB4 = _entry(4)
EfficientNetB5 = _entry(5)
EfficientNetB6 = _entry(6)
EfficientNetB7 = _entry(7)


def preprocess_input(x, data_format=None):
    """A pass-through, as in Keras: EfficientNet models rescale and normalize their input themselves."""
    return x
