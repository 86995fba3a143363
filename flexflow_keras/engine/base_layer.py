"""Keras 2's `keras.engine.base_layer`: see `flexflow_keras.engine`."""

from flexflow_keras.engine import InputSpec, Layer

__all__ = ["InputSpec", "Layer"]
