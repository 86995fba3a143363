"""`keras.preprocessing.sequence` (Keras 2): `pad_sequences` (the one in `keras.utils`)."""

from __future__ import annotations

from flexflow_keras.utils.sequence import pad_sequences

__all__ = ["pad_sequences"]
