"""`History`: records every epoch's logs; fit returns it and sets ``model.history``."""

from __future__ import annotations

from flexflow_keras.callbacks.callback import Callback


class History(Callback):
    """``history`` maps each log key to its list of per-epoch values; ``epoch`` lists the epochs run."""

    def __init__(self):
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self
