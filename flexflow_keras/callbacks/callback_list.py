"""`CallbackList`: calls every hook on each callback in order; adds History and the progress display.

Used by the training loop as ``CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
model=model, verbose=..., epochs=..., steps=...)`` (the keyword params become ``callback.params``),
then ``append_flexflow_logger(print_freq, batch_size)`` for FlexFlow's ``-p`` lines and the end-of-fit
throughput. Logs are converted to Python floats before they reach the callbacks.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.callbacks.callback import Callback
from flexflow_keras.callbacks.history import History
from flexflow_keras.callbacks.progress import FlexFlowLogger, ProgbarLogger


def _flatten(callbacks) -> list:
    out = []
    for c in callbacks or []:
        if isinstance(c, (list, tuple)):
            out.extend(_flatten(c))
        elif c is not None:
            if not isinstance(c, Callback):
                raise TypeError(f"callbacks must be keras.callbacks.Callback instances, received {c!r} of type "
                                f"{type(c).__name__}.")
            out.append(c)
    return out


def _pythonify(logs):
    """The logs as Keras 3's CallbackList hands them to every hook (python_utils.pythonify_logs): sorted by
    name (the progress bar and the callbacks see evaluate's "accuracy" before "loss"), nested dicts
    flattened, values that convert to a Python float converted, the others (predict's outputs) as they are."""
    if not logs:
        return {} if logs is None else logs
    out = {}
    for k, v in sorted(logs.items()):
        if isinstance(v, dict):
            out.update(_pythonify(v))
            continue
        if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic | int | float) and \
                not isinstance(v, bool | np.bool_):
            v = float(v)
        out[k] = v
    return out


def _only_writers_of_rank0(callbacks: list) -> list:
    """Under MPI, callbacks that only write files (`writes_files`: CSVLogger, TensorBoard) run on rank 0
    alone, as progress does; every rank runs the others (checkpoints write through rank 0 themselves)."""
    from flexflow_keras.execution.distributed import world

    w = world()
    if w is None or w.rank == 0:
        return callbacks
    return [c for c in callbacks if not getattr(c, "writes_files", False)]


class CallbackList(Callback):
    """A list of callbacks behaving as one.

    Args:
        callbacks: callbacks (nested lists are flattened).
        add_history: append a `History` unless one is given.
        add_progbar: append a `ProgbarLogger` unless one is given.
        model: the model (set on every callback; ``model.history`` becomes the History).
        **params: the training parameters (verbose, epochs, steps, ...).
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        super().__init__()
        self.callbacks = _only_writers_of_rank0(_flatten(callbacks if isinstance(callbacks, (list, tuple))
                                                         or callbacks is None else [callbacks]))
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        self._progbar = next((c for c in self.callbacks if isinstance(c, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        self.set_model(model)
        self.set_params(params)

    def append(self, callback: Callback) -> None:
        """Add a callback (it gets the model and params)."""
        self.callbacks.extend(_flatten([callback]))
        if self.model is not None:
            callback.set_model(self.model)
        if self.params:
            callback.set_params(self.params)

    def append_flexflow_logger(self, print_freq: int, batch_size: int | None = None,
                               lines: bool | None = None) -> FlexFlowLogger:
        """Add FlexFlow's print-frequency / throughput logger (see callbacks/progress.py; `lines` as there)."""
        logger = FlexFlowLogger(print_freq, batch_size, lines=lines)
        self.append(logger)
        return logger

    def set_params(self, params):
        self.params = params
        if params:
            for c in self.callbacks:
                c.set_params(params)

    def set_model(self, model):
        if model is None:
            return
        super().set_model(model)
        if self._history is not None:
            model.history = self._history
        for c in self.callbacks:
            c.set_model(model)

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self) -> int:
        return len(self.callbacks)

    def _call(self, hook: str, *args, logs=None):
        logs = _pythonify(logs)
        for c in self.callbacks:
            getattr(c, hook)(*args, logs)

    def on_batch_begin(self, batch, logs=None):
        self._call("on_batch_begin", batch, logs=logs)

    def on_batch_end(self, batch, logs=None):
        self._call("on_batch_end", batch, logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs=logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs=logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call("on_test_batch_begin", batch, logs=logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call("on_test_batch_end", batch, logs=logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call("on_predict_batch_begin", batch, logs=logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call("on_predict_batch_end", batch, logs=logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs=logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs=logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs=logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs=logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", logs=logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", logs=logs)


def for_evaluation(callbacks, model, verbose: int, steps) -> CallbackList:
    """The callbacks of an evaluation: fit's own CallbackList as it is (its validation: Keras 3 calls fit's
    callbacks' test hooks, with fit's params), else a new list with a progress bar when `verbose`."""
    if isinstance(callbacks, CallbackList):
        return callbacks
    return CallbackList(callbacks, add_progbar=verbose != 0, model=model, verbose=verbose, epochs=1, steps=steps)
