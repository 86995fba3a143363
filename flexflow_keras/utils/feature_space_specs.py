"""What a `FeatureSpace` (utils/feature_space.py) is made of: `Feature` (a dtype, a preprocessing layer and
an output mode), `Cross` (features hashed together), the presets behind the feature-type names
(``"float_normalized"``, ``"integer_categorical"``, ...), and their configs in Keras 3's layout, so a
FeatureSpace config round-trips here and between this framework and tf.keras.

The presets use Keras' layers with Keras' names (``<feature>_preprocessor``): Identity (plain floats),
Rescaling, Normalization, Discretization, IntegerLookup, StringLookup and Hashing. The last four are host
layers (layers/host_layer.py); the first three run in the model's graph.
"""

from __future__ import annotations

from flexflow_keras.errors import ArgumentError
from flexflow_keras.utils import naming

FEATURE_OUTPUT_MODES = ("int", "one_hot", "float")
CROSS_OUTPUT_MODES = ("int", "one_hot")
PRESETS = ("float", "float_normalized", "float_rescaled", "float_discretized", "integer_categorical",
           "string_categorical", "integer_hashed", "string_hashed")
_MODULE = "keras.src.layers.preprocessing.feature_space"  # where Keras' own Feature and Cross live


class Feature:
    """One feature of a FeatureSpace: its input dtype, the layer that preprocesses it, and how its
    result is encoded ("int": as it is; "one_hot": multi-hot over the layer's cardinality; "float": as it
    is, a float the concatenation takes).

    Args:
        dtype: the dtype of the feature's `Input` ("float32", "int32", "string").
        preprocessor: a preprocessing layer, or its serialized config.
        output_mode: "int", "one_hot" or "float".
    """

    def __init__(self, dtype, preprocessor, output_mode):
        if output_mode not in FEATURE_OUTPUT_MODES:
            raise ArgumentError(f"FeatureSpace.feature: output_mode must be one of {FEATURE_OUTPUT_MODES}, received "
                                f"output_mode={output_mode!r}.")
        if isinstance(preprocessor, dict):
            preprocessor = deserialize_layer(preprocessor)
        if not callable(preprocessor):
            raise ArgumentError(f"FeatureSpace.feature: preprocessor must be a preprocessing layer, received "
                                f"{type(preprocessor).__name__}.")
        self.dtype = dtype
        self.preprocessor = preprocessor
        self.output_mode = output_mode

    def get_config(self) -> dict:
        from flexflow_keras.saving.model_config import serialize_layer

        return {"dtype": self.dtype, "preprocessor": serialize_layer(self.preprocessor),
                "output_mode": self.output_mode}

    @classmethod
    def from_config(cls, config: dict) -> Feature:
        return cls(**config)


class Cross:
    """Features crossed by hashing their values together into `crossing_dim` bins (a `HashedCrossing`
    named ``a_X_b``).

    Args:
        feature_names: two or more names of the FeatureSpace's features.
        crossing_dim: the number of hash bins.
        output_mode: "one_hot" (multi-hot over the bins) or "int" (the bin ids).
    """

    def __init__(self, feature_names, crossing_dim, output_mode="one_hot"):
        if output_mode not in CROSS_OUTPUT_MODES:
            raise ArgumentError(f"FeatureSpace.cross: output_mode must be one of {CROSS_OUTPUT_MODES}, received "
                                f"output_mode={output_mode!r}.")
        if isinstance(feature_names, str) or len(tuple(feature_names)) < 2:
            raise ArgumentError(f"FeatureSpace.cross: feature_names must name two or more features, received "
                                f"feature_names={feature_names!r}; e.g. feature_names=('sex', 'age').")
        if isinstance(crossing_dim, bool) or not isinstance(crossing_dim, int) or crossing_dim < 1:
            raise ArgumentError(f"FeatureSpace.cross: crossing_dim (the number of hash bins) must be a positive "
                                f"integer, received crossing_dim={crossing_dim!r}; e.g. crossing_dim=32.")
        self.feature_names = tuple(feature_names)
        self.crossing_dim = crossing_dim
        self.output_mode = output_mode

    @property
    def name(self) -> str:
        return "_X_".join(self.feature_names)

    def get_config(self) -> dict:
        return {"feature_names": list(self.feature_names), "crossing_dim": self.crossing_dim,
                "output_mode": self.output_mode}

    @classmethod
    def from_config(cls, config: dict) -> Cross:
        return cls(**config)


# --- the presets -------------------------------------------------------------------------------------------
def _layer_name(kind: str, name) -> str:
    return f"{name or naming.auto_name(kind)}_preprocessor"


def float_plain(name=None) -> Feature:
    from flexflow_keras.layers import Identity

    return Feature("float32", Identity(name=_layer_name("float", name)), "float")


def float_rescaled(scale=1.0, offset=0.0, name=None) -> Feature:
    from flexflow_keras.layers import Rescaling

    layer = Rescaling(scale=scale, offset=offset, name=_layer_name("float_rescaled", name))
    return Feature("float32", layer, "float")


def float_normalized(name=None) -> Feature:
    from flexflow_keras.layers import Normalization

    return Feature("float32", Normalization(axis=-1, name=_layer_name("float_normalized", name)), "float")


def float_discretized(num_bins, bin_boundaries=None, output_mode="one_hot", name=None) -> Feature:
    from flexflow_keras.layers import Discretization

    layer = Discretization(num_bins=num_bins, bin_boundaries=bin_boundaries,
                           name=_layer_name("float_discretized", name))
    return Feature("float32", layer, output_mode)


def integer_categorical(max_tokens=None, num_oov_indices=1, output_mode="one_hot", name=None) -> Feature:
    from flexflow_keras.layers import IntegerLookup

    layer = IntegerLookup(name=_layer_name("integer_categorical", name), max_tokens=max_tokens,
                          num_oov_indices=num_oov_indices)
    return Feature("int32", layer, output_mode)


def string_categorical(max_tokens=None, num_oov_indices=1, output_mode="one_hot", name=None) -> Feature:
    from flexflow_keras.layers import StringLookup

    layer = StringLookup(name=_layer_name("string_categorical", name), max_tokens=max_tokens,
                         num_oov_indices=num_oov_indices)
    return Feature("string", layer, output_mode)


def string_hashed(num_bins, output_mode="one_hot", name=None) -> Feature:
    from flexflow_keras.layers import Hashing

    return Feature("string", Hashing(name=_layer_name("string_hashed", name), num_bins=num_bins), output_mode)


def integer_hashed(num_bins, output_mode="one_hot", name=None) -> Feature:
    from flexflow_keras.layers import Hashing

    return Feature("int32", Hashing(name=_layer_name("integer_hashed", name), num_bins=num_bins), output_mode)


def preset(kind: str, name: str, hashing_dim, num_discretization_bins) -> Feature:
    """The Feature behind a feature-type name, with the FeatureSpace's defaults."""
    if kind == "float_discretized":
        return float_discretized(num_discretization_bins, name=name)
    if kind in ("integer_hashed", "string_hashed"):
        return (integer_hashed if kind == "integer_hashed" else string_hashed)(hashing_dim, name=name)
    makers = {"float": float_plain, "float_normalized": float_normalized, "float_rescaled": float_rescaled,
              "integer_categorical": integer_categorical, "string_categorical": string_categorical}
    return makers[kind](name=name)


# --- configs -------------------------------------------------------------------------------------------
def serialize(spec) -> dict:
    """A Feature or Cross in Keras 3's layout."""
    name = type(spec).__name__
    return {"module": _MODULE, "class_name": name, "config": spec.get_config(), "registered_name": name}


def deserialize(entry: dict, expected: type, who: str):
    """A Feature or Cross from its serialized dict (ours or tf.keras')."""
    name = entry.get("class_name")
    if name != expected.__name__ or not isinstance(entry.get("config"), dict):
        raise ArgumentError(f"{who}: expected a serialized {expected.__name__} (a dict with class_name "
                            f"{expected.__name__!r} and its config), received {entry!r:.200}.")
    return expected.from_config(entry["config"])


def deserialize_layer(entry: dict):
    """A preprocessing layer from its serialized dict (Keras' spellings accepted)."""
    from flexflow_keras.saving.config_load import deserialize_layer as load

    return load(entry, where="FeatureSpace config")
