"""`fit` and `evaluate` for a model whose ``train_step`` / ``test_step`` computes its own gradients (the
keras.io VAE and GAN: two tapes, two optimizers, loss trackers, a model without ``call()``): the step is
run as written, once per batch, on arrays, with `GradientTape` (ops/tape.py) giving its gradients.

Such a step cannot be traced into one graph (models/step_hooks.py names why), so it runs on this
process's CPU, without the strategy search; the log says so. What `fit` promises around it is kept:
batches of `-b` samples (shuffled each epoch), `-e` epochs, the model's metrics reset at each epoch (as
Keras does), callbacks, the progress bar and `-p`'s lines given the step's returned logs, `History`, `stop_training`,
validation through the model's ``test_step`` (``val_`` logs; Keras' default one run on the batch's values
when the model overrides only ``train_step``) on `validation_data` or the last samples that
`validation_split` holds out of arrays, as Keras cuts them. At the end of an epoch and of an evaluation the
logs are, as Keras 3 takes them, the results of ``model.metrics`` when the step returned the same names, else
the last step's logs (`_metrics_or_logs`).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from flexflow_keras import config as _config
from flexflow_keras.errors import DataError, GraphError
from flexflow_keras.models import step_hooks
from flexflow_keras.models.metrics_hook import eager_loss_tracker
from flexflow_keras.models.training_feeds import is_stream, keras_reset, known_length, spec_reads
from flexflow_keras.models.training_utils import validation_cut
from flexflow_keras.ops.eager_tensor import EagerTensor, eager
from flexflow_keras.utils import rng as _rng
from flexflow_keras.utils import tree
from flexflow_keras.utils.py_dataset import batch_order

log = logging.getLogger("flexflow_keras")


def _pack(x, y, sw):
    """Keras' pack_x_y_sample_weight: x alone when there are no labels, else a tuple."""
    if y is None and sw is None:
        return x
    return (x, y) if sw is None else (x, y, sw)


def _as_eager(batch):
    return tree.map_structure(lambda a: eager(np.asarray(a)) if isinstance(a, np.ndarray | list)
                              and not isinstance(a, EagerTensor) else a, batch)


class _Batches:
    """The batches of one pass: slices of arrays (shuffled per epoch), or what a dataset yields."""

    def __init__(self, x, y, sw, batch_size: int, shuffle: bool, seed: int, steps: int | None,
                 keras_order: bool = False):
        self.stream = is_stream(x)
        self.x, self.y, self.sw = x, y, sw
        self.batch_size, self.shuffle, self.steps = batch_size, shuffle, steps
        self.rng = np.random.default_rng(seed)
        self.keras_order = keras_order  # a PyDataset's batch order from Python's random, as Keras' (no --seed)
        self._iter = None
        self._spec_read = False  # an evaluation PyDataset's signature reads are done
        if self.stream:
            if y is not None or sw is not None:
                raise DataError("fit(dataset, y=...): a dataset yields its own labels; pass y only with arrays.")
            self.n = None
        else:
            leaves = [np.asarray(a) for a in tree.flatten(x)]
            if not leaves:
                raise DataError("fit() of a custom train_step needs data: x as arrays or a dataset.")
            self.n = len(leaves[0])
            for a in leaves + [np.asarray(a) for a in tree.flatten(y) + tree.flatten(sw) if a is not None]:
                if len(a) != self.n:
                    raise DataError(f"fit(): x has {self.n} samples but another array has {len(a)}; every array "
                                    f"needs one row per sample.")

    def evaluation_start(self) -> None:
        """Before an evaluation pass over a user's PyDataset, as tf.keras 3.15: its signature reads (the first
        pass only) and Keras' reset (`keras_reset`)."""
        from flexflow_keras.utils.py_dataset import PyDataset

        if isinstance(self.x, PyDataset):
            if not self._spec_read:
                spec_reads(self.x)
                self._spec_read = True
            keras_reset(self.x)

    def __len__(self) -> int:
        if self.steps is not None:
            return int(self.steps)
        if self.n is not None:
            return -(-self.n // self.batch_size)
        return known_length(self.x) or 0  # 0: unknown (a generator, a filtered dataset): the bar counts

    def epoch(self):
        if not self.stream:
            order = self.rng.permutation(self.n) if self.shuffle else np.arange(self.n)
            for k, start in enumerate(range(0, self.n, self.batch_size)):
                if self.steps is not None and k >= self.steps:
                    return
                idx = order[start:start + self.batch_size]

                def take(a, idx=idx):
                    return None if a is None else np.asarray(a)[idx]

                yield _as_eager(_pack(tree.map_structure(take, self.x), tree.map_structure(take, self.y),
                                      tree.map_structure(take, self.sw)))
            return
        if hasattr(self.x, "__getitem__") and hasattr(self.x, "__len__") and not hasattr(self.x, "batch"):
            # a PyDataset / Sequence: batch k is x[k]; Keras 3's PyDataset adapter shuffles the batch order
            order = batch_order(len(self), self.shuffle and self.steps is None,
                                None if self.keras_order else self.rng)
            if hasattr(self.x, "on_epoch_begin"):
                self.x.on_epoch_begin()
            for k in order:
                yield _as_eager(self.x[k])
            if hasattr(self.x, "on_epoch_end"):
                self.x.on_epoch_end()
            return
        if self.steps is None:
            yield from (_as_eager(batch) for batch in iter(self.x))  # each epoch a pass (a generator continues)
            return
        # steps_per_epoch: one iterator across epochs, as Keras 3's EpochIterator; a pass of known length is
        # started again once read, one that runs out within an epoch ends that epoch (with Keras' warning)
        if self._iter is None:
            self._iter, self._seen = iter(self.x), 0
        for _ in range(int(self.steps)):
            try:
                batch = next(self._iter)
            except StopIteration:
                log.warning("Your input ran out of data; interrupting the epoch. fit(steps_per_epoch=%d) asks for "
                            "more batches than a pass over the data gives (%d); the next epoch starts a new pass. "
                            "Use .repeat() on the dataset to read it across epochs.", self.steps, self._seen)
                self._iter = None
                return
            self._seen += 1
            yield _as_eager(batch)
        total = known_length(self.x)
        if total is not None and self._seen >= total:
            self._iter = None


def _floats(logs) -> dict:
    if logs is None:
        return {}
    if not isinstance(logs, dict):
        raise GraphError(f"train_step() must return a dict of logs (e.g. {{'loss': loss}}), it returned "
                         f"{type(logs).__name__}.")
    out = {}
    for k, v in logs.items():
        value = v.result() if hasattr(v, "result") and hasattr(v, "update_state") else v
        arr = np.asarray(value)
        out[k] = float(arr) if arr.size == 1 else arr
    return out


def _metrics_or_logs(model, logs: dict) -> dict:
    """Keras 3's ``_get_metrics_result_or_logs``: the result of every metric of ``model.metrics`` (a dict
    result spread by name) when its names are exactly the keys of the last step's `logs`, else `logs`. So a
    step returning ``{"loss": loss}`` without updating a tracker ends its epoch (and History) with the compiled
    loss tracker's result, 0.0 in Keras 3.15 (keras.io's DDPM), and a step logging extra names keeps its own."""
    results = {}
    for m in getattr(model, "metrics", None) or []:
        value = m.result()
        if isinstance(value, dict):
            results.update(value)
        else:
            results[m.name] = value
    return _floats(results) if set(results) == set(logs) else logs


def _reset(model) -> None:
    for m in getattr(model, "metrics", None) or []:
        if hasattr(m, "reset_state"):
            m.reset_state()


def fit(model, reason: str, x=None, y=None, batch_size=None, epochs=None, verbose="auto", callbacks=None,
        validation_split=0.0, validation_data=None, shuffle=True, class_weight=None, sample_weight=None,
        initial_epoch=0, steps_per_epoch=None, validation_steps=None, validation_batch_size=None,
        validation_freq=1):
    """`Model.fit` for an eager train_step (see the module docstring); returns the History."""
    from flexflow_keras import callbacks as callbacks_mod

    if class_weight is not None:
        raise DataError(f"Model '{model.name}': class_weight is applied by the compiled loss; a train_step that "
                        f"computes its own loss must weigh samples itself (pass sample_weight, which it receives "
                        f"as the third element of `data`).")
    eager_loss_tracker(model)
    batch_size = int(_config.resolve("batch_size", batch_size, "-b/--batch-size"))
    epochs = int(_config.resolve("epochs", epochs, "-e/--epochs"))
    if x is None:
        raise DataError(f"Model '{model.name}'.fit(): a custom train_step trains on the data it is given; pass x "
                        f"(arrays or a dataset), or -d DATASET.")
    cfg_seed = _config.get().seed
    # the framework's generator (keras.utils.set_random_seed seeds it), never NumPy's global state: a script's
    # own np.random draws after fit() are those it gets under Keras/TensorFlow
    seed = int(cfg_seed) if cfg_seed is not None else _rng.make_seed()
    if validation_split and validation_data is None:  # Keras 3's train_validation_split: the last samples
        (x, y, sample_weight), validation_data = _split(model, (x, y, sample_weight), validation_split)
    batches = _Batches(x, y, sample_weight, batch_size, shuffle, seed, steps_per_epoch, keras_order=cfg_seed is None)
    from flexflow_keras.utils.py_dataset import PyDataset

    if isinstance(x, PyDataset):
        spec_reads(x)  # tf.keras' signature reads before the first epoch, then its reset
        keras_reset(x)
    val = None
    if validation_data is not None:
        vx, vy, vsw = (tuple(validation_data) + (None, None))[:3] if isinstance(validation_data, tuple) else (
            validation_data, None, None)
        val = _Batches(vx, vy, vsw, validation_batch_size or batch_size, False, 0, validation_steps)
    log.info("model '%s': its train_step() %s, so fit() runs it as written, one batch at a time on this "
             "process's CPU, its gradients from GradientTape; the strategy search does not apply to it",
             model.name, reason)
    log.info("data: %s", f"arrays passed to fit(), {batches.n} samples" if batches.n is not None
             else f"{type(x).__name__} passed to fit()")
    verbose = 1 if verbose == "auto" else int(verbose)
    steps = len(batches)
    cbs = callbacks_mod.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=model,
                                     verbose=verbose, epochs=epochs, steps=steps or None, samples=batches.n,
                                     batch_size=batch_size)
    print_freq = _config.get().print_freq
    if verbose:
        cbs.append_flexflow_logger(print_freq, batch_size)  # -p's lines, as plain fit prints them
    elif print_freq and "print_freq" in _config.get().from_cli:  # the command line wins over verbose=0
        log.info("-p/--print-freq %d on the command line overrides the script's verbose=0: a progress line "
                 "every %d iterations", print_freq, print_freq)
        cbs.append_flexflow_logger(print_freq, batch_size, lines=True)
    model.stop_training = False
    opt = getattr(model, "optimizer", None)
    if opt is not None and hasattr(opt, "_eager_slots") and not opt._eager_slots:
        # Keras' fit builds the optimizer on every trainable variable before the first step, so a train_step
        # may apply gradients to some of them at a time (optimizers refuse variables they were not built for)
        opt.build(model.trainable_variables)
    t0, samples, logs, epoch_logs = time.perf_counter(), 0, {}, {}
    cbs.on_train_begin()
    for epoch in range(int(initial_epoch), epochs):
        _reset(model)
        cbs.on_epoch_begin(epoch)
        for step, data in enumerate(batches.epoch()):
            cbs.on_train_batch_begin(step)
            logs = _floats(model.train_step(data))
            rows = len(tree.flatten(data)[0])
            samples += rows
            model._batch_rows = rows  # the progress lines count what was trained on
            cbs.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        epoch_logs = dict(_metrics_or_logs(model, logs))
        if val is not None and (epoch + 1) % int(validation_freq) == 0:
            # Keras 3's fit validates through evaluate(callbacks=...): fit's callbacks get the test hooks
            epoch_logs.update({f"val_{k}": v for k, v in _evaluate(model, val, cbs).items()})
        cbs.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    cbs.on_train_end(epoch_logs)
    elapsed = time.perf_counter() - t0
    log.info("fit: %d samples in %.2f s, %.1f samples/s", samples, elapsed, samples / max(elapsed, 1e-9))
    return model.history


def _split(model, arrays: tuple, validation_split) -> tuple:
    """(x, y, sample_weight) cut by `validation_split` as Keras 3 cuts them: the training part and the
    validation tuple (its last samples, in order)."""
    if is_stream(arrays[0]):
        raise DataError(f"Model '{model.name}'.fit(): validation_split is only supported for arrays (Keras 3's "
                        f"rule); with a dataset pass validation_data=... instead.")
    leaves = [np.asarray(a) for a in tree.flatten(arrays) if a is not None]
    cut = validation_cut(len(leaves[0]) if leaves else 0, validation_split)

    def part(sl):
        return tuple(tree.map_structure(lambda a: None if a is None else np.asarray(a)[sl], t) for t in arrays)
    return part(slice(None, cut)), part(slice(cut, None))


def _default_test_step(model, data) -> dict:
    """Keras 3's own test_step, run on the batch's values (a model overriding only train_step, validated or
    evaluated as keras.io's debugging tips do): inference predictions, compute_loss into the loss tracker
    (weighted by the batch size), and compute_metrics' results."""
    if not getattr(model, "compiled", False):
        raise GraphError(f"Model '{model.name}': evaluating it runs Keras' default test_step, which needs the "
                         f"compiled loss and metrics; call model.compile(...) first, or define test_step().")
    x, y = (data[0], data[1]) if isinstance(data, tuple | list) and len(data) >= 2 else (data, None)
    sw = data[2] if isinstance(data, tuple | list) and len(data) >= 3 else None
    try:
        y_pred = model(x, training=False)
    except NotImplementedError as e:  # a model without call() (keras.io's GANs): Keras' step cannot run
        raise GraphError(f"Model '{model.name}': validating or evaluating it runs Keras' default test_step, which "
                         f"calls the model, and it has no call() ({e}); define test_step() (it returns a dict "
                         f"of logs, as train_step does), or leave out validation_data.") from None
    loss = step_hooks.call_compute_loss(model, x, y, y_pred, sw, training=False)
    tracker = eager_loss_tracker(model)
    if tracker is not None:
        tracker.update_state(loss, sample_weight=len(np.asarray(tree.flatten(x)[0])))
    model.compute_metrics(x, y, y_pred, sample_weight=sw)
    return model.get_metrics_result()


def _evaluate(model, batches: _Batches, cbs=None) -> dict:
    own = step_hooks.overrides(model, "test_step")
    _reset(model)
    logs = {}
    batches.evaluation_start()
    if cbs is not None:
        cbs.on_test_begin()
    for step, data in enumerate(batches.epoch()):
        if cbs is not None:
            cbs.on_test_batch_begin(step)
        logs = _floats(model.test_step(data) if own else _default_test_step(model, data))
        if cbs is not None:
            cbs.on_test_batch_end(step, logs)
    logs = _metrics_or_logs(model, logs)
    if cbs is not None:
        cbs.on_test_end(logs)
    return logs


def evaluate(model, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
             callbacks=None, return_dict=False):
    """`Model.evaluate` for an eager test_step: its logs after the last batch."""
    from flexflow_keras import callbacks as callbacks_mod

    eager_loss_tracker(model)
    batches = _Batches(x, y, sample_weight, int(batch_size or 32), False, 0, steps)
    verbose = 1 if verbose == "auto" else int(verbose)
    cbs = callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=model, verbose=verbose, epochs=1,
                                     steps=len(batches) or None)
    logs = _evaluate(model, batches, cbs)
    from flexflow_keras.models.training_inference import logs_result

    return logs_result(logs, return_dict, model)


def train_on_batch(model, x, y=None, sample_weight=None, reset_metrics=True) -> dict:
    """`Model.train_on_batch` for an eager train_step: the step once on this batch, its logs."""
    eager_loss_tracker(model)
    if reset_metrics:
        _reset(model)
    return _floats(model.train_step(_as_eager(_pack(x, y, sample_weight))))
