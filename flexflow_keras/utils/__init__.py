"""`keras.utils`: the helpers training scripts call (`to_categorical`, `set_random_seed`, `normalize`,
`pad_sequences`, `get_file`, `Progbar`, `plot_model`, `load_img` / `img_to_array`, the custom-object
registry; Keras 2's `np_utils`)."""

from flexflow_keras.preprocessing.image_utils import array_to_img, img_to_array, load_img, save_img
from flexflow_keras.utils.files import get_file
from flexflow_keras.utils.model_visualization import model_to_dot, plot_model
from flexflow_keras.utils.numerical import normalize, to_categorical
from flexflow_keras.utils.py_dataset import PyDataset, Sequence
from flexflow_keras.utils.rng import set_random_seed
from flexflow_keras.utils.sequence import pad_sequences
from flexflow_keras.utils.serialization import (
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    register_keras_serializable,
    serialize_keras_object,
)


def __getattr__(name: str):
    if name == "Progbar":  # the training loop's progress bar, loaded on first use (no import cycle)
        from flexflow_keras.callbacks.progress import Progbar

        return Progbar
    if name == "image_dataset_from_directory":  # loaded on first use (Pillow is imported only then)
        from flexflow_keras.data.dataset import image_dataset_from_directory

        return image_dataset_from_directory
    raise AttributeError(f"module 'flexflow_keras.utils' has no attribute {name!r}")


__all__ = [
    "Progbar", "PyDataset", "Sequence", "image_dataset_from_directory", "CustomObjectScope", "custom_object_scope",
    "deserialize_keras_object", "get_custom_objects", "array_to_img", "get_file", "img_to_array", "load_img",
    "model_to_dot", "normalize", "pad_sequences", "plot_model", "save_img", "register_keras_serializable",
    "serialize_keras_object",
    "set_random_seed", "to_categorical",
]
