"""`keras.utils`: the helpers training scripts call (`to_categorical`, `set_random_seed`, `normalize`,
`pad_sequences`, `get_file`, `get_source_inputs`, `Progbar`, `plot_model`, `load_img` / `img_to_array`, the custom-object
registry, `timeseries_dataset_from_array` / `split_dataset` on NumPy arrays, `image_dataset_from_directory` /
`text_dataset_from_directory` / `audio_dataset_from_directory`; `FeatureSpace` (utils/feature_space.py); Keras 2's
`np_utils`). The Keras 3 utilities flexflow_keras lacks (`bounding_boxes`, ...) are an `UnsupportedError` that says
what to use instead."""

from flexflow_keras.backend import clear_session, is_keras_tensor
from flexflow_keras.errors import FlexFlowKerasError
from flexflow_keras.layers.node import get_source_inputs
from flexflow_keras.preprocessing.image_utils import array_to_img, img_to_array, load_img, save_img
from flexflow_keras.saving import get_registered_name, get_registered_object
from flexflow_keras.utils.dataset_utils import (
    pack_x_y_sample_weight,
    split_dataset,
    timeseries_dataset_from_array,
    unpack_x_y_sample_weight,
)
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
    if name in ("enable_interactive_logging", "disable_interactive_logging", "is_interactive_logging_enabled"):
        from flexflow_keras.callbacks import progress

        return getattr(progress, name)
    if name == "image_dataset_from_directory":  # loaded on first use (Pillow is imported only then)
        from flexflow_keras.data.dataset import image_dataset_from_directory

        return image_dataset_from_directory
    if name == "text_dataset_from_directory":
        from flexflow_keras.data.text_folder import text_dataset_from_directory

        return text_dataset_from_directory
    if name == "audio_dataset_from_directory":
        from flexflow_keras.data.audio_folder import audio_dataset_from_directory

        return audio_dataset_from_directory
    if name == "FeatureSpace":  # loaded on first use (it imports the layers package)
        from flexflow_keras.utils.feature_space import FeatureSpace

        return FeatureSpace
    if name in _UNSUPPORTED:
        raise UnsupportedUtilityError(f"keras.utils.{name} is not available in flexflow_keras: {_UNSUPPORTED[name]}")
    raise AttributeError(f"module 'flexflow_keras.utils' has no attribute {name!r}")


class UnsupportedUtilityError(FlexFlowKerasError, AttributeError):
    """A Keras 3 utility flexflow_keras does not have (an AttributeError, so `hasattr` stays False)."""


_UNSUPPORTED = {
    "bounding_boxes": "bounding-box utilities belong to detection pipelines flexflow_keras does not train",
    "Config": "use a plain dict",
    "legacy": "the Keras 2 utilities flexflow_keras has are in keras.utils itself",
}


__all__ = [
    "clear_session", "is_keras_tensor", "get_source_inputs", "get_registered_name", "get_registered_object", "pack_x_y_sample_weight",
    "split_dataset", "timeseries_dataset_from_array", "unpack_x_y_sample_weight", "enable_interactive_logging",
    "disable_interactive_logging", "is_interactive_logging_enabled", "Progbar", "PyDataset", "Sequence", "image_dataset_from_directory", "text_dataset_from_directory", "audio_dataset_from_directory", "FeatureSpace", "CustomObjectScope", "custom_object_scope",
    "deserialize_keras_object", "get_custom_objects", "array_to_img", "get_file", "img_to_array", "load_img",
    "model_to_dot", "normalize", "pad_sequences", "plot_model", "save_img", "register_keras_serializable",
    "serialize_keras_object",
    "set_random_seed", "to_categorical",
]
