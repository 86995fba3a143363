"""`save_weights` / `load_weights`: Keras 3's `.weights.h5` layout (files interchange with tf.keras), and
the same paths in an `.npz` archive.

Layout: ``vars`` holds the model's own weights (attribute ``name``); each layer of a Sequential or
functional model lives at ``layers/<snake_case class name>[_k]`` (numbered by position, not by the
layer's name, so files load into fresh instances), nested models recurse, and layers reachable from
attributes of subclassed models or custom layers live under the attribute's name. A built-in layer that
holds sublayers in private attributes names them in ``_saved_sublayers`` (Keras visits every attribute:
MultiHeadAttention's projections under its public properties ``query_dense``, ..., GroupQueryAttention's
under ``_query_dense``, ...). A layer's weights are
datasets ``<path>/vars/0``, ``1``, ... in the order trainable-then-non-trainable, as Keras writes them.
A recurrent layer (SimpleRNN, LSTM, GRU, the ConvLSTMs) keeps its weights itself, where Keras 3 keeps them on its cell:
they go to ``<path>/cell/vars`` (named ``lstm_cell``, ...), as Keras writes them, and ``<path>/vars`` is
empty; files written before this, with them at ``<path>/vars``, still load.
"""

from __future__ import annotations

import logging
import os
import zipfile

import numpy as np

from flexflow_keras.saving.legacy_h5 import is_legacy_path
from flexflow_keras.utils import naming

log = logging.getLogger("flexflow_keras")


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _name_key(name: str) -> str:
    return f"~{name}" if name.startswith("_") else name


def walk(model) -> list[tuple[str, object]]:
    """(path, layer) for the model and every layer under it, each once, in Keras' visiting order."""
    from flexflow_keras.layers.base import Layer

    out: list[tuple[str, object]] = []
    visited: set[int] = set()

    def visit(layer, path: str) -> None:
        if id(layer) in visited:
            return
        visited.add(id(layer))
        out.append((path, layer))
        if getattr(layer, "_graph_network", False):
            used: dict[str, int] = {}
            for child in layer.layers:
                visit(child, _join(path, "layers", naming.unique_in(naming.to_snake_case(type(child).__name__),
                                                                     used)))
            return
        attrs = [k for k in vars(layer) if not k.startswith("_")]
        attrs += getattr(type(layer), "_saved_sublayers", ())  # held privately, saved where Keras saves them
        if hasattr(layer, "_op_graph"):
            attrs.append("layers")
        for attr in sorted(set(attrs), key=_name_key):
            try:
                value = getattr(layer, attr)
            except (AttributeError, ValueError):
                continue
            if isinstance(value, Layer):
                visit(value, _join(path, attr))
            elif isinstance(value, (list, tuple, dict)):
                items = value.values() if isinstance(value, dict) else value
                used = {}
                for item in items:
                    if isinstance(item, Layer):
                        visit(item, _join(path, attr, naming.unique_in(
                            naming.to_snake_case(type(item).__name__), used)))

    visit(model, "")
    return [entry for p, layer in out for entry in ([(p, layer), (_join(p, "cell"), _CellView(layer))]
                                                     if _recurrent(layer) else [(p, layer)])]


def _recurrent(layer) -> bool:
    from flexflow_keras.layers.recurrent import _Recurrent

    return isinstance(layer, _Recurrent) or bool(getattr(type(layer), "_weights_on_cell", None))


class _CellView:
    """A recurrent layer's weights where Keras 3 keeps them: on its cell (``<layer path>/cell``)."""

    def __init__(self, layer):
        self.layer = layer
        self.name = getattr(type(layer), "_weights_on_cell", None) or naming.to_snake_case(type(layer).__name__) + "_cell"

    @property
    def _trainable_variables(self) -> list:
        return self.layer._trainable_variables

    @property
    def _non_trainable_variables(self) -> list:
        return self.layer._non_trainable_variables


def _own_vars(layer) -> list:
    if _recurrent(layer):
        return []  # its cell's entry holds them
    return list(layer._trainable_variables) + list(layer._non_trainable_variables)


def save_weights(model, filepath, overwrite: bool = True) -> None:
    """Write every weight of `model` to `filepath` (``.weights.h5``, ``.npz``, or Keras 2's legacy layout
    for another ``.h5``/``.hdf5`` name: saving/legacy_h5.py), through a temporary
    file renamed over the target (saving/atomic.py), so an interrupted save leaves the old file intact."""
    from flexflow_keras.saving.atomic import atomic_write
    from flexflow_keras.saving.errors import SavingError

    path = os.fspath(filepath)
    if not model.built:
        raise SavingError(f"Model '{model.name}' has not been built, so it has no weights to save. Build it "
                         "first (call it on data, fit it, or model.build(input_shape)).")
    legacy = is_legacy_path(path)  # Keras 2's save_weights("x.h5")
    if not path.endswith((".weights.h5", ".npz")) and not legacy:
        raise SavingError(f"save_weights(): the filename must end in `.weights.h5` (or `.npz`, or `.h5` for "
                         f"Keras 2's layout), received filepath={path!r}. Use model.save() for a whole model in "
                         f"a `.keras` file.")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"save_weights(): {path} exists and overwrite=False.")
    entries = walk(model)
    if path.endswith(".npz"):
        arrays = {}
        for p, layer in entries:
            for i, v in enumerate(_own_vars(layer)):
                arrays[_join(p, "vars", str(i))] = v.numpy()
        with atomic_write(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **arrays)
        return
    h5py = _h5py(path)
    with atomic_write(path) as tmp, h5py.File(tmp, "w") as f:
        if legacy:
            from flexflow_keras.saving.legacy_h5 import write_layer_groups

            write_layer_groups(model, f, "2.3.1")  # Keras 2's save_weights layout
        else:
            write_layer_vars(f, entries)


def overrides_hook(layer, name: str) -> bool:
    """Whether `layer`'s class overrides Keras' `Layer.<name>` (save_own_variables, load_own_variables)."""
    from flexflow_keras.layers.base import Layer

    fn = getattr(type(layer), name, None)
    return fn is not None and fn is not getattr(Layer, name, None)


def write_layer_vars(f, entries) -> None:
    """Write each (path, layer) of `walk(model)` into the open h5 file or group `f` (Keras' layout); a
    layer that overrides ``save_own_variables(store)`` fills its group itself, as in Keras."""
    for p, layer in entries:
        group = f.require_group(_join(p, "vars"))
        group.attrs["name"] = layer.name
        if overrides_hook(layer, "save_own_variables"):
            store: dict = {}
            layer.save_own_variables(store)
            for key, value in store.items():
                group.create_dataset(str(key), data=np.asarray(value))
            continue
        for i, v in enumerate(_own_vars(layer)):
            group.create_dataset(str(i), data=v.numpy())


def read_groups(f) -> dict[str, dict[str, np.ndarray]]:
    """Every dataset of the open h5 file `f`, as {group path: {index: array}}."""
    import h5py

    groups: dict[str, dict[str, np.ndarray]] = {}

    def collect(name, obj):
        if isinstance(obj, h5py.Dataset):
            group, _, index = name.rpartition("/")
            groups.setdefault(group, {})[index] = obj[()]
    f.visititems(collect)
    return groups


def _h5py(path: str):
    try:
        import h5py
    except ImportError:
        raise ImportError(f"Writing or reading {path} needs h5py (pip install h5py); or use a path ending "
                          "in .npz.") from None
    return h5py


def load_weights(model, filepath, skip_mismatch: bool = False) -> None:
    """Set every weight of `model` from a file written by `save_weights` (or by tf.keras).

    Raises:
        DataError: the file is missing, damaged or not a weights file (naming the path and the fix).
        ValueError: naming the layer, the file path inside the archive and the shapes, when the file
            does not match the model (unless `skip_mismatch`, which logs and skips those layers).
    """
    from flexflow_keras.errors import DataError, MissingFileError

    path = os.fspath(filepath)
    if path.endswith(".keras"):
        from flexflow_keras.saving.keras_file import load_weights_from_keras_file

        load_weights_from_keras_file(model, path, skip_mismatch)
        return
    if not os.path.exists(path):
        raise MissingFileError(f"load_weights(): {path} does not exist. Check the path (a ModelCheckpoint filepath "
                               "with {epoch} templates names one file per epoch).")
    if not model.built:
        raise ValueError(f"Model '{model.name}' has not been built, so its weights cannot be loaded yet. "
                         "Build it first (call it on data or model.build(input_shape)).")
    if path.endswith(".npz"):
        try:
            with np.load(path) as data:
                store = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise DataError(_damaged(path, "npz", e)) from None
        groups: dict[str, dict[str, np.ndarray]] = {}
        for key, arr in store.items():
            group, _, index = key.rpartition("/")
            groups.setdefault(group, {})[index] = arr
        _assign(model, groups, path, skip_mismatch)
        return
    if not path.endswith(".h5"):
        raise ValueError(f"load_weights(): the filename must end in `.weights.h5`, `.keras` or `.npz`, "
                         f"received {path!r}.")
    h5py = _h5py(path)
    if not path.endswith(".weights.h5"):
        from flexflow_keras.saving.legacy_h5_load import load_legacy_weights

        try:
            if load_legacy_weights(model, path, skip_mismatch):  # Keras 2's save_weights("x.h5") layout
                return
        except (OSError, KeyError) as e:
            raise DataError(_damaged(path, "HDF5 (.h5)", e)) from None
    try:
        with h5py.File(path, "r") as f:
            groups = read_groups(f)
    except (OSError, KeyError, ValueError, RuntimeError) as e:
        raise DataError(_damaged(path, "HDF5 (.weights.h5)", e)) from None
    _assign(model, groups, path, skip_mismatch)


def _damaged(path: str, kind: str, error: Exception) -> str:
    size = os.path.getsize(path) if os.path.exists(path) else 0
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return (f"load_weights(): {path} ({size} bytes) is not a readable {kind} weights file: {reason}. It was "
            "cut short (an interrupted copy, or a save made before saves were atomic) or is another kind of "
            "file. Load an earlier checkpoint, or save the weights again with model.save_weights().")


def _assign(model, groups: dict[str, dict[str, np.ndarray]], path: str, skip_mismatch: bool) -> None:
    pending, hooked = [], []
    for p, layer in walk(model):
        if _recurrent(layer):
            continue  # its weights are its cell's entry, next
        own = _own_vars(layer)
        key = _join(p, "vars")
        stored = groups.get(key, {})
        if overrides_hook(layer, "load_own_variables"):  # the layer reads its group itself, as in Keras
            hooked.append((layer, dict(stored)))
            continue
        owner = layer.layer if isinstance(layer, _CellView) else layer
        if owner is not layer and not stored:  # written with them at the layer's own path
            key = _join(p.rsplit("/", 1)[0], "vars")
            stored = groups.get(key, {})
        problem = None
        if len(stored) != len(own):
            problem = (f"layer '{owner.name}' ({type(owner).__name__}) has {len(own)} weights but {path} has "
                       f"{len(stored)} at '{key}'")
        else:
            for i, v in enumerate(own):
                arr = stored.get(str(i))
                if arr is None or tuple(arr.shape) != v.shape:
                    got = None if arr is None else tuple(arr.shape)
                    problem = (f"weight '{v.path}' of layer '{owner.name}' has shape {v.shape} but {path} has "
                               f"{got} at '{key}/{i}'")
                    break
        if problem:
            if skip_mismatch:
                log.warning("load_weights: skipping %s.", problem)
                continue
            raise ValueError(f"load_weights(): {problem}. The file was saved from a different architecture; "
                             "pass skip_mismatch=True to load the layers that match.")
        pending.extend((v, stored[str(i)]) for i, v in enumerate(own))
    for v, arr in pending:
        v.assign(arr)
    for layer, store in hooked:
        layer.load_own_variables(store)
