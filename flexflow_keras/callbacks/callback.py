"""The `Callback` base class: every Keras 3 hook, `set_model`/`set_params`, and `model`.

Hooks receive ``logs`` dicts of Python floats. ``on_train_batch_begin/end`` call ``on_batch_begin/end``
by default (Keras 2 compatibility), so a callback that overrides the old names still runs in fit.
"""

from __future__ import annotations


class Callback:
    """Base class for callbacks; override the hooks you need.

    Attributes:
        params: dict from the training loop (verbose, epochs, steps, ...).
        model: the model being trained (set by `set_model`).
    """

    def __init__(self):
        self.params = None
        self._model = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    def on_batch_begin(self, batch, logs=None):
        """Keras 2 name of on_train_batch_begin."""

    def on_batch_end(self, batch, logs=None):
        """Keras 2 name of on_train_batch_end."""

    def on_epoch_begin(self, epoch, logs=None):
        """At the start of an epoch (training only)."""

    def on_epoch_end(self, epoch, logs=None):
        """At the end of an epoch; logs hold the epoch's metrics and val_ metrics."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        """Before an evaluation batch."""

    def on_test_batch_end(self, batch, logs=None):
        """After an evaluation batch."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Before a prediction batch."""

    def on_predict_batch_end(self, batch, logs=None):
        """After a prediction batch."""

    def on_train_begin(self, logs=None):
        """At the start of fit."""

    def on_train_end(self, logs=None):
        """At the end of fit."""

    def on_test_begin(self, logs=None):
        """At the start of evaluate (and of validation inside fit)."""

    def on_test_end(self, logs=None):
        """At the end of evaluate."""

    def on_predict_begin(self, logs=None):
        """At the start of predict."""

    def on_predict_end(self, logs=None):
        """At the end of predict."""
