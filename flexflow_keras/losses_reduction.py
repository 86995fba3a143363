"""`keras.losses.Reduction`: the names of the loss reductions, as tf.keras (TensorFlow 2.16+) still exports
them from Keras 3's legacy module (``keras._legacy.losses.Reduction``).

Scripts written for tf.keras pass ``reduction=keras.losses.Reduction.NONE``; each constant is the string
Keras 3's `Loss` takes. ``AUTO`` is listed as TensorFlow lists it, and a Loss refuses it as Keras 3 does.
"""

from __future__ import annotations


class Reduction:
    """The reduction names: ``AUTO``, ``NONE``, ``SUM``, ``SUM_OVER_BATCH_SIZE``."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key) -> None:
        if key not in cls.all():
            raise ValueError(f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"')
