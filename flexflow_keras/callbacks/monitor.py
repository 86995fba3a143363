"""Shared logic of callbacks that watch a logged quantity (EarlyStopping, ReduceLROnPlateau,
ModelCheckpoint): whether larger or smaller is better, and what counts as an improvement.

``mode="auto"``: a name ending in "loss" is minimised; otherwise the model's metric of that name says
(``metric.direction``, "up"/"down", as Keras 3's ``_direction``); otherwise, as Keras 2, names with
accuracy, AUC, precision or recall in them are maximised. Anything else needs an explicit mode.
"""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras.callbacks.callback import Callback

log = logging.getLogger("flexflow_keras")
_UP_WORDS = ("acc", "auc", "precision", "recall", "top_k")


def _model_metrics(model) -> list:
    found, stack = [], []
    for attr in ("metrics", "_metric_objects"):
        value = getattr(model, attr, None)
        if value is not None and not callable(value):
            stack.append(value)
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "name"):
            found.append(item)
            inner = getattr(item, "metrics", None)
            if isinstance(inner, (list, tuple)):
                stack.extend(inner)
    return found


class MonitorCallback(Callback):
    """Base of callbacks monitoring `monitor` in the epoch logs.

    Args:
        monitor: the log key, e.g. "val_loss".
        mode: "auto", "min" or "max".
        baseline: a starting best value, or None.
        min_delta: the smallest change that counts as an improvement.
    """

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            log.warning("%s mode '%s' is unknown, fallback to auto mode.", type(self).__name__, mode)
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op = None

    def _direction(self) -> str:
        if self.mode in ("min", "max"):
            return self.mode
        name = self.monitor.removeprefix("val_")
        if name.endswith("loss"):
            return "min"
        for m in _model_metrics(self.model):
            if getattr(m, "name", None) == name and getattr(m, "direction", None) in ("up", "down"):
                return "max" if m.direction == "up" else "min"
        if any(w in name for w in _UP_WORDS):
            return "max"
        if any(w in name for w in ("error", "crossentropy", "mse", "mae")):
            return "min"
        raise ValueError(f"{type(self).__name__} received monitor={self.monitor!r}, but cannot tell whether it "
                         f"should be maximized or minimized. Pass mode='max' to monitor the highest value, or "
                         f"mode='min' for the lowest.")

    def _set_monitor_op(self) -> None:
        if self._direction() == "min":
            self.monitor_op = np.less
            self._sign = -1.0
        else:
            self.monitor_op = np.greater
            self._sign = 1.0

    def _is_improvement(self, value, reference) -> bool:
        if reference is None:
            return True
        if self.monitor_op is None:
            self._set_monitor_op()
        return bool(self.monitor_op(value - self._sign * self.min_delta, reference))
