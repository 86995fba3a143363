"""`keras.callbacks.BackupAndRestore`: back the training state up during `fit` and resume an interrupted
fit where the last backup was made.

A backup is a folder ``<backup_dir>/ckpt-<iterations>`` holding the weights (``model.weights.h5``, via
`model.save_weights`) and the optimizer's variables (``optimizer.npz``: iterations, learning rate and
slots, in saving/optimizer_state.py's order); ``training_metadata.json`` (written atomically, last) names
the folder and the epoch to resume at. A run killed at any moment therefore leaves a complete backup
named by the metadata. On `on_train_begin` the callback restores the named backup and tells `fit` to
start at its epoch (Keras 3: a backup made mid-epoch with an integer `save_freq` resumes at the start of
that epoch, with the weights of the backup; one made at an epoch's last step resumes at the next epoch). When `fit` ends normally the folder is deleted
(`delete_checkpoint=True`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil

import numpy as np

from flexflow_keras.callbacks.callback import Callback
from flexflow_keras.errors import DataError
from flexflow_keras.saving.atomic import atomic_write

log = logging.getLogger("flexflow_keras")
_META = "training_metadata.json"


class BackupAndRestore(Callback):
    """Back up weights and optimizer state during fit; resume from them after an interruption.

    Args:
        backup_dir: the folder of the backups (created if missing). Use one folder per training run.
        save_freq: "epoch" (a backup after every epoch) or an integer N (a backup every N batches).
        double_checkpoint: keep the previous backup too, and fall back to it when the latest cannot be
            read.
        delete_checkpoint: delete `backup_dir` when fit ends without interruption.
    """

    def __new__(cls, *args, **kwargs):
        # The batch hook only with an integer save_freq (see tensorboard.py's __new__)
        freq = kwargs.get("save_freq", args[1] if len(args) > 1 else "epoch")
        if cls is BackupAndRestore and freq != "epoch":
            cls = _BatchBackupAndRestore
        return super().__new__(cls)

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False, delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: empty `backup_dir` argument passed; give a folder path.")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)
                                     or save_freq <= 0):
            raise ValueError(f"BackupAndRestore: invalid value for argument `save_freq`. Received: "
                             f"save_freq={save_freq!r}. Expected either 'epoch' or a positive integer.")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = bool(double_checkpoint)
        self.delete_checkpoint = bool(delete_checkpoint)
        self._current_epoch = 0
        self._last_batch_seen = 0
        self._batches_since_save = 0

    # --- restore -------------------------------------------------------------------------------------------
    def _metadata(self) -> dict | None:
        path = os.path.join(self.backup_dir, _META)
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError) as e:
            raise DataError(f"BackupAndRestore: cannot read {path} ({e}). Delete {self.backup_dir} to start "
                            f"training from scratch.") from None
        return meta

    def _restore(self, folder: str) -> None:
        from flexflow_keras.saving.optimizer_state import set_optimizer_variables

        weights = os.path.join(folder, "model.weights.h5")
        self.model.load_weights(weights)
        opt_path = os.path.join(folder, "optimizer.npz")
        if getattr(self.model, "optimizer", None) is not None and os.path.exists(opt_path):
            with np.load(opt_path) as data:
                arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
            set_optimizer_variables(self.model, arrays, opt_path)

    def on_train_begin(self, logs=None):
        meta = self._metadata()
        if meta is None:
            return
        tried = [meta.get("checkpoint")] + ([meta.get("previous")] if meta.get("previous") else [])
        errors = []
        for i, name in enumerate(t for t in tried if t):
            folder = os.path.join(self.backup_dir, name)
            try:
                self._restore(folder)
            except (OSError, ValueError, KeyError) as e:
                errors.append(f"{folder}: {e}")
                continue
            epoch = int(meta["epoch"] if i == 0 else meta.get("previous_epoch", 0))
            self.model._initial_epoch = epoch
            self._current_epoch = epoch
            log.info("BackupAndRestore: resumed from %s (epoch %d, optimizer step %d)", folder, epoch + 1,
                     int(getattr(self.model.optimizer, "_iterations", 0)))
            return
        raise DataError(f"BackupAndRestore: no readable backup in {self.backup_dir}: {'; '.join(errors)}. "
                        f"Delete the folder to start training from scratch.")

    # --- back up -------------------------------------------------------------------------------------------
    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save()
        else:  # a backup taken at the epoch's last step resumes at the next epoch (no step is redone)
            meta = self._metadata()
            step = int(getattr(getattr(self.model, "optimizer", None), "_iterations", 0) or 0)
            if meta is not None and meta.get("iterations") == step:
                self._write_meta(dict(meta, epoch=self._current_epoch, batch=0))

    def _save(self) -> None:
        # Under MPI rank 0 writes (the weights through model.save_weights, which every rank calls), every
        # rank decides alike from the same metadata, and all wait for the writes at the end.
        from flexflow_keras.saving.optimizer_state import optimizer_variables

        w = _world()
        writer = w is None or w.rank == 0
        if writer:
            os.makedirs(self.backup_dir, exist_ok=True)
        old = self._metadata() or {}
        opt = getattr(self.model, "optimizer", None)
        step = int(getattr(opt, "_iterations", 0) or 0)
        name = f"ckpt-{step:09d}"
        folder = os.path.join(self.backup_dir, name)
        if name == old.get("checkpoint"):  # no step since the last backup (e.g. epoch end after a batch save)
            self._write_meta(dict(old, epoch=self._current_epoch, batch=self._last_batch_seen))
            return
        if writer:
            os.makedirs(folder, exist_ok=True)
        self.model.save_weights(os.path.join(folder, "model.weights.h5"), overwrite=True)  # rank 0 writes
        meta = {"epoch": self._current_epoch, "batch": self._last_batch_seen, "iterations": step,
                "checkpoint": name}
        if self.double_checkpoint and old.get("checkpoint"):
            meta["previous"], meta["previous_epoch"] = old["checkpoint"], old.get("epoch", 0)
        if writer and opt is not None:
            with atomic_write(os.path.join(folder, "optimizer.npz")) as tmp:
                with open(tmp, "wb") as f:
                    np.savez(f, *optimizer_variables(self.model))
        self._write_meta(meta)
        keep = {name, meta.get("previous")}
        if writer:
            for entry in os.listdir(self.backup_dir):
                if entry.startswith("ckpt-") and entry not in keep:
                    shutil.rmtree(os.path.join(self.backup_dir, entry), ignore_errors=True)
        if w is not None:
            w.barrier()

    def _write_meta(self, meta: dict) -> None:
        w = _world()
        if w is not None and w.rank != 0:  # under MPI rank 0 writes
            return
        with atomic_write(os.path.join(self.backup_dir, _META)) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(meta, f)

    def on_train_end(self, logs=None):
        w = _world()
        if self.delete_checkpoint and os.path.exists(self.backup_dir) and (w is None or w.rank == 0):
            shutil.rmtree(self.backup_dir, ignore_errors=True)
        if w is not None:
            w.barrier()


def _world():
    from flexflow_keras.execution.distributed import world

    return world()


class _BatchBackupAndRestore(BackupAndRestore):
    """`BackupAndRestore` with an integer `save_freq`: a backup every `save_freq` batches."""

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        added = batch + 1 if batch <= self._last_batch_seen else batch - self._last_batch_seen
        self._batches_since_save += added
        self._last_batch_seen = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save()
