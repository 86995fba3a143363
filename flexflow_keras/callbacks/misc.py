"""Small callbacks (Keras 3 semantics): LearningRateScheduler, TerminateOnNaN, CSVLogger, LambdaCallback."""

from __future__ import annotations

import collections
import csv
import inspect
import os

import numpy as np

from flexflow_keras.callbacks.callback import Callback
from flexflow_keras.callbacks.progress import default_writer


def _positional_arity(fn) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 2
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return len(params)


class LearningRateScheduler(Callback):
    """Set the learning rate at each epoch start from ``schedule(epoch, lr)`` (or ``schedule(epoch)``).

    Args:
        schedule: function of the epoch index (0-based) and the current learning rate.
        verbose: 1 prints each change.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if not hasattr(optimizer, "learning_rate"):
            raise ValueError('Optimizer must have a "learning_rate" attribute.')
        lr = float(optimizer.learning_rate)
        new_lr = self.schedule(epoch, lr) if _positional_arity(self.schedule) >= 2 else self.schedule(epoch)
        if isinstance(new_lr, bool) or not isinstance(new_lr, (float, int, np.floating, np.integer)):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: {new_lr!r}")
        optimizer.learning_rate = float(new_lr)
        if self.verbose > 0:
            default_writer().line(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                                  f"{float(new_lr)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


class TerminateOnNaN(Callback):
    """Stop training when the loss becomes NaN or infinite.

    Args:
        raise_error: raise RuntimeError instead of setting ``model.stop_training``.
    """

    def __init__(self, raise_error: bool = False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            if self.raise_error:
                raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: {loss}. "
                                   f"Terminating training immediately.")
            default_writer().line(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """Stream each epoch's logs to a CSV file (columns: epoch, then the sorted log keys).

    Args:
        filename: the CSV path.
        separator: the field separator.
        append: append to an existing file (the header is written only if the file is empty).
    """

    writes_files = True  # under MPI only rank 0 runs it (callbacks/callback_list.py)

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")  # noqa: SIM115 - open for the whole fit
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}

        def handle(v):
            if isinstance(v, str):
                return v
            if isinstance(v, collections.abc.Iterable) and not (isinstance(v, np.ndarray) and v.ndim == 0):
                return f'"[{", ".join(map(str, v))}]"'
            return v

        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys.extend([f"val_{k}" for k in self.keys])
        if self.writer is None:
            sep = self.sep

            class Dialect(csv.excel):
                delimiter = sep

            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys, dialect=Dialect)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, handle(logs.get(k, "NA"))) for k in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


class LambdaCallback(Callback):
    """A callback from plain functions.

    Args:
        on_epoch_begin, on_epoch_end: ``f(epoch, logs)``.
        on_train_begin, on_train_end: ``f(logs)``.
        on_train_batch_begin, on_train_batch_end: ``f(batch, logs)``.
        **kwargs: any other hook by name (e.g. on_batch_end, on_test_end).
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        self.__dict__.update(kwargs)
        hooks = {"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end, "on_train_begin": on_train_begin,
                 "on_train_end": on_train_end, "on_train_batch_begin": on_train_batch_begin,
                 "on_train_batch_end": on_train_batch_end}
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)
