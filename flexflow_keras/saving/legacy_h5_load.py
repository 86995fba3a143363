"""Reading Keras' legacy HDF5 files: `load_model("model.h5")` (a whole model saved by Keras 2,
tf.keras or Keras 3's legacy writer) and `model.load_weights("weights.h5")` (Keras 2's
`save_weights` layout).

Layout: root attribute `model_config` (JSON), optional `training_config` (JSON: optimizer, loss,
metrics); weights under group `model_weights` (whole models) or at the root (weights files), with
attribute `layer_names` and, per layer group, attribute `weight_names` listing its datasets in Keras'
order (trainable weights, then non-trainable). As in Keras, the layers that hold weights are matched by
position (the saved order is the model's), each layer's arrays go to its trainable then
non-trainable weights, and any mismatch is an error naming the layer and the shapes. The optimizer's
saved state (`optimizer_weights`) is not restored, as in Keras 3; the optimizer starts fresh.
"""

from __future__ import annotations

import json
import logging
import os

import numpy as np

from flexflow_keras.errors import DataError, MissingFileError

log = logging.getLogger("flexflow_keras")


def _text(value) -> str:
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def _names(attrs, key: str) -> list[str]:
    return [_text(n) for n in attrs.get(key, [])]


def is_legacy_weights(f) -> bool:
    """Whether the open h5 file holds the legacy layout (rather than Keras 3's `.weights.h5` one)."""
    return "layer_names" in f.attrs or ("model_weights" in f and "layer_names" in f["model_weights"].attrs)


def _saved_layers(group, path: str) -> list[tuple[str, list[np.ndarray]]]:
    out = []
    for name in _names(group.attrs, "layer_names"):
        if name not in group:
            raise DataError(f"{path}: the legacy HDF5 file lists layer '{name}' but holds no group for it; the file "
                            "is damaged. Save the model again.")
        lg = group[name]
        arrays = [np.asarray(lg[w][()]) for w in _names(lg.attrs, "weight_names")]
        if arrays:
            out.append((name, arrays))
    return out


def _own_order(layer) -> list:
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def assign_legacy(model, group, path: str, skip_mismatch: bool = False) -> None:
    """Set `model`'s weights from the legacy layer groups of `group` (matched by position, as Keras)."""
    saved = _saved_layers(group, path)
    layers = [layer for layer in model.layers if _own_order(layer)]
    if len(saved) != len(layers):
        raise ValueError(f"{path} holds weights for {len(saved)} layers ({[n for n, _ in saved][:8]}), but model "
                         f"'{model.name}' has {len(layers)} layers with weights ({[x.name for x in layers][:8]}). "
                         "Build the same architecture the file was saved from.")
    pending = []
    for (name, arrays), layer in zip(saved, layers, strict=True):
        own = _own_order(layer)
        shapes = [tuple(a.shape) for a in arrays]
        want = [tuple(v.shape) for v in own]
        if shapes != want:
            msg = (f"layer '{layer.name}' ({type(layer).__name__}) has weights of shapes {want}, but {path} holds "
                   f"{shapes} for its layer '{name}'")
            if skip_mismatch:
                log.warning("load_weights: skipping %s.", msg)
                continue
            raise ValueError(f"{msg}. Build the same architecture the file was saved from.")
        pending.extend(zip(own, arrays, strict=True))
    for var, value in pending:
        var.assign(value)


def load_legacy_weights(model, path: str, skip_mismatch: bool = False) -> bool:
    """Load a legacy-layout `.h5` into `model`; False when the file has Keras 3's layout instead."""
    import h5py

    with h5py.File(path, "r") as f:
        if not is_legacy_weights(f):
            return False
        group = f["model_weights"] if "layer_names" not in f.attrs else f
        assign_legacy(model, group, path, skip_mismatch)
    return True


def load_legacy_model(path: str, custom_objects=None, compile: bool = True):  # noqa: A002
    """Rebuild a model from a legacy whole-model `.h5` file (see the module docstring)."""
    import h5py

    from flexflow_keras.saving.config_load import deserialize_layer
    from flexflow_keras.saving.keras_file import _compile_from_config

    if not os.path.exists(path):
        raise MissingFileError(f"load_model(): {path} does not exist. Check the path.")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise DataError(f"load_model(): {path} is not a readable HDF5 file ({str(e).splitlines()[0]}); it was cut "
                        "short or is another kind of file.") from None
    with f:
        raw = f.attrs.get("model_config")
        if raw is None:
            raise DataError(f"load_model(): {path} holds weights only (no model_config). Build the model in code, "
                            f"then call model.load_weights({path!r}).")
        config = json.loads(_text(raw))
        model = deserialize_layer(config, custom_objects, where=path)
        if not model.built:
            raise DataError(f"load_model(): {path} describes model '{model.name}' without an input shape, so its "
                            "weights cannot be placed.")
        if "model_weights" in f:
            assign_legacy(model, f["model_weights"], path)
        training = f.attrs.get("training_config")
        if compile and training is not None:
            _compile_from_config(model, _compile_config(json.loads(_text(training))), custom_objects, path)
        elif compile:
            log.info("load_model(): %s holds no training configuration; the model is not compiled.", path)
    return model


def _compile_config(training: dict) -> dict:
    """Keras 2's `training_config` as the compile config `_compile_from_config` reads (tf.keras names its
    built-in optimizers "Custom>Adam", and keeps the Keras 2 optimizer's bookkeeping keys)."""
    opt = training.get("optimizer_config")
    if isinstance(opt, dict):
        cfg = {k: v for k, v in (opt.get("config") or {}).items() if k not in _KERAS2_OPTIMIZER_KEYS}
        opt = {"class_name": str(opt.get("class_name", "")).removeprefix("Custom>"), "config": cfg}
    return {"optimizer": opt, "loss": training.get("loss"),
            "loss_weights": training.get("loss_weights"), "metrics": _metrics(training.get("metrics")),
            "weighted_metrics": _metrics(training.get("weighted_metrics"))}


# Keys of tf.keras' optimizer configs that describe its own machinery, not the update rule
_KERAS2_OPTIMIZER_KEYS = {"is_legacy_optimizer", "jit_compile", "decay"}


def _metrics(value):
    """Keras 2 stores metrics as names or as serialized metric objects (a `MeanMetricWrapper` around a
    function: its name is what compile() resolves, e.g. "accuracy"), nested per output."""
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if isinstance(value, list):
        return [_metric(m) for m in value]
    return value


def _metric(m):
    if isinstance(m, dict) and m.get("class_name") == "MeanMetricWrapper":
        return (m.get("config") or {}).get("name") or (m.get("config") or {}).get("fn")
    return m
