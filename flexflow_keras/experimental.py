"""tf.keras 2's `keras.experimental`: the learning-rate schedules that lived here before they moved to
`keras.optimizers.schedules` (``tf.keras.experimental.CosineDecay(initial_learning_rate=0.03,
decay_steps=steps)``, keras.io's simsiam), the same classes as Keras 3's. Keras 3 has no such module; its
other Keras 2 members (LinearModel, WideDeepModel, SequenceFeatures, SidecarEvaluator) were removed with
no replacement here, and asking for them is an AttributeError saying so."""

from flexflow_keras.optimizers.schedules import CosineDecay, CosineDecayRestarts

__all__ = ["CosineDecay", "CosineDecayRestarts"]

_REMOVED = {"LinearModel", "WideDeepModel", "SequenceFeatures", "SidecarEvaluator"}


def __getattr__(name: str):
    if name in _REMOVED:
        raise AttributeError(f"keras.experimental.{name} is tf.keras 2 API that Keras 3 removed, and "
                             f"flexflow_keras does not provide it; build the model with keras layers instead "
                             f"(e.g. a functional model joining a linear and a deep branch for WideDeepModel).")
    raise AttributeError(f"module 'keras.experimental' (tf.keras 2's) has no attribute {name!r}; it holds "
                         f"CosineDecay and CosineDecayRestarts, which Keras 3 keeps in keras.optimizers.schedules.")
