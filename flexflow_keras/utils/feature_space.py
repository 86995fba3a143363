"""`keras.utils.FeatureSpace`: Keras 3's one-stop encoder of structured data. This module owns the
FeatureSpace itself: reading its arguments, `adapt`, encoding a dict of values (`__call__`), the symbolic
`get_inputs` / `get_encoded_features` that build an end-to-end model, its config and its ``.keras`` file.
The feature specs (`Feature`, `Cross`, the presets) are in utils/feature_space_specs.py.

The encoding is Keras': each feature goes through its preprocessor; each cross hashes the preprocessed
features it names (`HashedCrossing`, so it crosses lookup ids and bin ids, not raw values); "one_hot"
results are multi-hot encoded (`CategoryEncoding` over the preprocessor's cardinality); the results are
concatenated in the order: features by sorted name, then crosses by sorted name (or returned as a dict).

Where it runs. Keras 3 runs the whole FeatureSpace outside the backend, as data layers. Here the
lookups, hashing, discretization and the crosses are host layers (layers/host_layer.py), and the rest
(Normalization, Rescaling, Identity, the multi-hot encoders and the concatenation) are graph layers:
- `__call__` (eager, on arrays; what a dataset's `map` calls) runs every step on the host at once.
- `get_encoded_features()` calls the same layers on the symbolic `Input`s. The host layers read only
  those Inputs or each other's outputs (a cross reads the lookups' outputs), so they all become the
  model's host prefix (layers/host_prefix.py); the graph starts at their outputs. A host layer never
  reads a graph layer's output: a cross of a feature whose preprocessor is a graph layer (a float
  feature) is refused when the FeatureSpace is made (Keras refuses it when called: HashedCrossing takes
  integers or strings only).
"""

from __future__ import annotations

import datetime
import io
import json
import os
import zipfile

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.host_layer import HostLayer, wrap_host_result
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import feature_space_specs as specs
from flexflow_keras.utils.feature_space_specs import Cross, Feature

_ADAPT_BATCH = 32  # Keras batches a dataset of single values by 32 for adapt
_OUTPUT_MODES = ("concat", "dict")
_KINDS = {"i": "int", "u": "int", "f": "float", "O": "string", "S": "string", "U": "string", "b": "bool"}


class FeatureSpace(Layer):
    """Preprocess and encode structured data: a dict of raw feature values in, one float32 vector per
    sample (or a dict of encoded features) out.

    Args:
        features: a dict from feature name to a feature-type name ("float", "float_normalized",
            "float_rescaled", "float_discretized", "integer_categorical", "string_categorical",
            "integer_hashed", "string_hashed") or a spec (`FeatureSpace.integer_categorical(...)`, ...).
        output_mode: "concat" (one vector) or "dict" (a dict of encoded features by name).
        crosses: features to cross, as tuples of names or `FeatureSpace.cross(...)`; each cross hashes
            the features' values together into `crossing_dim` bins.
        crossing_dim: the bins of crosses given as tuples.
        hashing_dim: the bins of the "integer_hashed" and "string_hashed" feature types.
        num_discretization_bins: the bins of the "float_discretized" feature type.

    Example:
        >>> fs = keras.utils.FeatureSpace({"age": "float_normalized", "sex": "integer_categorical",
        ...                                "thal": "string_categorical"}, crosses=[("sex", "thal")])
        >>> fs.adapt(train_ds.map(lambda x, y: x))        # a dataset of feature dicts
        >>> x = fs({"age": [50.0], "sex": [1], "thal": ["fixed"]})   # (1, 1 + 3 + 4 + 32) float32
        >>> model = keras.Model(fs.get_inputs(), keras.layers.Dense(1)(fs.get_encoded_features()))
    """

    # --- the feature specs -----------------------------------------------------------------------------
    @classmethod
    def cross(cls, feature_names, crossing_dim, output_mode="one_hot") -> Cross:
        return Cross(feature_names, crossing_dim, output_mode=output_mode)

    @classmethod
    def feature(cls, dtype, preprocessor, output_mode) -> Feature:
        return Feature(dtype, preprocessor, output_mode)

    @classmethod
    def float(cls, name=None) -> Feature:
        return specs.float_plain(name)

    @classmethod
    def float_rescaled(cls, scale=1.0, offset=0.0, name=None) -> Feature:
        return specs.float_rescaled(scale, offset, name)

    @classmethod
    def float_normalized(cls, name=None) -> Feature:
        return specs.float_normalized(name)

    @classmethod
    def float_discretized(cls, num_bins, bin_boundaries=None, output_mode="one_hot", name=None) -> Feature:
        return specs.float_discretized(num_bins, bin_boundaries, output_mode, name)

    @classmethod
    def integer_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot", name=None) -> Feature:
        return specs.integer_categorical(max_tokens, num_oov_indices, output_mode, name)

    @classmethod
    def string_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot", name=None) -> Feature:
        return specs.string_categorical(max_tokens, num_oov_indices, output_mode, name)

    @classmethod
    def string_hashed(cls, num_bins, output_mode="one_hot", name=None) -> Feature:
        return specs.string_hashed(num_bins, output_mode, name)

    @classmethod
    def integer_hashed(cls, num_bins, output_mode="one_hot", name=None) -> Feature:
        return specs.integer_hashed(num_bins, output_mode, name)

    # --- construction --------------------------------------------------------------------------------------
    def __init__(self, features, output_mode="concat", crosses=None, crossing_dim=32, hashing_dim=32,
                 num_discretization_bins=32, name=None):
        from flexflow_keras.layers import HashedCrossing, Input

        super().__init__(name=name)
        if not isinstance(features, dict) or not features:
            raise ArgumentError(f"FeatureSpace expects features as a non-empty dict of feature name to feature "
                                f"type, e.g. {{'age': 'float_normalized'}}; received features={features!r:.200}.")
        if output_mode not in _OUTPUT_MODES:
            raise ArgumentError(f"FeatureSpace: output_mode must be one of {_OUTPUT_MODES}, received "
                                f"output_mode={output_mode!r}.")
        self.output_mode = output_mode
        # the defaults of the features and crosses given by name
        self.crossing_dim, self.hashing_dim = crossing_dim, hashing_dim
        self.num_discretization_bins = num_discretization_bins
        self.features = {key: self._standardize_feature(key, value) for key, value in features.items()}
        self.crosses = [self._standardize_cross(c) for c in crosses or ()]
        self.crosses_by_name = {c.name: c for c in self.crosses}
        self.inputs = {key: Input(shape=(1,), dtype=f.dtype, name=key) for key, f in self.features.items()}
        self.preprocessors = {key: f.preprocessor for key, f in self.features.items()}
        self.crossers = {c.name: HashedCrossing(c.crossing_dim, name=c.name) for c in self.crosses}
        self.one_hot_encoders = {}
        self.concat = None
        self.encoded_features = None
        self._is_adapted = False
        self._sublayers_built = False

    def _standardize_feature(self, key, value) -> Feature:
        if isinstance(value, Feature):
            return value
        if isinstance(value, dict):
            return specs.deserialize(value, Feature, f"FeatureSpace feature '{key}'")
        if value not in specs.PRESETS:
            raise ArgumentError(f"FeatureSpace: feature '{key}' has the unknown type {value!r}; use one of "
                                f"{specs.PRESETS} or a spec such as FeatureSpace.integer_categorical().")
        return specs.preset(value, key, self.hashing_dim, self.num_discretization_bins)

    def _standardize_cross(self, cross) -> Cross:
        if isinstance(cross, dict):
            cross = specs.deserialize(cross, Cross, "FeatureSpace crosses")
        elif not isinstance(cross, Cross):
            if isinstance(cross, str) or not isinstance(cross, (list, tuple)):
                raise ArgumentError(f"FeatureSpace: each entry of crosses is a tuple of feature names or "
                                    f"FeatureSpace.cross(...), received {cross!r}.")
            if not self.crossing_dim:
                raise ArgumentError(f"FeatureSpace: crosses {cross!r} need crossing_dim (the number of hash bins), "
                                    f"received crossing_dim={self.crossing_dim!r}; e.g. crossing_dim=32.")
            cross = Cross(cross, crossing_dim=self.crossing_dim)
        unknown = [n for n in cross.feature_names if n not in self.features]
        if unknown:
            raise ArgumentError(f"FeatureSpace: cross {cross.feature_names} names {unknown}, which are not in "
                                f"features ({list(self.features)}); cross features the FeatureSpace has.")
        for n in cross.feature_names:
            layer = self.features[n].preprocessor
            if not isinstance(layer, HostLayer):
                raise ArgumentError(
                    f"FeatureSpace: cross '{cross.name}' reads feature '{n}', whose preprocessor "
                    f"{type(layer).__name__} '{layer.name}' makes floats in the model's graph; crosses take "
                    f"categorical features (integer/string categorical or hashed, float_discretized), as Keras' "
                    f"HashedCrossing takes integers or strings only. Cross a float_discretized version instead.")
        return cross

    # --- adapt ---------------------------------------------------------------------------------------------
    def _adaptable(self) -> list:
        """The features whose preprocessor learns from data (not a Normalization given its statistics,
        a TextVectorization given its vocabulary, nor a Discretization given its boundaries)."""
        from flexflow_keras.layers import Discretization, Normalization, TextVectorization

        names = []
        for key, layer in self.preprocessors.items():
            if isinstance(layer, Normalization) and layer.input_mean is not None:
                continue
            if isinstance(layer, TextVectorization) and layer._lookup_layer._given_vocabulary is not None:
                continue
            if isinstance(layer, Discretization) and layer.num_bins is None:
                continue
            if hasattr(layer, "adapt"):
                names.append(key)
        return names

    def adapt(self, dataset) -> None:
        """Learn the vocabularies, statistics and bin boundaries of the features from `dataset`: a dataset
        (or any iterable) of feature dicts, batched or not, without labels (``ds.map(lambda x, y: x)``),
        or a dict of arrays."""
        from flexflow_keras.data.slices import SliceDataset

        if isinstance(dataset, dict):  # each value one array (a list too, as TensorFlow reads it)
            dataset = SliceDataset.from_tensor_slices({key: np.asarray(v) for key, v in dataset.items()})
        elif isinstance(dataset, (str, bytes, np.ndarray)) or not hasattr(dataset, "__iter__"):
            raise DataError(f"FeatureSpace.adapt expects a dataset of feature dicts (e.g. "
                            f"train_ds.map(lambda x, y: x)) or a dict of arrays; received {type(dataset).__name__}.")
        names = self._adaptable()
        parts: dict = {key: [] for key in names}
        for element in dataset:
            if isinstance(element, tuple):
                raise DataError(f"FeatureSpace.adapt received a dataset of {len(element)}-tuples (features and "
                                f"labels?); it learns from the features only: pass ds.map(lambda x, y: x).")
            if not isinstance(element, dict):
                raise DataError(f"FeatureSpace.adapt expects a dataset of dicts of feature values, received an "
                                f"element of type {type(element).__name__}.")
            missing = [key for key in self.features if key not in element]
            if missing:
                raise DataError(f"FeatureSpace.adapt: the dataset's elements lack the features {missing} (they "
                                f"hold {sorted(element)}); give every feature named in features.")
            for key in names:
                parts[key].append(np.asarray(element[key]))
        for key in names:
            batches = parts[key]
            if not batches:
                raise DataError("FeatureSpace.adapt received an empty dataset; pass the training features.")
            rank = batches[0].ndim
            if rank == 0:  # single values: batched as Keras batches them
                batches = [np.stack(batches[i:i + _ADAPT_BATCH]) for i in range(0, len(batches), _ADAPT_BATCH)]
            if rank in (0, 1):  # (batch,) -> (batch, 1), the shape the model's Inputs take
                batches = [b[:, None] for b in batches]
            self.preprocessors[key].adapt(iter(batches))
        self._is_adapted = True
        self.get_encoded_features()
        self._sublayers_built = True
        self.built = True

    def _check_if_adapted(self) -> None:
        if not self._is_adapted:
            if self._adaptable():
                raise DataError(f"FeatureSpace '{self.name}' has not been adapted: call feature_space.adapt(dataset) "
                                f"with the training features (features {self._adaptable()} learn from them) first.")
            self._is_adapted = True

    def _check_if_built(self) -> None:
        if not self._sublayers_built:
            self._check_if_adapted()
            self.get_encoded_features()
            self._sublayers_built = True

    # --- symbolic ------------------------------------------------------------------------------------------
    def get_inputs(self) -> dict:
        """The model's inputs: a dict of `Input(shape=(1,))` by feature name, of the features' dtypes."""
        self._check_if_built()
        return self.inputs

    def get_encoded_features(self):
        """The encoded features as symbolic tensors (one, or a dict), computed from `get_inputs()`."""
        self._check_if_adapted()
        if self.encoded_features is None:
            preprocessed = {key: self.preprocessors[key](self.inputs[key]) for key in self.features}
            self.encoded_features = self._merge(preprocessed, self._cross(preprocessed))
        return self.encoded_features

    # --- encoding (shared by both paths) --------------------------------------------------------------------
    def _cross(self, preprocessed: dict) -> dict:
        return {c.name: self.crossers[c.name]([preprocessed[n] for n in c.feature_names]) for c in self.crosses}

    def _merge(self, preprocessed: dict, crossed: dict):
        from flexflow_keras.layers import Concatenate

        items = [(key, preprocessed[key], self.features[key]) for key in sorted(preprocessed)]
        items += [(key, crossed[key], self.crosses_by_name[key]) for key in sorted(crossed)]
        encoded = {}
        for key, value, spec in items:
            encoded[key] = self._one_hot(key, value) if spec.output_mode == "one_hot" else value
        if self.output_mode == "dict":
            return encoded
        for key, value in encoded.items():
            kind = _kind(value)
            if kind != "float":
                raise ArgumentError(f"FeatureSpace cannot concatenate feature '{key}': it is not encoded (its "
                                    f"values are {kind}s). Give it output_mode='one_hot' (or a float "
                                    f"preprocessor), or use output_mode='dict'.")
        values = list(encoded.values())
        if not isinstance(values[0], KerasTensor):
            return np.concatenate([np.asarray(v, np.float32) for v in values], axis=-1)
        if len(values) == 1:
            return values[0]
        if self.concat is None:
            self.concat = Concatenate(axis=-1)
        return self.concat(values)

    def _one_hot(self, key: str, value):
        encoder = self.one_hot_encoders.get(key)
        if encoder is None:
            from flexflow_keras.layers import CategoryEncoding

            layer = self.preprocessors[key] if key in self.preprocessors else self.crossers[key]
            if _kind(value) != "int":
                raise ArgumentError(f"FeatureSpace: feature '{key}' has output_mode='one_hot', so its preprocessor "
                                    f"must return integers; {type(layer).__name__} '{layer.name}' returns "
                                    f"{_kind(value)}s. Use output_mode='float' (or 'int').")
            encoder = CategoryEncoding(num_tokens=_cardinality(key, layer), output_mode="multi_hot")
            self.one_hot_encoders = {**self.one_hot_encoders, key: encoder}
        return encoder(value)

    # --- eager ---------------------------------------------------------------------------------------------
    def __call__(self, data):
        """Encode a dict of feature values (single values or batches): a float32 array of shape
        (batch, dims) or (dims,) in "concat" mode, a dict of encoded arrays in "dict" mode."""
        if not isinstance(data, dict):
            raise DataError(f"FeatureSpace '{self.name}' is called on a dict of feature values, received "
                            f"{type(data).__name__}.")
        if any(isinstance(v, KerasTensor) for v in data.values()):
            raise DataError(f"FeatureSpace '{self.name}' is called on data; for a model use "
                            f"feature_space.get_inputs() and feature_space.get_encoded_features().")
        self._check_if_built()
        missing = [key for key in self.features if key not in data]
        unknown = [key for key in data if key not in self.features]
        if missing or unknown:
            raise DataError(f"FeatureSpace '{self.name}' expects a dict with exactly the features "
                            f"{list(self.features)}; missing {missing}, unknown {unknown}. Drop the labels and "
                            f"other columns from the dict.")
        batch = {key: _as_batch(key, f, data[key]) for key, f in self.features.items()}
        rebatched = any(np.ndim(data[key]) == 0 for key in self.features)
        preprocessed = {key: self.preprocessors[key](batch[key]) for key in self.features}
        merged = self._merge(preprocessed, self._cross(preprocessed))
        if self.output_mode == "concat":
            return wrap_host_result(merged[0] if rebatched else merged)
        return {key: wrap_host_result(np.asarray(v)[0] if rebatched and np.ndim(v) == 2 and np.shape(v)[0] == 1
                                      else np.asarray(v)) for key, v in merged.items()}

    # --- config and files ------------------------------------------------------------------------------------
    def get_config(self) -> dict:
        return {"features": {key: specs.serialize(f) for key, f in self.features.items()},
                "output_mode": self.output_mode, "crosses": [specs.serialize(c) for c in self.crosses],
                "crossing_dim": self.crossing_dim, "hashing_dim": self.hashing_dim,
                "num_discretization_bins": self.num_discretization_bins, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> FeatureSpace:
        return cls(**config)

    def get_build_config(self) -> dict:
        """The input shape of each built preprocessor (Normalization's weights need it to be rebuilt)."""
        out = {}
        for key, layer in self.preprocessors.items():
            shape = getattr(layer, "_build_input_shape", None)
            out[key] = {"input_shape": list(shape)} if layer.built and shape is not None else {}
        return out

    def build_from_config(self, config: dict) -> None:
        for key, build in config.items():
            layer = self.preprocessors[key]
            if not layer.built and (build or {}).get("input_shape") is not None:
                layer.build(tuple(build["input_shape"]))
        self._is_adapted = True

    def save(self, filepath) -> None:
        """Write the FeatureSpace to a ``.keras`` file (Keras 3's layout: tf.keras loads it too); read it
        back with `keras.models.load_model`."""
        import h5py

        from flexflow_keras.models.weights_io import walk, write_layer_vars
        from flexflow_keras.saving.atomic import atomic_write
        from flexflow_keras.saving.keras_file import KERAS_VERSION

        path = os.fspath(filepath)
        if not path.endswith(".keras"):
            raise ArgumentError(f"FeatureSpace.save writes a .keras file; received filepath={path!r}. Add the "
                                f".keras extension.")
        config = {"module": "keras.utils", "class_name": "FeatureSpace", "config": self.get_config(),
                  "registered_name": None, "build_config": self.get_build_config()}
        metadata = {"keras_version": KERAS_VERSION, "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
        weights = io.BytesIO()
        with h5py.File(weights, "w") as f:
            write_layer_vars(f, walk(self))
        with atomic_write(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr("metadata.json", json.dumps(metadata))
            zf.writestr("config.json", json.dumps(config))
            zf.writestr("model.weights.h5", weights.getvalue())

    def save_own_variables(self, store) -> None:
        return None

    def load_own_variables(self, store) -> None:
        return None


def load_feature_space(config: dict, groups: dict, path: str) -> FeatureSpace:
    """The FeatureSpace of a ``.keras`` file (ours, or tf.keras', whose vocabularies are asset files):
    `keras.models.load_model` calls this for a file whose class is FeatureSpace."""
    from flexflow_keras.models.weights_io import _assign, walk

    fs = FeatureSpace.from_config(config.get("config") or {})
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        for where, layer in walk(fs):
            asset = f"assets/{where}/vocabulary.txt"
            if asset in names and hasattr(layer, "set_vocabulary") and not layer.get_vocabulary(False):
                lines = zf.read(asset).decode("utf-8").splitlines()
                while lines and lines[-1] == "":
                    lines.pop()
                layer.set_vocabulary(lines if getattr(layer, "_kind", "string") == "string" else
                                     [int(t) for t in lines])
    fs.build_from_config(config.get("build_config") or {})
    try:
        _assign(fs, groups, path, skip_mismatch=False)
    except ValueError as e:
        raise DataError(f"load_model(): {e}") from None
    return fs


def _kind(value) -> str:
    """"int", "float", "string" (or another dtype's name) of a symbolic tensor's or an array's values."""
    if isinstance(value, KerasTensor):
        dtype = str(value.dtype)
        return "int" if dtype.startswith(("int", "uint")) else "float" if dtype.startswith(("float", "bfloat")) \
            else dtype
    dtype = np.asarray(value).dtype
    return _KINDS.get(dtype.kind, str(dtype))


def _cardinality(key: str, layer) -> int:
    """The number of ids `layer` makes (the width of the feature's multi-hot encoding)."""
    from flexflow_keras.layers import CategoryEncoding, Discretization, HashedCrossing, Hashing
    from flexflow_keras.layers.index_lookup import IndexLookup

    if isinstance(layer, IndexLookup):
        return layer.vocabulary_size()
    if isinstance(layer, CategoryEncoding):
        return layer.num_tokens
    if isinstance(layer, Discretization):
        return layer.num_bins if layer.num_bins is not None else len(layer.bin_boundaries) + 1
    if isinstance(layer, (Hashing, HashedCrossing)):
        return int(layer.num_bins)
    raise ArgumentError(f"FeatureSpace: feature '{key}' has output_mode='one_hot', but the number of values its "
                        f"preprocessor {type(layer).__name__} makes is not known, so it cannot be one-hot encoded; "
                        f"use output_mode='int' (or 'float').")


def _as_batch(key: str, feature: Feature, value) -> np.ndarray:
    """A feature's values as a (batch, 1) array (a single value as a batch of one); floats as float32."""
    x = np.asarray(value, dtype=object) if isinstance(value, (str, bytes)) else np.asarray(value)
    if x.ndim == 0:
        x = x.reshape(1, 1)
    elif x.ndim == 1:
        x = x[:, None]
    if str(feature.dtype).startswith("float"):
        if x.dtype.kind not in "iufb":
            raise DataError(f"FeatureSpace: feature '{key}' holds {feature.dtype} numbers, received values of "
                            f"dtype {x.dtype}; give numbers, or declare it string_categorical/string_hashed.")
        x = x.astype(feature.dtype)
    return x
