"""`ModelCheckpoint`: save the model or its weights every epoch (or every N batches), optionally only
when the monitored value improves. The file path may hold ``{epoch:02d}`` and any log key, e.g.
``"weights.{epoch:02d}-{val_loss:.2f}.weights.h5"``. Saving calls ``model.save_weights(path)`` or
``model.save(path)``; the file format is the model's business, and both write a temporary file and
rename it (saving/atomic.py), so a run killed mid-save keeps the previous checkpoint. As Keras 3, the
path's suffix is checked when the callback is made: ``.keras`` (or Keras' legacy ``.h5``) for whole
models, ``.weights.h5`` with ``save_weights_only=True``.
"""

from __future__ import annotations

import inspect
import logging
import os

import numpy as np

from flexflow_keras.callbacks.monitor import MonitorCallback
from flexflow_keras.callbacks.progress import default_writer
from flexflow_keras.saving.errors import FilepathKeyError, SavingError
from flexflow_keras.saving.legacy_h5 import is_legacy_path

log = logging.getLogger("flexflow_keras")


class ModelCheckpoint(MonitorCallback):
    """Save the model or weights during training.

    Args:
        filepath: path, formatted with ``epoch`` (1-based), ``batch`` and the logs.
        monitor: the log key for `save_best_only`.
        verbose: 1 prints each save.
        save_best_only: save only when `monitor` improves.
        save_weights_only: ``model.save_weights`` instead of ``model.save``.
        mode: "auto", "min" or "max".
        save_freq: "epoch" or an integer number of batches.
        initial_value_threshold: the best value to beat at the start.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__(monitor, mode, initial_value_threshold)
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)
                                     or save_freq <= 0):
            raise SavingError(f"Unrecognized save_freq: {save_freq!r}. Expected save_freq are 'epoch' or a "
                             f"positive integer number of batches.")
        self.filepath = os.fspath(filepath)
        _check_suffix(self.filepath, save_weights_only)
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self._batches_since_save = 0
        self._last_batch = None
        self._current_epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def needs_batch_logs(self, batch) -> bool:
        """fit reads the batch's logs for this callback only with a batch `save_freq` (so saving every
        epoch lets fit keep steps in flight: models/step_window.py)."""
        return self.save_freq != "epoch"

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        if self._last_batch is None or batch <= self._last_batch:
            self._batches_since_save += batch + 1
        else:
            self._batches_since_save += batch - self._last_batch
        self._last_batch = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None and self.save_best_only:
            self._set_monitor_op()
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _file_path(self, epoch, batch, logs) -> str:
        logs = dict(logs or {})
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            keys = ["epoch"] + (["batch"] if batch is not None else []) + list(logs)
            hint = (" (metrics=['accuracy'] logs accuracy and val_accuracy, not acc)"
                    if str(e.args[0]).endswith("acc") else "")
            raise FilepathKeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {e}. '
                                   f"Available keys: {', '.join(keys)}. Name one of them in the template{hint}.") \
                from None

    def _should_save(self, epoch, logs, filepath) -> bool:
        if not self.save_best_only:
            if self.verbose > 0:
                default_writer().line(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = (logs or {}).get(self.monitor)
        if current is None:
            log.warning("Can save best model only with %s available.", self.monitor)
            return True
        if isinstance(current, np.ndarray) and current.ndim > 0:
            log.warning("Can save best model only when `monitor` is a scalar value. Received: %s. Falling "
                        "back to `save_best_only=False`.", current)
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self.monitor_op is None:
            self._set_monitor_op()
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                default_writer().line(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to "
                                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            default_writer().line(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _save(self, epoch, batch, logs) -> None:
        filepath = self._file_path(epoch, batch, logs)
        if os.path.isdir(filepath):
            raise IsADirectoryError(f"ModelCheckpoint needs a file path, but {filepath!r} is an existing "
                                    f"directory. Add a file name, e.g. {os.path.join(filepath, 'ckpt.weights.h5')!r}.")
        if not self._should_save(epoch, logs, filepath):
            return
        dirname = os.path.dirname(filepath)
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        method = "save_weights" if self.save_weights_only else "save"
        fn = getattr(self.model, method, None)
        if fn is None:
            raise AttributeError(f"ModelCheckpoint(save_weights_only={self.save_weights_only}) calls "
                                 f"model.{method}(), which model {type(self.model).__name__} does not have.")
        try:
            accepts_overwrite = "overwrite" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            accepts_overwrite = False
        if accepts_overwrite:
            fn(filepath, overwrite=True)
        else:
            fn(filepath)
        if self.verbose > 0:
            default_writer().line(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")


def _check_suffix(filepath: str, save_weights_only: bool) -> None:
    if save_weights_only and not filepath.endswith(".weights.h5"):
        raise SavingError(f"ModelCheckpoint(save_weights_only=True) writes Keras weights files, so the filepath "
                         f"must end in `.weights.h5`; received filepath={filepath!r}. Use e.g. "
                         f"'ckpt-{{epoch:02d}}.weights.h5', or save_weights_only=False with a `.keras` path "
                         f"to save the whole model.")
    if not save_weights_only and not filepath.endswith(".keras") and not is_legacy_path(filepath):
        hint = ""
        if filepath.endswith(".weights.h5"):
            hint = " (the path names a weights file: pass save_weights_only=True to save only the weights)"
        raise SavingError(f"ModelCheckpoint saves the whole model (save_weights_only=False) in Keras 3's format, "
                         f"so the filepath must end in `.keras` (or `.h5` for Keras' legacy HDF5 file); received "
                         f"filepath={filepath!r}{hint}. Use e.g. 'ckpt-{{epoch:02d}}.keras'.")
