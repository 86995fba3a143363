"""`model.save("model.h5")`: Keras' legacy HDF5 whole-model file, written as Keras 3 writes it (with its
warning that the format is legacy), so Keras 2 scripts that save to `.h5` run and tf.keras can load
the file.

Layout (Keras 3's `legacy_h5_format`): root attributes `keras_version`, `backend` and `model_config`
(the model's JSON config, as in a `.keras` file); group `model_weights` with attribute `layer_names`
and one group per layer whose attribute `weight_names` lists its datasets in Keras' order (trainable,
then non-trainable). A compiled model's compile arguments go in the root attribute `training_config`
(JSON, Keras 3's legacy layout: `loss`, `loss_weights`, `metrics`, `weighted_metrics` serialized as in a
`.keras` file, and `optimizer_config` = {class_name, config}), so `load_model` returns it compiled, as
Keras does; `include_optimizer=False` leaves it out. The optimizer's state (Adam's moments, the
iteration count) is not written: a loaded model's optimizer starts afresh (a `.keras` file keeps it).
"""

from __future__ import annotations

import json
import logging
import os

import numpy as np

from flexflow_keras.saving.atomic import atomic_write
from flexflow_keras.saving.errors import SavingError

log = logging.getLogger("flexflow_keras")
LEGACY_EXTENSIONS = (".h5", ".hdf5")


def is_legacy_path(path: str) -> bool:
    """True for ``.h5`` / ``.hdf5`` paths that are not ``.weights.h5`` weights files."""
    return path.lower().endswith(LEGACY_EXTENSIONS) and not path.endswith(".weights.h5")


def _weight_names(layer) -> list[tuple[str, np.ndarray]]:
    out, seen = [], set()
    for w in list(layer.trainable_weights) + list(layer.non_trainable_weights):
        name = str(w.name).rsplit("/", 1)[-1]
        base, k = name, 1
        while name in seen:  # a nested model repeats names ("kernel"): Keras reads by the listed order
            name, k = f"{base}_{k}", k + 1
        seen.add(name)
        out.append((name, np.asarray(w.value if hasattr(w, "value") else w)))
    return out


def save_legacy_h5(model, path: str, keras_version: str, include_optimizer: bool = True) -> None:
    """Write `model` to the legacy HDF5 file `path` (atomically).

    Args:
        model: a built model whose config can be serialized.
        path: the file, ending in .h5 or .hdf5.
        keras_version: the Keras version recorded in the file.
        include_optimizer: write the compile arguments (`training_config`) of a compiled model.
    """
    import h5py

    from flexflow_keras.saving.model_config import serialize_model

    log.warning("You are saving your model as an HDF5 file via `model.save()`. This file format is considered "
                "legacy. We recommend using instead the native Keras format, e.g. `model.save('my_model.keras')`.")
    config = serialize_model(model)
    training = _training_config(model) if include_optimizer else None
    if training is not None:
        log.info("%s: the legacy HDF5 file holds the architecture, the weights and the compile arguments, not "
                 "the optimizer's state (a loaded model's optimizer starts afresh); save a .keras file to keep it.",
                 os.path.basename(path))
    try:
        config_text = json.dumps({"class_name": config["class_name"], "config": config["config"]})
        training_text = None if training is None else json.dumps(training)
    except TypeError as e:
        raise SavingError(f"model.save({path!r}): the config of model '{model.name}' holds a value JSON cannot "
                          f"store ({e}); save the weights with model.save_weights() instead.") from None
    with atomic_write(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["keras_version"] = keras_version
        f.attrs["backend"] = "tensorflow"  # the backend whose weight layout the file follows
        f.attrs["model_config"] = config_text
        if training_text is not None:
            f.attrs["training_config"] = training_text
        write_layer_groups(model, f.create_group("model_weights"), keras_version)


def _training_config(model) -> dict | None:
    """Keras 3's legacy `training_config` of a compiled model (None when it is not compiled): the `.keras`
    compile config with the optimizer as `optimizer_config` {class_name, config}."""
    from flexflow_keras.saving.keras_file import compile_config

    compiled = compile_config(model)
    if compiled is None:
        return None
    opt = compiled["optimizer"]
    return {"loss": compiled["loss"], "loss_weights": compiled["loss_weights"], "metrics": compiled["metrics"],
            "weighted_metrics": compiled["weighted_metrics"], "run_eagerly": compiled["run_eagerly"],
            "steps_per_execution": compiled["steps_per_execution"], "jit_compile": compiled["jit_compile"],
            "optimizer_config": {"class_name": opt["class_name"], "config": opt["config"]}}


def write_layer_groups(model, group, keras_version: str) -> None:
    """The legacy weights layout in the h5py `group` (a whole-model file's `model_weights`, or the root of
    a Keras 2 ``save_weights("x.h5")`` file): `layer_names`, and one group per layer whose `weight_names`
    lists its datasets in Keras' order."""
    group.attrs["layer_names"] = [layer.name.encode("utf8") for layer in model.layers]
    group.attrs["backend"] = "tensorflow"
    group.attrs["keras_version"] = keras_version
    for layer in model.layers:
        lg = group.create_group(layer.name)
        weights = _weight_names(layer)
        lg.attrs["weight_names"] = [name.encode("utf8") for name, _ in weights]
        for name, value in weights:
            lg.create_dataset(name, data=value)


__all__ = ["LEGACY_EXTENSIONS", "is_legacy_path", "save_legacy_h5", "write_layer_groups"]
