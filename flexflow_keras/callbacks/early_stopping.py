"""`EarlyStopping` and `ReduceLROnPlateau` (Keras 3 semantics)."""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras.callbacks.monitor import MonitorCallback
from flexflow_keras.callbacks.progress import default_writer

log = logging.getLogger("flexflow_keras")


class EarlyStopping(MonitorCallback):
    """Stop training when `monitor` has stopped improving.

    Args:
        monitor: the log key (default "val_loss").
        min_delta: minimum change that counts as an improvement.
        patience: epochs without improvement before stopping.
        verbose: 1 prints when it stops and when it restores weights.
        mode: "auto", "min" or "max".
        baseline: training stops if the monitored value does not beat it within `patience` epochs.
        restore_best_weights: put back the weights of the best epoch at the end.
        start_from_epoch: epochs to wait before monitoring.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.best_weights = None
        self.best_epoch = 0
        self.start_from_epoch = start_from_epoch

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = (logs or {}).get(self.monitor)
        if current is None:
            log.warning("Early stopping conditioned on metric `%s` which is not available. Available metrics "
                        "are: %s", self.monitor, ",".join(logs or {}))
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            default_writer().line(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                default_writer().line(f"Restoring model weights from the end of the best epoch: "
                                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        return (logs or {}).get(self.monitor)


class ReduceLROnPlateau(MonitorCallback):
    """Multiply the learning rate by `factor` when `monitor` has stopped improving.

    Args:
        monitor: the log key (default "val_loss").
        factor: new_lr = lr * factor (< 1).
        patience: epochs without improvement before reducing.
        verbose: 1 prints each reduction.
        mode: "auto", "min" or "max".
        min_delta: threshold for a significant change.
        cooldown: epochs to wait after a reduction.
        min_lr: lower bound on the learning rate.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        if "epsilon" in kwargs:  # Keras 2 name of min_delta
            min_delta = kwargs.pop("epsilon")
        if kwargs:
            raise ValueError(f"ReduceLROnPlateau got unexpected arguments {sorted(kwargs)}.")
        super().__init__(monitor, mode, min_delta=min_delta)
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}")
        self.factor = factor
        self.min_lr = min_lr
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self.best = None
        self.cooldown_counter = 0
        self.wait = 0

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs if logs is not None else {}
        optimizer = self.model.optimizer
        logs["learning_rate"] = float(optimizer.learning_rate)
        current = logs.get(self.monitor)
        if current is None:
            log.warning("Learning rate reduction is conditioned on metric `%s` which is not available. "
                        "Available metrics are: %s.", self.monitor, ",".join(logs))
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(optimizer.learning_rate)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.learning_rate = new_lr
                    if self.verbose > 0:
                        default_writer().line(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                                              f"to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
