"""`keras.utils.np_utils` (Keras 2's path): `to_categorical` and `normalize`."""

from flexflow_keras.utils.numerical import normalize, to_categorical

__all__ = ["normalize", "to_categorical"]
