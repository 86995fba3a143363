"""Keras 2's `keras.engine.input_layer`: see `flexflow_keras.engine`."""

from flexflow_keras.engine import Input, InputLayer

__all__ = ["Input", "InputLayer"]
