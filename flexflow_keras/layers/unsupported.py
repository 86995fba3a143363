"""Keras 3 layers that flexflow_keras does not have yet: asking for one (`keras.layers.TextVectorization`)
is an `UnsupportedLayerError` that says so and what to do instead, not a bare AttributeError."""

from __future__ import annotations

from flexflow_keras.errors import FlexFlowKerasError


class UnsupportedLayerError(FlexFlowKerasError, AttributeError):
    """A Keras layer flexflow_keras does not implement (an AttributeError, so `hasattr` stays False)."""


_HINTS = {
    **dict.fromkeys(("JaxLayer", "FlaxLayer", "TorchModuleWrapper", "TFSMLayer"),
                    "it wraps another framework's code, which flexflow_keras cannot run in its graph"),
    **dict.fromkeys(("RandomHeight", "RandomWidth"),
                    "in training it resizes each batch to a new random size, and flexflow_keras records its graph "
                    "at sizes fixed before the step runs. RandomZoom(height_factor, width_factor) scales the "
                    "images' content at a fixed size instead, or drop the layer (it is the identity in "
                    "inference)"),
}
# The rest of Keras 3.15's layers that flexflow_keras does not have.
_OTHERS = ("AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
           "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D", "AugMix", "AutoContrast",
           "ContrastLimitedAdaptiveHistogramEqualization", "Convolution1DTranspose",
           "CutMix", "Equalization", "MaxNumBoundingBoxes", "MelSpectrogram",
           "MixUp", "Pipeline", "RandAugment", "RandomColorDegeneration", "RandomColorJitter",
           "RandomElasticTransform", "RandomErasing", "RandomGaussianBlur", "RandomGrayscale", "RandomHue",
           "RandomInvert", "RandomPerspective", "RandomPosterization", "RandomSaturation", "RandomSharpness",
           "RandomShear", "ReversibleEmbedding", "Solarization", "SpectralNormalization",
           "Wrapper")
UNSUPPORTED = frozenset(_HINTS) | frozenset(_OTHERS)


def error(name: str) -> UnsupportedLayerError:
    """The error for `keras.layers.<name>`, a Keras layer flexflow_keras does not implement."""
    why = _HINTS.get(name, "it is not implemented yet")
    return UnsupportedLayerError(f"keras.layers.{name} is a Keras layer flexflow_keras does not have: {why}. "
                                 f"Build the model from the layers flexflow_keras has (keras.layers.__all__), or "
                                 f"run this script with Keras itself.")
