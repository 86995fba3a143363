"""`keras.models`: `Model` (functional and subclassed), `Sequential`, and whole-model files."""

from flexflow_keras.models.cloning import clone_model, model_from_json
from flexflow_keras.models.functional import Functional
from flexflow_keras.models.model import Model
from flexflow_keras.models.sequential import Sequential
from flexflow_keras.saving import load_model, save_model

__all__ = ["Functional", "Model", "Sequential", "clone_model", "load_model", "model_from_json", "save_model"]
