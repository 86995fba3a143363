"""`keras.preprocessing` (Keras 2): `sequence.pad_sequences`, `text.Tokenizer` and friends, and
`image.ImageDataGenerator` with `load_img` / `img_to_array`.

`image` is imported on first use (it needs Pillow for files and SciPy for affine transforms, as Keras 2
did). Keras 3 also exports `image_dataset_from_directory`, `timeseries_dataset_from_array` and
`text_dataset_from_directory` here: they are `keras.utils`'."""

from __future__ import annotations

import importlib

from flexflow_keras.preprocessing import sequence, text

_FROM_UTILS = ("image_dataset_from_directory", "timeseries_dataset_from_array", "text_dataset_from_directory")


def __getattr__(name: str):
    if name == "image":
        return importlib.import_module("flexflow_keras.preprocessing.image")
    if name in _FROM_UTILS:
        return getattr(importlib.import_module("flexflow_keras.utils"), name)
    raise AttributeError(f"module 'flexflow_keras.preprocessing' has no attribute {name!r}")


__all__ = ["image", "sequence", "text"]
