"""tf.keras 2's `keras.layers.experimental`: `RandomFourierFeatures` lives here; any other name (Keras 2
kept a few layers here before they graduated) is looked up in `flexflow_keras.layers`."""

from flexflow_keras.layers.keras2_paths import module_getattr
from flexflow_keras.layers.random_fourier import RandomFourierFeatures

__all__ = ["RandomFourierFeatures"]

__getattr__ = module_getattr(__name__)
