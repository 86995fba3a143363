"""`keras.preprocessing` (Keras 2): `sequence.pad_sequences`, `text.Tokenizer` and friends, and
`image.ImageDataGenerator` with `load_img` / `img_to_array`.

`image` is imported on first use (it needs Pillow for files and SciPy for affine transforms, as Keras 2
did)."""

from __future__ import annotations

import importlib

from flexflow_keras.preprocessing import sequence, text


def __getattr__(name: str):
    if name == "image":
        return importlib.import_module("flexflow_keras.preprocessing.image")
    raise AttributeError(f"module 'flexflow_keras.preprocessing' has no attribute {name!r}")


__all__ = ["image", "sequence", "text"]
