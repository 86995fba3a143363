"""`keras.models`: `Model` (functional and subclassed), `Sequential`, and model (de)serialization."""

from flexflow_keras.models.functional import Functional
from flexflow_keras.models.model import Model
from flexflow_keras.models.sequential import Sequential

__all__ = ["Functional", "Model", "Sequential"]
