"""Keras 2 spellings of the training methods: `fit_generator`, `evaluate_generator`,
`predict_generator` (deprecated aliases of `fit` / `evaluate` / `predict` that take generators and
`Sequence`s, with the warning tf.keras 2 gave), `Sequential.predict_classes` / `predict_proba`
(Keras 2.3's), and `reset_states` (every stateful layer's kept states back to zero)."""

from __future__ import annotations

import logging
import warnings

import numpy as np

log = logging.getLogger("flexflow_keras")
_warned: set[str] = set()


def _deprecated(old: str, new: str) -> None:
    if old not in _warned:
        _warned.add(old)
        warnings.warn(f"`Model.{old}` is deprecated and will be removed in a future version. Please use "
                      f"`Model.{new}`, which supports generators.", UserWarning, stacklevel=3)


def _loading_options(max_queue_size, workers, use_multiprocessing) -> None:
    if workers not in (None, 0, 1) or use_multiprocessing or max_queue_size not in (None, 10):
        log.info("workers=%s, use_multiprocessing=%s, max_queue_size=%s: Keras 2 loading options; flexflow_keras "
                 "draws the batches of a generator on the program thread (the step runs while the next batch is "
                 "drawn only for -d datasets and arrays).", workers, use_multiprocessing, max_queue_size)


def _steps(generator, steps, who: str):
    if steps is not None:
        return int(steps)
    if hasattr(generator, "__len__"):
        return len(generator)
    raise ValueError(f"{who}: steps is None and the generator has no length; pass steps= (the number of batches "
                     f"to draw), as Keras 2 required.")


class Keras2TrainingMethods:
    """`fit_generator`, `evaluate_generator`, `predict_generator` and `reset_states` for `Model`."""

    def fit_generator(self, generator, steps_per_epoch=None, epochs=1, verbose=1, callbacks=None,
                      validation_data=None, validation_steps=None, validation_freq=1, class_weight=None,
                      max_queue_size=10, workers=1, use_multiprocessing=False, shuffle=True, initial_epoch=0):
        """Keras 2's `fit_generator`: `fit` on a generator or `Sequence` of ``(x, y[, sample_weight])`` batches.

        Args:
            generator: a generator, a `Sequence`, or an `ImageDataGenerator.flow(...)` iterator.
            steps_per_epoch: batches per epoch (default: ``len(generator)``; needed for a plain generator).
            epochs, verbose, callbacks, validation_data, validation_steps, validation_freq, class_weight,
                initial_epoch: as `fit`.
            max_queue_size, workers, use_multiprocessing: accepted; batches are drawn on the program thread.
            shuffle: as `fit` (a `Sequence`'s own order is used).
        """
        _deprecated("fit_generator", "fit")
        _loading_options(max_queue_size, workers, use_multiprocessing)
        steps = _steps(generator, steps_per_epoch, "fit_generator")
        return self.fit(generator, epochs=epochs, verbose=verbose, callbacks=callbacks,
                        validation_data=validation_data, validation_steps=validation_steps,
                        validation_freq=validation_freq, class_weight=class_weight, shuffle=shuffle,
                        initial_epoch=initial_epoch, steps_per_epoch=steps)

    def evaluate_generator(self, generator, steps=None, callbacks=None, max_queue_size=10, workers=1,
                           use_multiprocessing=False, verbose=0):
        """Keras 2's `evaluate_generator`: `evaluate` over `steps` batches (default ``len(generator)``)."""
        _deprecated("evaluate_generator", "evaluate")
        _loading_options(max_queue_size, workers, use_multiprocessing)
        return self.evaluate(generator, steps=_steps(generator, steps, "evaluate_generator"), callbacks=callbacks,
                             verbose=verbose)

    def predict_generator(self, generator, steps=None, callbacks=None, max_queue_size=10, workers=1,
                          use_multiprocessing=False, verbose=0):
        """Keras 2's `predict_generator`: `predict` over `steps` batches (default ``len(generator)``)."""
        _deprecated("predict_generator", "predict")
        _loading_options(max_queue_size, workers, use_multiprocessing)
        return self.predict(generator, steps=_steps(generator, steps, "predict_generator"), callbacks=callbacks,
                            verbose=verbose)

    def reset_states(self) -> None:
        """Keras 2: zero the kept states of every stateful layer of the model (nested models included)."""
        seen, todo = set(), list(self.layers)
        while todo:
            layer = todo.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            if layer is not self and hasattr(layer, "reset_states"):
                layer.reset_states()
            todo.extend(layer._sublayers() if hasattr(layer, "_sublayers") else [])
            todo.extend(getattr(layer, "layers", None) or [])


class Keras2SequentialMethods:
    """`predict_classes` and `predict_proba`, which Keras 2.3's `Sequential` had."""

    def predict_proba(self, x, batch_size=32, verbose=0):
        """`predict`, warning (as Keras 2) when the outputs are not probabilities in [0, 1]."""
        preds = self.predict(x, batch_size=batch_size, verbose=verbose)
        if np.min(preds) < 0.0 or np.max(preds) > 1.0:
            warnings.warn("Network returning invalid probability values. The last layer might not normalize "
                          "predictions into probabilities (like softmax or sigmoid would).", UserWarning,
                          stacklevel=2)
        return preds

    def predict_classes(self, x, batch_size=32, verbose=0):
        """Class ids: the arg-max of the outputs, or ``output > 0.5`` (int32) for a single output unit."""
        proba = self.predict(x, batch_size=batch_size, verbose=verbose)
        if proba.shape[-1] > 1:
            return proba.argmax(axis=-1)
        return (proba > 0.5).astype("int32")


__all__ = ["Keras2SequentialMethods", "Keras2TrainingMethods"]
