"""Keras 2's `keras.engine` import paths (`from keras.engine.topology import Layer`, `keras.engine.Layer`,
`keras.engine.base_layer.InputSpec`, `keras.engine.training.Model`), which Keras 2 era custom-layer
scripts and tutorials use: the same classes as `flexflow_keras.layers` and `flexflow_keras.Model`."""

from flexflow_keras.layers import Input, InputLayer, InputSpec, Layer
from flexflow_keras.models import Model, Sequential

__all__ = ["Input", "InputLayer", "InputSpec", "Layer", "Model", "Sequential"]
