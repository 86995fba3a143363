"""`keras.applications.efficientnet`: EfficientNetB0 to B7. These models rescale and normalize their
input themselves, so `preprocess_input` passes images (values in [0, 255]) through unchanged."""

from __future__ import annotations

from flexflow_keras.applications import _common, _efficientnet
from flexflow_keras.applications.imagenet_utils import decode_predictions

__all__ = ["EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "decode_predictions",
           "preprocess_input"]


EfficientNetB0 = _common.entry(__name__, "EfficientNetB0", "efficientnetb0", _efficientnet.build, 0,
                               doc=" (input 224x224x3 by default)")
EfficientNetB1 = _common.entry(__name__, "EfficientNetB1", "efficientnetb1", _efficientnet.build, 1,
                               doc=" (input 240x240x3 by default)")
EfficientNetB2 = _common.entry(__name__, "EfficientNetB2", "efficientnetb2", _efficientnet.build, 2,
                               doc=" (input 260x260x3 by default)")
EfficientNetB3 = _common.entry(__name__, "EfficientNetB3", "efficientnetb3", _efficientnet.build, 3,
                               doc=" (input 300x300x3 by default)")
EfficientNetB4 = _common.entry(__name__, "EfficientNetB4", "efficientnetb4", _efficientnet.build, 4,
                               doc=" (input 380x380x3 by default)")
EfficientNetB5 = _common.entry(__name__, "EfficientNetB5", "efficientnetb5", _efficientnet.build, 5,
                               doc=" (input 456x456x3 by default)")
EfficientNetB6 = _common.entry(__name__, "EfficientNetB6", "efficientnetb6", _efficientnet.build, 6,
                               doc=" (input 528x528x3 by default)")
EfficientNetB7 = _common.entry(__name__, "EfficientNetB7", "efficientnetb7", _efficientnet.build, 7,
                               doc=" (input 600x600x3 by default)")


def preprocess_input(x, data_format=None):
    """A pass-through, as in Keras: EfficientNet models rescale and normalize their input themselves."""
    return x
