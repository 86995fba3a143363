"""`tf.train.Checkpoint`, `tf.train.CheckpointManager` and `tf.train.latest_checkpoint` for the custom
training loops that save with them (TensorFlow's DCGAN and CVAE tutorials): the objects given as keyword
arguments (models and layers, optimizers, `tf.Variable`s, `tf.Module`s, other checkpoints) are written to
``<prefix>-<n>.npz`` and read back by `restore`, which checks every array's shape.

The file is this framework's (NumPy's npz), not TensorFlow's: a checkpoint written here is read here. The
directory gets TensorFlow's ``checkpoint`` index file, so `latest_checkpoint(dir)` finds the newest
save as TensorFlow's does. An optimizer is saved with its step count and the slots `apply_gradients`
made (restored into an optimizer that has not stepped yet when its first `apply_gradients` makes them, as
TensorFlow defers them).
"""

from __future__ import annotations

import logging
import os
import re

import numpy as np

from flexflow_keras.errors import DataError, MissingFileError

log = logging.getLogger("flexflow_keras")

_INDEX = "checkpoint"


def _arrays(obj, path: str, out: dict) -> None:
    """Every array of `obj` under `path` (model weights, optimizer state, variables)."""
    from flexflow_keras.ops.graph import Variable
    from flexflow_keras.optimizers.base import Optimizer
    from flexflow_keras.variables import Module

    if isinstance(obj, Checkpoint):
        for name, child in obj._objects.items():
            _arrays(child, f"{path}{name}/", out)
    elif isinstance(obj, Variable):
        out[path + "value"] = obj.numpy()
    elif isinstance(obj, Optimizer):
        out[path + "iterations"] = np.asarray(obj._iterations, np.int64)
        for i, a in enumerate(obj.slot_arrays()):
            out[f"{path}slot_{i}"] = np.asarray(a)
    elif isinstance(obj, Module):
        for i, v in enumerate(obj.variables):
            out[f"{path}variable_{i}"] = v.numpy()
    elif hasattr(obj, "get_weights") and hasattr(obj, "set_weights"):
        for i, w in enumerate(obj.get_weights()):
            out[f"{path}weight_{i}"] = np.asarray(w)
    else:
        raise DataError(f"tf.train.Checkpoint: cannot save {path.rstrip('/')!r} of type {type(obj).__name__}; it "
                        f"saves models, layers, optimizers, tf.Variable, tf.Module and other Checkpoints.")


def _load(obj, path: str, data, where: str) -> None:
    from flexflow_keras.ops.graph import Variable
    from flexflow_keras.optimizers.base import Optimizer
    from flexflow_keras.variables import Module

    def take(key, like):
        if key not in data:
            raise DataError(f"tf.train.Checkpoint.restore: {where} has no {key!r}; it was saved from other objects.")
        value = data[key]
        if like is not None and tuple(value.shape) != tuple(np.shape(like)):
            raise DataError(f"tf.train.Checkpoint.restore: {key!r} in {where} has shape {tuple(value.shape)}, the "
                            f"object has {tuple(np.shape(like))}.")
        return value

    if isinstance(obj, Checkpoint):
        for name, child in obj._objects.items():
            _load(child, f"{path}{name}/", data, where)
    elif isinstance(obj, Variable):
        obj.assign(take(path + "value", obj.value))
    elif isinstance(obj, Optimizer):
        obj._iterations = int(take(path + "iterations", None))
        count = sum(1 for k in data.files if k.startswith(path + "slot_"))
        saved = [np.array(data[f"{path}slot_{i}"]) for i in range(count)]
        slots = obj.slot_arrays()
        if slots and len(saved) != len(slots):
            raise DataError(f"tf.train.Checkpoint.restore: optimizer {path.rstrip('/')!r} in {where} has {len(saved)} "
                            f"slot arrays, the optimizer has {len(slots)}; it was saved for other variables.")
        if slots:
            for i, a in enumerate(slots):
                a[...] = take(f"{path}slot_{i}", a)
        elif saved:  # TensorFlow's deferred restore: applied when apply_gradients makes the slots
            obj._ff_checkpoint_slots = saved
    elif isinstance(obj, Module):
        for i, v in enumerate(obj.variables):
            v.assign(take(f"{path}variable_{i}", v.value))
    else:
        own = obj.get_weights()
        obj.set_weights([take(f"{path}weight_{i}", w) for i, w in enumerate(own)])


class _Status:
    """What `restore` returns: TensorFlow's status checks, which have nothing left to check here."""

    def expect_partial(self):
        return self

    def assert_consumed(self):
        return self

    def assert_existing_objects_matched(self):
        return self

    def assert_nontrivial_match(self):
        return self


class Checkpoint:
    """``tf.train.Checkpoint(**objects)``: `save(prefix)` writes ``prefix-<n>.npz``; `restore(path)` reads it
    (None: nothing, as TensorFlow restores nothing from `latest_checkpoint` of an empty folder)."""

    def __init__(self, root=None, **kwargs):
        self._objects = dict(kwargs)
        if root is not None:
            self._objects["root"] = root
        self.save_counter = 0

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(name)

    def write(self, file_prefix) -> str:
        """Save to exactly `file_prefix` (+ ``.npz``), without numbering or the index file."""
        out: dict = {}
        _arrays(self, "", out)
        path = os.fspath(file_prefix)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        np.savez(path + ".npz", **out)
        return path

    def save(self, file_prefix) -> str:
        """Save as ``<file_prefix>-<n>`` (n counts the saves) and note it as the folder's latest."""
        self.save_counter += 1
        path = self.write(f"{os.fspath(file_prefix)}-{self.save_counter}")
        folder = os.path.dirname(path) or "."
        with open(os.path.join(folder, _INDEX), "w") as f:
            f.write(f'model_checkpoint_path: "{os.path.basename(path)}"\n')
        return path

    def read(self, save_path):
        return self.restore(save_path)

    def restore(self, save_path) -> _Status:
        """Load every object from `save_path` (a `save`/`write` result, with or without ``.npz``)."""
        if save_path is None:
            return _Status()
        path = os.fspath(save_path)
        file = path if path.endswith(".npz") else path + ".npz"
        if not os.path.isfile(file):
            raise MissingFileError(f"tf.train.Checkpoint.restore: {file} does not exist (a checkpoint saved here is "
                                   f"<prefix>-<n>.npz; TensorFlow's own checkpoint files are not read).")
        with np.load(file) as data:
            _load(self, "", data, file)
        match = re.search(r"-(\d+)$", path[:-4] if path.endswith(".npz") else path)
        if match:
            self.save_counter = int(match.group(1))
        return _Status()


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest `Checkpoint.save` in `checkpoint_dir` (None when there is none)."""
    index = os.path.join(os.fspath(checkpoint_dir), latest_filename or _INDEX)
    if not os.path.isfile(index):
        return None
    with open(index) as f:
        match = re.search(r'model_checkpoint_path:\s*"([^"]+)"', f.read())
    if not match:
        return None
    path = os.path.join(os.fspath(checkpoint_dir), match.group(1))
    return path if os.path.isfile(path + ".npz") else None


class CheckpointManager:
    """``tf.train.CheckpointManager(checkpoint, directory, max_to_keep)``: numbered saves in `directory`,
    the oldest deleted past `max_to_keep`."""

    def __init__(self, checkpoint, directory, max_to_keep=5, checkpoint_name="ckpt", **kwargs):
        self._checkpoint, self.directory = checkpoint, os.fspath(directory)
        self._max, self._name = max_to_keep, checkpoint_name
        self.checkpoints = []

    @property
    def latest_checkpoint(self):
        return latest_checkpoint(self.directory)

    def save(self, checkpoint_number=None, **kwargs) -> str:
        if checkpoint_number is not None:
            self._checkpoint.save_counter = int(checkpoint_number) - 1
        path = self._checkpoint.save(os.path.join(self.directory, self._name))
        self.checkpoints.append(path)
        while self._max is not None and len(self.checkpoints) > int(self._max):
            old = self.checkpoints.pop(0)
            if os.path.isfile(old + ".npz"):
                os.remove(old + ".npz")
        return path
