"""Keras 2's `keras.engine.training` (the Model class): see `flexflow_keras.engine`."""

from flexflow_keras.engine import Model

__all__ = ["Model"]
