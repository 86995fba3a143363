"""Keras 2's `keras.engine.topology` (its layer and network classes): see `flexflow_keras.engine`."""

from flexflow_keras.engine import Input, InputLayer, InputSpec, Layer, Model

Network = Model  # Keras 2's graph-of-layers base class of Model

__all__ = ["Input", "InputLayer", "InputSpec", "Layer", "Model", "Network"]
