"""The ``.keras`` file: Keras 3's whole-model format, read and written here.

A zip archive (entries stored, as Keras writes them) of ``metadata.json`` (``keras_version``,
``date_saved``), ``config.json`` (saving/model_config.py's layout, with ``compile_config`` when the
model is compiled) and ``model.weights.h5`` (each layer's variables as models/weights_io.py writes them,
and ``optimizer/vars`` as saving/optimizer_state.py orders them). Files interchange with tf.keras 3.

Writing goes through saving/atomic.py, so a save killed at any moment leaves the previous file intact.
Reading turns every failure of the container (a truncated zip, a missing entry, bad JSON, a damaged
HDF5 part) into one `DataError` naming the path, what is wrong and what to do.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import tempfile
import zipfile

from flexflow_keras.errors import DataError, MissingFileError
from flexflow_keras.saving.atomic import atomic_write
from flexflow_keras.saving.errors import SavingError
from flexflow_keras.saving.legacy_h5 import is_legacy_path, save_legacy_h5

KERAS_VERSION = "3.15.1"  # the Keras release whose layout these files follow
_CONFIG, _METADATA, _WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
_FIX = "Load an earlier checkpoint, or save the model again with model.save()."


# --- compile state -------------------------------------------------------------------------------------
def _serialize_arg(value):
    from flexflow_keras import losses, metrics

    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_serialize_arg(v) for v in value]
    if isinstance(value, dict):
        return {k: _serialize_arg(v) for k, v in value.items()}
    if isinstance(value, losses.Loss):
        return losses.serialize(value)
    if isinstance(value, metrics.Metric):
        return metrics.serialize(value)
    if isinstance(value, type):
        return value.__name__
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    raise SavingError(f"model.save(): cannot describe the compile argument {value!r} in a .keras file; pass "
                     "losses and metrics by name or as keras.losses / keras.metrics objects.")


def compile_config(model) -> dict | None:
    """Keras 3's ``compile_config`` of a compiled model (None when it is not compiled)."""
    from flexflow_keras import optimizers

    if not getattr(model, "compiled", False) or model.optimizer is None:
        return None
    return {"optimizer": optimizers.serialize(model.optimizer),
            "loss": _serialize_arg(getattr(model, "_loss_arg", None)),
            "loss_weights": _serialize_arg(getattr(model, "_loss_weights_arg", None)),
            "metrics": _serialize_arg(getattr(model, "_metrics_arg", None)),
            "weighted_metrics": _serialize_arg(getattr(model, "_weighted_metrics_arg", None)),
            "run_eagerly": False, "steps_per_execution": 1, "jit_compile": False}


def _deserialize_arg(value, kind: str, custom_objects):
    from flexflow_keras import losses, metrics
    from flexflow_keras.utils import serialization

    if isinstance(value, list):
        return [_deserialize_arg(v, kind, custom_objects) for v in value]
    if isinstance(value, dict) and "class_name" not in value:
        return {k: _deserialize_arg(v, kind, custom_objects) for k, v in value.items()}
    if isinstance(value, dict):
        name = value["class_name"]
        custom = serialization.lookup(value.get("registered_name") or name, custom_objects) or \
            serialization.lookup(name, custom_objects)
        objects = {name: custom} if custom is not None else custom_objects
        module = losses if kind == "loss" else metrics
        return module.deserialize(value, objects)
    if isinstance(value, str):
        custom = serialization.lookup(value, custom_objects)
        return custom if custom is not None else value
    return value


def _compile_from_config(model, config: dict, custom_objects, where: str) -> None:
    from flexflow_keras import optimizers

    try:
        opt_config = config.get("optimizer")
        optimizer = optimizers.deserialize(opt_config, custom_objects) if isinstance(opt_config, dict) \
            else optimizers.get(opt_config or "rmsprop")
        model.compile(optimizer=optimizer, loss=_deserialize_arg(config.get("loss"), "loss", custom_objects),
                      loss_weights=config.get("loss_weights"),
                      metrics=_deserialize_arg(config.get("metrics"), "metric", custom_objects),
                      weighted_metrics=_deserialize_arg(config.get("weighted_metrics"), "metric", custom_objects))
    except (ValueError, TypeError) as e:
        raise DataError(f"load_model(): {where} holds a compile_config this model cannot be compiled with: "
                        f"{str(e).splitlines()[0]} Pass compile=False to load_model() and call compile() "
                        "yourself.") from None


# --- writing ---------------------------------------------------------------------------------------------
def save_model(model, filepath, overwrite: bool = True, **kwargs) -> None:
    """Write `model` (config, weights, optimizer state) to a ``.keras`` file, atomically.

    Args:
        model: a built Sequential, functional, or subclassed model with `get_config`.
        filepath: a path ending in ``.keras`` (or ``.h5`` / ``.hdf5``: Keras' legacy HDF5 file, see
            saving/legacy_h5.py).
        overwrite: replace an existing file (False raises FileExistsError).

    Raises:
        ValueError: the path does not end in ``.keras`` or the model is not built.
        NotImplementedError: the model cannot be described by a config (the message says what to add).
    """
    import h5py

    from flexflow_keras.models.weights_io import walk, write_layer_vars
    from flexflow_keras.saving.model_config import serialize_model
    from flexflow_keras.saving.optimizer_state import optimizer_variables

    path = os.fspath(filepath)
    unknown = sorted(set(kwargs) - {"zipped", "include_optimizer", "save_format"})
    if unknown:
        raise TypeError(f"model.save() got unexpected arguments {unknown}.")
    if kwargs.get("zipped") is False:
        raise SavingError("model.save(zipped=False) (an unzipped folder) is not supported; save a .keras file.")
    if not model.built and is_legacy_path(path):
        raise SavingError(f"Model '{model.name}' has not been built, so it cannot be saved yet.")
    if is_legacy_path(path):  # Keras 2's .h5: the legacy HDF5 layout, as Keras 3 still writes it
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"model.save(): {path} exists and overwrite=False.")
        save_legacy_h5(model, path, KERAS_VERSION, include_optimizer=kwargs.get("include_optimizer", True))
        return
    if not path.endswith(".keras"):
        hint = "model.save_weights(filepath) writes the weights only" if path.endswith(".weights.h5") else \
            "SavedModel saving is not supported; a .h5 path writes the legacy HDF5 file"
        raise SavingError(f"model.save() writes Keras 3's `.keras` format, so the file name must end in "
                         f"`.keras`; received filepath={path!r}. Add the `.keras` extension ({hint}).")
    if not model.built:
        raise SavingError(f"Model '{model.name}' has not been built, so it cannot be saved yet. Build it first "
                         "(call it on data, fit it, or model.build(input_shape)).")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"model.save(): {path} exists and overwrite=False.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"model.save(): {path} is a directory; pass a file path ending in .keras.")
    config = serialize_model(model)
    compiled = compile_config(model)
    config["compile_config"] = compiled
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    weights = io.BytesIO()
    with h5py.File(weights, "w") as f:
        write_layer_vars(f, walk(model))
        if compiled is not None and kwargs.get("include_optimizer", True):
            group = f.require_group("optimizer/vars")
            group.attrs["name"] = model.optimizer.name
            for i, arr in enumerate(optimizer_variables(model)):
                group.create_dataset(str(i), data=arr)
    try:
        config_text = json.dumps(config)
    except TypeError as e:
        raise SavingError(f"model.save(): the config of model '{model.name}' holds a value JSON cannot store "
                         f"({e}); a layer's get_config() must return plain values (a Lambda layer's Python "
                         f"function cannot be saved). Save the weights with model.save_weights() instead, or "
                         f"replace the Lambda by a registered custom layer.") from None
    assets = _layer_assets(model)
    with atomic_write(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(_METADATA, json.dumps(metadata))
        zf.writestr(_CONFIG, config_text)
        zf.writestr(_WEIGHTS, weights.getvalue())
        for name, data in assets.items():
            zf.writestr(name, data)


def _layer_assets(model) -> dict[str, bytes]:
    """The files each layer with Keras' ``save_assets(inner_path)`` writes into a directory of its own,
    as archive entries ``assets/<layer path>/<file>`` (the layer path as the weights file names it)."""
    from flexflow_keras.models.weights_io import _join, walk

    out: dict[str, bytes] = {}
    for p, layer in walk(model):
        if not callable(getattr(layer, "save_assets", None)):
            continue
        with tempfile.TemporaryDirectory() as d:
            layer.save_assets(d)
            for root, _, files in os.walk(d):
                for name in files:
                    rel = os.path.relpath(os.path.join(root, name), d).replace(os.sep, "/")
                    with open(os.path.join(root, name), "rb") as f:
                        out[_join("assets", p, rel)] = f.read()
    return out


def _load_layer_assets(model, path: str) -> None:
    """Call Keras' ``load_assets(inner_path)`` of each layer that has it, with a directory holding its
    ``assets/<layer path>/`` entries of the archive at `path` (after the weights, as Keras 3)."""
    from flexflow_keras.models.weights_io import _join, walk

    hooked = [(p, layer) for p, layer in walk(model) if callable(getattr(layer, "load_assets", None))]
    if not hooked:
        return
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if n.startswith("assets/") and not n.endswith("/")]
        for p, layer in hooked:
            prefix = _join("assets", p) + "/"
            with tempfile.TemporaryDirectory() as d:
                for n in names:
                    if n.startswith(prefix):
                        target = os.path.join(d, *n[len(prefix):].split("/"))
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with open(target, "wb") as f:
                            f.write(zf.read(n))
                layer.load_assets(d)


# --- reading ---------------------------------------------------------------------------------------------
def _damaged(path: str, what: str) -> DataError:
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return DataError(f"{path} ({size} bytes) is not a readable .keras model file: {what}. {_FIX}")


def read_archive(path: str, who: str = "load_model()") -> tuple[dict, dict, dict]:
    """(config, metadata, weight groups) of a ``.keras`` file, with clean errors for damaged files."""
    import h5py

    from flexflow_keras.models.weights_io import read_groups

    if not os.path.exists(path):
        raise MissingFileError(f"{who}: {path} does not exist. Check the path (a ModelCheckpoint filepath with "
                               "{epoch} templates names one file per epoch).")
    if os.path.isdir(path):
        raise DataError(f"{who}: {path} is a directory; pass the .keras file inside it.")
    if path.endswith(".weights.h5") or path.endswith(".npz"):
        raise DataError(f"{who}: {path} holds weights only, not a whole model. Build the model in code, then "
                        f"call model.load_weights({path!r}).")
    if not path.endswith(".keras"):
        raise DataError(f"{who}: {path} is not a .keras file; flexflow_keras reads Keras 3's .keras format and "
                        "legacy .h5 models (SavedModel folders: load them in tf.keras and save them again "
                        "with model.save('model.keras')).")
    try:
        with zipfile.ZipFile(path, "r") as zf:
            names = zf.namelist()
            missing = [n for n in (_CONFIG, _WEIGHTS) if n not in names]
            if missing:
                raise _damaged(path, f"the archive has no {' or '.join(missing)} (it holds {names})")
            config = json.loads(zf.read(_CONFIG).decode("utf-8"))
            metadata = json.loads(zf.read(_METADATA).decode("utf-8")) if _METADATA in names else {}
            weights = zf.read(_WEIGHTS)
    except zipfile.BadZipFile as e:
        raise _damaged(path, f"not a complete zip archive ({e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _damaged(path, f"config.json is not valid JSON ({e})") from None
    except (OSError, EOFError, zipfile.LargeZipFile) as e:
        raise _damaged(path, f"the archive cannot be read ({e})") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise _damaged(path, "config.json does not describe a model (no class_name)")
    try:
        with h5py.File(io.BytesIO(weights), "r") as f:
            groups = read_groups(f)
    except (OSError, KeyError, ValueError, RuntimeError) as e:
        raise _damaged(path, f"model.weights.h5 inside it is not readable HDF5 ({str(e).splitlines()[0]})") from None
    return config, metadata, groups


def _optimizer_arrays(groups: dict) -> list | None:
    stored = groups.get("optimizer/vars")
    if stored is None:
        return None
    return [stored[str(i)] for i in range(len(stored))]


def load_model(filepath, custom_objects: dict | None = None, compile: bool = True, safe_mode: bool = True):  # noqa: A002
    """Rebuild a model saved by `save_model` (or by tf.keras' ``model.save('x.keras')``), or from a legacy
    ``.h5`` / ``.hdf5`` whole-model file of Keras 2 or tf.keras (saving/legacy_h5_load.py).

    Args:
        filepath: the ``.keras`` (or legacy ``.h5``) file.
        custom_objects: ``{"Name": class_or_function}`` for user layers, losses and metrics that are not
            registered with ``keras.saving.register_keras_serializable``.
        compile: restore the compile state (optimizer with its slots and iterations, loss, metrics).
        safe_mode: accepted for Keras compatibility (configs never execute code here).

    Raises:
        DataError: the file is missing, damaged, not a .keras file, or names classes that are unknown.
    """
    from flexflow_keras.models.weights_io import _assign
    from flexflow_keras.saving.config_load import deserialize_layer
    from flexflow_keras.saving.optimizer_state import set_optimizer_variables

    path = os.fspath(filepath)
    from flexflow_keras.saving.legacy_h5 import is_legacy_path

    if is_legacy_path(path):
        from flexflow_keras.saving.legacy_h5_load import load_legacy_model

        return load_legacy_model(path, custom_objects, compile)
    config, _metadata, groups = read_archive(path)
    if config.get("class_name") == "FeatureSpace":  # FeatureSpace.save() writes a .keras file too
        from flexflow_keras.utils.feature_space import load_feature_space

        return load_feature_space(config, groups, path)
    from flexflow_keras.saving.host_assets import fill_vocabularies

    fill_vocabularies(config, path)  # tf.keras' lookup vocabularies live in asset files
    model = deserialize_layer(config, custom_objects, where=path)
    if not model.built:
        raise DataError(f"load_model(): {path} describes model '{model.name}' ({config.get('class_name')}) "
                        "without an input shape (it was saved before it was built), so its weights cannot be "
                        "placed. Save it again after building it.")
    compiled = config.get("compile_config")
    if compile and compiled:
        _compile_from_config(model, compiled, custom_objects, path)
    try:
        _assign(model, groups, path, skip_mismatch=False)
    except ValueError as e:
        raise DataError(f"load_model(): {e}") from None
    _load_layer_assets(model, path)
    arrays = _optimizer_arrays(groups)
    if compile and compiled and arrays is not None:
        set_optimizer_variables(model, arrays, path)
    return model


def load_weights_from_keras_file(model, filepath, skip_mismatch: bool = False) -> None:
    """`model.load_weights('x.keras')`: the layer weights of a whole-model file."""
    from flexflow_keras.models.weights_io import _assign

    path = os.fspath(filepath)
    _config, _metadata, groups = read_archive(path, who="load_weights()")
    _assign(model, groups, path, skip_mismatch)
