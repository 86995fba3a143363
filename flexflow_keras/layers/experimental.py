"""tf.keras 2's `keras.layers.experimental`: `RandomFourierFeatures` lives here; any other name (Keras 2
kept a few layers here before they graduated) is looked up in `flexflow_keras.layers`. Its
`preprocessing` submodule (``from tensorflow.keras.layers.experimental.preprocessing import
StringLookup``, TensorFlow 2.3-2.5's path for the preprocessing layers) is made by keras2_paths' finder,
every name looked up in `flexflow_keras.layers` too."""

import importlib

from flexflow_keras.layers.keras2_paths import module_getattr
from flexflow_keras.layers.random_fourier import RandomFourierFeatures

__all__ = ["RandomFourierFeatures"]
__path__: list[str] = []  # a package, so that `experimental.preprocessing` can be imported

_lookup = module_getattr(__name__)


def __getattr__(name: str):
    if name == "preprocessing":
        return importlib.import_module(f"{__name__}.preprocessing")
    return _lookup(name)
