"""`fit`: the training loop's epochs and steps (`FitLoop`, a mixin of `Trainer`).

It resolves the command line (`-e/-b/-p/-d` win over the script's arguments, and the log says so),
chooses the data's feed (arrays, a dataset, a generator: models/training_feeds.py), holds out the
validation split, has the engine choose its strategy, and drives epochs and steps with Keras 3
semantics: per-batch logs are the running means of the epoch, the loss is weighted by batch size,
callbacks see every hook, validation runs at the end of an epoch. Training steps are issued without
waiting and read only where a value is needed (models/step_window.py).
"""

from __future__ import annotations

import itertools
import logging
import time

import numpy as np

from flexflow_keras import config as _config
from flexflow_keras.data import provenance
from flexflow_keras.data.slices import bounded
from flexflow_keras.errors import ConfigError, DataError, ShapeError
from flexflow_keras.execution import overlap as _overlap
from flexflow_keras.execution import simulator_notice, store_budget
from flexflow_keras.layers import host_prefix
from flexflow_keras.models import call_mode, custom_training, eager_fit, sample_weights, step_hooks
from flexflow_keras.models.step_window import IN_FLIGHT, LogDemand, StepWindow, passive
from flexflow_keras.models.training_feeds import ArrayFeed, IterFeed, evaluate_stream, is_stream, stream_feed
from flexflow_keras.models.training_utils import (
    RunningMeans,
    check_not_empty,
    should_validate,
    step_count,
    validation_cut,
)
from flexflow_keras.models.validation_generator import keep_first_batches
from flexflow_keras.ops.assign_in_call import AssignInCallError
from flexflow_keras.utils import interrupts as _interrupts
from flexflow_keras.utils import rng as _rng

log = logging.getLogger("flexflow_keras")


def _no_strategy_flags(model, why: str) -> None:
    """A fit that runs the model's step eagerly (eager_fit.py) chooses no strategy: the strategy flags given on
    the command line would have no effect (--search-only would even train), so they are an error here."""
    cfg = _config.get()
    given = [n for n in _config._STRATEGY_SETTINGS if n in cfg.from_cli]
    if given:
        flags = " and ".join(_config._NAMES[n] for n in given)
        raise ConfigError(f"{flags} would have no effect: model '{model.name}' trains one batch at a time on this "
                          f"process's CPU, as its train_step is written ({why}), so no strategy is searched, "
                          f"imported, exported or forced. Drop {flags}.")


class FitLoop:
    """`fit` for models (mixed into `Trainer`)."""

    @call_mode.in_fit
    def fit(self, x=None, y=None, batch_size=None, epochs=None, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None, sample_weight=None,
            initial_epoch=0, steps_per_epoch=None, validation_steps=None, validation_batch_size=None,
            validation_freq=1):
        """Train the model; returns a `History`. Command-line -e/-b override epochs/batch_size."""
        from flexflow_keras import callbacks as callbacks_mod

        self._require_compiled("fit")
        batch_size = _script_batch_size(batch_size)
        steps_per_epoch = step_count(steps_per_epoch, "steps_per_epoch", f"Model '{self.name}'.fit()")
        validation_steps = step_count(validation_steps, "validation_steps", f"Model '{self.name}'.fit()")
        if x is not None or y is not None:  # -d given but the script trains on its own data: say so
            _config.check_dataset_used("fit()", "arrays" if isinstance(x, np.ndarray) else
                                       f"its own data ({type(x).__name__})")
        epochs = int(_config.resolve("epochs", epochs, "-e/--epochs"))  # logs an override once
        x = bounded(x, steps_per_epoch, "fit()", epochs)
        validation_data = bounded(validation_data, validation_steps, "fit(validation_data=...)")
        validation_data = keep_first_batches(validation_data, validation_steps)  # a generator, as Keras 3 reads it
        x, validation_data = host_prefix.wrap_data(self, x), host_prefix.wrap_validation(self, validation_data)
        reason = step_hooks.eager_reason(self, "train_step")
        if reason is not None:  # a step that computes its own gradients runs as written (eager_fit.py)
            _no_strategy_flags(self, reason)
            return eager_fit.fit(self, reason, x, y, batch_size, epochs, verbose, callbacks, validation_split,
                                 validation_data, shuffle, class_weight, sample_weight, initial_epoch,
                                 steps_per_epoch, validation_steps, validation_batch_size, validation_freq)
        _overlap.clear_device_failures()  # what a run stopped by something else left on a GPU
        script_batch = batch_size
        batch_size = int(_config.resolve("batch_size", batch_size, "-b/--batch-size"))
        cfg_seed = _config.get().seed  # --seed fixes the epochs' sample order (and dropout) on its own
        # the framework's generator (keras.utils.set_random_seed seeds it), never NumPy's global state: a script's
        # own np.random draws after fit() are those it gets under Keras/TensorFlow. Drawn before -d's data is
        # opened (an image folder's loader draws from the generator too), so a folder and its decoded arrays
        # train in the same order
        seed = int(cfg_seed) if cfg_seed is not None else _rng.make_seed()
        given = not (x is None and y is None)
        if not given:
            x, y = self._default_data(64, batch_size, seed=seed)
        feed = None
        data_x, data_y = x, y  # as given, for a train_step that turns out to run eagerly (below)
        if is_stream(x):
            from flexflow_keras.execution.context import get_runtime

            if validation_split:
                raise DataError("validation_split is only supported for arrays; with a dataset pass "
                                 "validation_data= (e.g. image_dataset_from_directory(subset='both')).")
            feed, x, y, n_stream, what = stream_feed(x, get_runtime(), _config.get().cpus)
            feed.shuffle, feed.seed, feed.steps_per_epoch = shuffle, seed, steps_per_epoch  # for a PyDataset
            if cfg_seed is None and isinstance(feed, IterFeed):  # its batch order: Python's random, as Keras'
                feed.seed = None
        try:
            graph, xs, ys, sw, n = self._prepare(x, y, sample_weight)
        except (ShapeError, AssignInCallError) as e:  # a step the graph cannot hold: run it eagerly (eager_fit.py)
            why = step_hooks.unfit_data_reason(self, e) if isinstance(e, ShapeError) else \
                step_hooks.assign_reason(self, e, "train_step")
            if why is None or hasattr(data_x, "__next__"):  # a generator's first batch is spent
                raise
            _no_strategy_flags(self, why)
            return eager_fit.fit(self, why, data_x, data_y, batch_size, epochs, verbose, callbacks,
                                 validation_split, validation_data, shuffle, class_weight, sample_weight,
                                 initial_epoch, steps_per_epoch, validation_steps, validation_batch_size,
                                 validation_freq)
        if feed is not None:
            feed.prepare_x = lambda bx, g=graph: self._input_arrays(bx, g)
            # batches without labels for a model trained on its added losses (or compute_loss) alone get the
            # placeholder labels its first batch got in _prepare
            unlabelled = y is None and bool(ys)
            feed.prepare_y = lambda by, bn, g=graph: (
                self._labels(by, g, bn) if not _no_labels(by) else
                [custom_training.placeholder_labels(bn) for _ in g.outputs] if unlabelled else [])
            n = n_stream
            log.info("data: %s", what)
            if "batch_size" in _config.get().from_cli:  # a dataset's batches are its own: say the flag cannot act
                log.warning("-b/--batch-size %d on the command line does not apply to this fit(): it received %s, "
                            "whose batches are its own. Batch the dataset with that size (.batch(n), or the "
                            "batch_size of the function that makes it) to use it.", batch_size, what)
        elif given:
            log.info("data: arrays passed to fit(), %d samples", n)
        if feed is not None:
            if sample_weight is not None:
                raise DataError("sample_weight cannot be given with a dataset; yield (x, y, sample_weight) "
                                 "batches instead.")
            feed.check_weights = lambda w: (None if self._engine_key is None else  # no step graph yet
                                            custom_training.check_override_weights(self, w, self._engine_key[2]))
            feed.weigh(lambda labels: self._class_weights(class_weight, labels, None))
            feed.set_dtypes([a.dtype for a in xs] + [a.dtype for a in ys])
            if feed.labels is not None:
                self._validate_labels(graph, feed.labels)  # every label, not only the first batch's
        self._validate_labels(graph, ys)
        _check_finite(xs, "x")
        _check_finite(ys, "y")
        check_not_empty(n, "fit")
        val = None
        if validation_data is not None:
            val = self._unpack_validation(validation_data)
        elif (cut := validation_cut(n, validation_split)) is not None:
            val = ([a[cut:] for a in xs], [a[cut:] for a in ys], sample_weights.take(sw, slice(cut, None)))
            xs, ys, sw = [a[:cut] for a in xs], [a[:cut] for a in ys], sample_weights.take(sw, slice(None, cut))
            n = cut
        sw = self._class_weights(class_weight, ys, sw)  # the training part only: Keras' validation is unweighted
        # a dataset's weights come with its batches: the first one's (else class_weight's) decide
        first = None if feed is None else getattr(feed, "first_weights", None)
        self._hand_weights(sw if first is None else first)
        engine = self._engine_for(graph, ys)
        sources = self._sources(xs, ys, sw, len(xs[0]))
        if feed is None:
            if script_batch is None and not _config.get().given("batch_size"):
                log.info("fit(): no batch_size given, so batches of %d (the -b/--batch-size default; Keras' own "
                         "default is 32: pass batch_size=32 or -b 32 for Keras' number of steps)", batch_size)
            feed = ArrayFeed(sources, n, batch_size, shuffle, seed, steps_per_epoch)
        else:
            batch_size = len(xs[0])
        # None: the data's length is unknown, so each epoch runs until the data ends (Keras 3)
        steps = feed.num_batches if steps_per_epoch is None else int(steps_per_epoch)
        simulator_notice.estimate_for(self)
        engine.refresh_threads()  # kernel threads sized to the cores other processes leave free
        _interrupts.phase("the strategy search")
        # what the search may cost (choice.py); unknown with the data's length
        engine.planned_steps = None if steps is None else steps * max(epochs - int(initial_epoch), 1)
        engine.planned_run = None  # a fit's steps (not a train_on_batch loop's guess)
        engine.prepare_strategy(sources, np.arange(min(batch_size, len(xs[0])), dtype=np.int64), 0, again=True)
        if _config.get().search_only:
            feed.close()
            log.info("--search-only: the strategy is chosen%s; not training",
                     f" and written to {_config.get().export_strategy}" if _config.get().export_strategy else "")
            if not _config._in_notebook():
                raise SystemExit(0)
            return getattr(self, "history", None)
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = callbacks_mod.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                                         verbose=verbose, epochs=epochs, steps=steps, samples=n,
                                         batch_size=batch_size,
                                         data=provenance.fit_note(not given and not _config.get().dataset, xs, ys))
        print_freq = _config.get().print_freq
        if verbose:
            cbs.append_flexflow_logger(print_freq, batch_size)
        elif print_freq and "print_freq" in _config.get().from_cli:  # the command line wins over verbose=0
            log.info("-p/--print-freq %d on the command line overrides the script's verbose=0: a progress line "
                     "every %d iterations", print_freq, print_freq)
            cbs.append_flexflow_logger(print_freq, batch_size, lines=True)
        running = RunningMeans(self._loss_names, self._metric_objects, getattr(self, "run_eagerly", False),
                               owner=self, hook="train_step")
        pipelined = passive(cbs)
        self.stop_training = False
        t_start = time.perf_counter()
        epoch_logs: dict = {}
        cbs.on_train_begin()
        resumed, self._initial_epoch = getattr(self, "_initial_epoch", None), None  # set by BackupAndRestore
        initial_epoch = int(resumed or initial_epoch)
        # a dataset's batches may change shape (padded per batch): one step graph per shape
        variants = self._variants(engine, len(graph.inputs)) if isinstance(feed, IterFeed) else None
        try:
            epoch_logs = self._epochs(engine, feed, cbs, running, pipelined, val, initial_epoch, epochs, steps,
                                      seed, validation_freq, validation_batch_size or batch_size, validation_steps,
                                      variants)
        finally:
            feed.close()
            if engine.trial is not None:  # stopped (a callback, too few full batches) before its trial decided
                engine.trial.cancel("the fit ended before its first steps decided")
        _interrupts.phase(None)  # not in `finally`: a Ctrl-C's message still names the epoch and step
        elapsed = time.perf_counter() - t_start
        samples = self._fit_samples
        engine.sync_to_host()
        cbs.on_train_end(epoch_logs)
        log.info("fit: %d samples in %.2f s, %.1f samples/s", samples, elapsed, samples / max(elapsed, 1e-9))
        self._last_fit_stats = {"samples": samples, "seconds": elapsed,
                                "samples_per_second": samples / max(elapsed, 1e-9), "data_stalls": feed.history}
        return self.history

    def _epochs(self, engine, feed, cbs, running, pipelined, val, initial_epoch, epochs, steps, seed,
                validation_freq, validation_batch_size, validation_steps, variants=None):
        """The epoch loop of fit; returns the last epoch's logs. `variants`: the engines of a dataset's
        batches of other shapes (models/shape_variants.py)."""
        # Per-step randomness (dropout) follows the optimizer's step count, so a fit resumed from a
        # checkpoint (initial_epoch=k, same seed) draws what the uninterrupted fit drew at that step.
        step_no = int(getattr(self.optimizer, "iterations", 0))
        samples = 0
        epoch_logs: dict = {}
        fit_key = self._engine_key  # fit's engine, to take back after another graph's ran (_reclaim)
        feed.final_epoch = epochs - 1
        # steps are issued without waiting and read where a value is needed (models/step_window.py)
        overlap = _overlap.enabled()
        window = StepWindow(engine, running, self._loss_weights, IN_FLIGHT if overlap and pipelined else 0)
        demand = LogDemand(cbs, every_batch=not (overlap and pipelined))
        val_spec = True  # a PyDataset's signature reads: before its first validation pass only (Keras keeps its iterator)
        for epoch in range(initial_epoch, epochs):
            running.reset()
            cbs.on_epoch_begin(epoch)
            if epoch > initial_epoch:
                engine.refresh_threads()  # load that came or went during the last epoch
            feed.start_epoch(epoch)
            t_epoch = time.perf_counter()
            logs: dict = {}
            window.start_epoch()
            for b in range(steps) if steps is not None else itertools.count():
                if len(window) and not feed.ready(b):
                    window.drain()  # the data is late: what follows is time no step runs
                got = feed.take(b)
                if got is None:
                    break
                _interrupts.at(epoch, b)
                sources, rows = got
                cbs.on_train_batch_begin(b)
                if self._engine is not engine:  # a callback ran the model at other shapes (_reclaim)
                    self._reclaim(engine, fit_key)
                step_engine = engine if variants is None else variants.engine_for(sources)
                if len(window) and store_budget.crowded(step_engine, len(rows)):
                    window.end_epoch()  # read the steps in flight: their programs pin the stores to drop
                handle = step_engine.issue_train(sources, rows, step_no, seed, wait=not overlap)
                feed.consumed(b, getattr(handle[0], "last_loader", None))
                step_no += 1
                samples += len(rows)
                self._batch_rows = len(rows)  # the progress display's sample count (callbacks/progress.py)
                window.push(len(rows), handle)
                del handle  # the window holds it until it is read (a later step may drop its store)
                if demand.due(b):
                    window.drain()
                    logs = dict(sorted(running.logs().items()))  # Keras 3's order, as the epoch's logs
                else:
                    window.trim()  # logs: the last read's, for callbacks that only count batches
                cbs.on_train_batch_end(b, logs)
                if self.stop_training:
                    break
            window.end_epoch()
            if window.read:
                logs = dict(sorted(running.logs().items()))
            feed.end_epoch(epoch, time.perf_counter() - t_epoch)
            epoch_logs = dict(logs)
            if val is not None and should_validate(epoch, validation_freq):
                # fit's own callbacks see the validation's test hooks, as in Keras 3 (the progress bar
                # stays quiet in fit; TensorBoard writes its evaluation scalars)
                with call_mode.validating():  # a call() branching on training runs its training=False graph
                    val_logs = (evaluate_stream(self, val, validation_steps, callbacks=cbs, spec=val_spec)
                                if is_stream(val) else
                                self._evaluate_arrays(*val, validation_batch_size, validation_steps, callbacks=cbs))
                    val_spec = False
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            epoch_logs = dict(sorted(epoch_logs.items()))  # Keras 3's order (History, CSVLogger, the epoch line)
            cbs.on_epoch_end(epoch, epoch_logs)
            if steps is None and epoch == initial_epoch and not self.stop_training:
                log.info("fit: the data's length was unknown; its first pass held %d batches", window.read)
            if self.stop_training or feed.exhausted:  # a generator with nothing more (feed's warning)
                break
        self._reclaim(engine, fit_key)  # after the last epoch (within one, the next step does it)
        self._fit_samples = samples
        return epoch_logs

    def _reclaim(self, engine, key) -> None:
        """Make fit's `engine` the model's again after validation or a callback ran the model at other input
        shapes (Input(shape=(None,)): another graph, another engine, which took the variables with fit's
        values as they were then); fit's engine, its weights and optimizer slots, goes on."""
        if self._engine is not engine:
            self._detach_engine()
            engine.attach()
            self._engine, self._engine_key = engine, key


def _check_finite(arrays, what: str) -> None:
    for k, a in enumerate(arrays or []):
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = np.argwhere(~np.isfinite(a))[0]
            name = what if len(arrays) == 1 else f"{what}[{k}]"
            raise DataError(f"{name} contains NaN or infinity at index {tuple(int(i) for i in bad)} "
                            f"(value {a[tuple(bad)]}). Clean the data (e.g. np.nan_to_num) before fit().")


def _script_batch_size(batch_size):
    """fit's batch_size as Keras 3 reads it: 0 is not given (its data adapters take `batch_size or 32`;
    here the -b default), a negative or non-integer one an error."""
    if isinstance(batch_size, (float, np.floating)) and float(batch_size).is_integer():
        batch_size = int(batch_size)  # 32.0 from arithmetic: taken, as it always was here
    if batch_size is None or (isinstance(batch_size, (int, np.integer)) and not isinstance(batch_size, bool)
                              and batch_size == 0):
        return None
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 0:
        raise ValueError(f"fit(batch_size={batch_size!r}): batch_size must be a positive integer (or None for "
                         f"the -b/--batch-size default), received {type(batch_size).__name__} {batch_size!r}.")
    return int(batch_size)


def _no_labels(by) -> bool:
    """Whether a dataset batch came without labels (a bare x, or a dict of inputs: unpack_batch gives [])."""
    return by is None or (isinstance(by, list | tuple) and not by)
