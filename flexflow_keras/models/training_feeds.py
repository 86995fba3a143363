"""Where fit's batches come from: a feed per kind of data, one interface for the training loop.

`ArrayFeed`: arrays in memory; the step's loader gathers each batch's rows (`epoch_order(seed,
epoch)` decides them). `PipelineFeed`: an `ImageDataset` (or the `-d` image folder) decoded by loader
tasks into the zero-copy ring (data/pipeline.py). `IterFeed`: any other iterable of (x, y[, sample
weight]) batches (a generator, a tf.data dataset), drawn on the program thread. `evaluate_stream` and
`predict_stream` go through a dataset batch by batch (an image folder through the loader pipeline too),
so validating on a large folder never holds it in memory.

Interface: `num_batches` (a pass's batches; None when unknown: the epoch ends where the data does);
`start_epoch(epoch)`; `ready(b)` (never blocks: the loop collects the step in flight before waiting for
data that is not ready, so waits measure stalls); `take(b)` -> (sources, rows) or None at the end of the
data; `consumed(b, loader_futures)`; `end_epoch(epoch, seconds)`; `exhausted` (a one-shot iterator has
nothing more: fit stops after the epoch); `close()`.

Data of unknown length (Keras 3's epoch iterator): a tf.data dataset whose cardinality is unknown (a
generator, a filter) or infinite, a Python generator, a PyDataset whose `num_batches` is None.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from flexflow_keras.data.order import epoch_order
from flexflow_keras.errors import DataError

log = logging.getLogger("flexflow_keras")


def _cast(sources, dtypes):
    """The batch's arrays in the dtypes of the step's regions (no copy when they already are)."""
    if dtypes is None:
        return sources
    return tuple(np.ascontiguousarray(a, d) for a, d in zip(sources, dtypes, strict=False)) + \
        tuple(sources[len(dtypes):])


class ArrayFeed:
    """Arrays in memory, `sources` = inputs + labels + sample weights.

    With `fit(steps_per_epoch=...)` a pass over the data continues across epochs and an epoch that runs
    out of data ends early (with a warning), as Keras 3's epoch iterator does: 3 steps an epoch over 4
    batches train batches 0-2, then batch 3 alone, then a new pass."""

    def __init__(self, sources, n: int, batch_size: int, shuffle, seed: int, steps_per_epoch=None):
        self.sources, self.n, self.batch_size, self.shuffle, self.seed = sources, n, batch_size, shuffle, seed
        self.order = np.arange(n, dtype=np.int64)
        self.history: list = []
        self.labels = None
        self.continuing = steps_per_epoch is not None
        self._cursor = 0  # batches of the current pass taken
        self._pass: int | None = None
        self._warned = False

    def __len__(self) -> int:
        return math.ceil(self.n / self.batch_size)

    @property
    def num_batches(self) -> int:
        return len(self)

    def start_epoch(self, epoch: int) -> None:
        if not self.continuing:
            self.order = epoch_order(self.n, self.seed, epoch, self.shuffle, self.batch_size)
            return
        if self._pass is None or self._cursor >= len(self):  # a new pass (the first: numbered like its epoch)
            self._pass = epoch if self._pass is None else self._pass + 1
            self.order = epoch_order(self.n, self.seed, self._pass, self.shuffle, self.batch_size)
            self._cursor = 0

    def ready(self, b: int) -> bool:
        return True

    def take(self, b: int):
        if self.continuing:
            if self._cursor >= len(self):
                if not self._warned:
                    log.warning("Your input ran out of data; interrupting the epoch. fit(steps_per_epoch=...) "
                                "asks for more batches than the %d of a pass over the data; the next epoch "
                                "starts a new pass.", len(self))
                    self._warned = True
                return None
            b, self._cursor = self._cursor, self._cursor + 1
        rows = self.order[(b * self.batch_size) % self.n:][:self.batch_size]
        return (self.sources, rows) if len(rows) else None

    def consumed(self, b: int, loader) -> None:
        pass

    def end_epoch(self, epoch: int, seconds: float) -> None:
        pass

    exhausted = False

    def close(self) -> None:
        pass


class PipelineFeed:
    """An `ImageDataset` through the loader pipeline (decoding ahead on the CPU processors)."""

    def __init__(self, dataset, labels, rtm, cpus: int):
        from flexflow_keras.data.pipeline import LoaderPipeline

        self.dataset = dataset
        batch = min(dataset.batch_size, dataset.num_samples)  # a batch above the data needs no bigger slots
        self.pipeline = LoaderPipeline(rtm, dataset.source, labels, batch, dataset.transform(), cpus)
        self.history = self.pipeline.history
        self.labels = self.pipeline.labels
        self.dtypes = None
        self.final_epoch: int | None = None  # set by fit: no preloading past it
        self._preloaded: int | None = None
        self.check_weights = None  # set by fit; unused here: these weights are known before the step graph

    def weigh(self, class_weights) -> None:
        """Per-sample weights from `class_weights(labels)` (None: ones), gathered by the loaders. (Known
        before the step graph is built, which is built for them: nothing to check against.)"""
        self.pipeline.sample_weight = class_weights(self.labels)

    def __len__(self) -> int:
        return len(self.dataset.batch_rows(0))

    @property
    def num_batches(self) -> int:
        return len(self)

    def start_epoch(self, epoch: int) -> None:
        if self._preloaded != epoch:
            self.pipeline.start_epoch(self.dataset.batch_rows(epoch))
        self._preloaded = None

    def ready(self, b: int) -> bool:
        return b >= len(self.pipeline) or self.pipeline.ready(b)

    def set_dtypes(self, dtypes) -> None:
        """The dtypes of the step's input and label regions (a `map` may return others)."""
        self.dtypes = list(dtypes) if self.pipeline.transform is not None else None

    def take(self, b: int):
        """Batch b, or None past the end of the dataset (a steps_per_epoch above its length ends the epoch
        early, as in Keras)."""
        if b >= len(self.pipeline):
            return None
        sources, rows = self.pipeline.take(b)
        return _cast(sources, self.dtypes), rows

    def consumed(self, b: int, loader) -> None:
        self.pipeline.consumed(b, loader)

    def end_epoch(self, epoch: int, seconds: float) -> None:
        """Report the epoch's stall, then start loading the next epoch (during validation and callbacks)."""
        self.pipeline.end_epoch(epoch, seconds)
        if self.final_epoch is None or epoch < self.final_epoch:
            self.pipeline.start_epoch(self.dataset.batch_rows(epoch + 1))
            self._preloaded = epoch + 1

    exhausted = False

    def close(self) -> None:
        self.pipeline.close()


class IterFeed:
    """Batches drawn from an iterable each step; the time spent drawing counts as waiting for data.

    As Keras 3's epoch iterator: without `steps_per_epoch` each epoch is a new pass that ends where the data
    does (`num_batches` None: the first pass counts them); with it the pass continues across epochs, an
    epoch that runs out of data ends early (warned once), and the next epoch starts a new pass. A one-shot
    iterator (a Python generator) cannot start one: once it has nothing more, `exhausted` ends the fit."""

    def __init__(self, data, first):
        self.data, self._first = data, first
        self._it = None
        self.wait_s = 0.0
        self.history: list = []
        from flexflow_keras.utils.py_dataset import PyDataset

        # a PyDataset passes again by index, even one with an endless __next__ (ImageDataGenerator's iterators)
        self.reiterable = isinstance(data, PyDataset) or not hasattr(data, "__next__")
        self.num_batches = known_length(data)
        self.labels = None  # known only batch by batch
        self._weigh = None
        self.dtypes = None
        self.shuffle, self.seed = False, 0  # set by fit; used by a PyDataset (batch order per epoch)
        self.steps_per_epoch = None  # set by fit: the pass then continues across epochs (Keras 3)
        self.final_epoch: int | None = None  # set by fit: no look-ahead past it
        self.exhausted = False  # a one-shot iterator has nothing more
        self._taken = 0  # batches of the current pass taken
        self._ended = False  # the current pass has run out
        self._fresh = False  # the current pass was started this epoch and nothing is taken from it yet
        self._cut: int | None = None  # the steps of an epoch the data cut short
        self._warned = False
        self._pass: int | None = None  # a PyDataset's passes
        self.prepare_x = None  # set by fit: a batch's inputs -> the step's input arrays
        self.prepare_y = None  # set by fit: a batch's labels and length -> one label array per output
        self.check_weights = None  # set by fit: refuses weights the model's loss cannot take
        self.first_weights = None  # the first batch's sample weights (set by stream_feed)

    def set_dtypes(self, dtypes) -> None:
        """The dtypes of the step's input and label regions, which every batch is cast to."""
        self.dtypes = list(dtypes)

    def weigh(self, class_weights) -> None:
        """Weights for each batch: `class_weights(labels)` (None: the batch's own sample weights, which may not
        come with class weights)."""
        self._weigh = class_weights

    def _is_pydataset(self) -> bool:
        from flexflow_keras.utils.py_dataset import PyDataset

        return isinstance(self.data, PyDataset)

    def start_epoch(self, epoch: int) -> None:
        pass_over = self._ended or (self.num_batches is not None and self._taken >= self.num_batches)
        if self._it is None or (self.reiterable and (self.steps_per_epoch is None or pass_over)):
            self._new_pass(epoch)
        if self._is_pydataset():
            self.data.on_epoch_begin()
        self.wait_s = 0.0

    def _new_pass(self, epoch: int) -> None:
        if self._it is not None and self.reiterable and hasattr(self._it, "close"):
            self._it.close()
        if self._is_pydataset():
            self._pass = epoch if self._pass is None else self._pass + 1
            seed = None if self.seed is None else self.seed + self._pass  # None: Python's random (Keras')
            self._it = self.data.iterate(bool(self.shuffle), seed, hooks=False)
        else:
            self._it = iter(self.data)
        self._taken, self._ended, self._fresh = 0, False, True

    def ready(self, b: int) -> bool:
        return False

    def take(self, b: int):
        t0 = time.perf_counter()
        if self._first is not None:
            item, self._first = self._first, None
        elif self.num_batches is not None and self._taken >= self.num_batches:  # the pass is over
            return self._ran_out(b)
        else:
            try:
                item = next(self._it)
            except StopIteration:
                return self._ran_out(b)
        self._taken, self._fresh = self._taken + 1, False
        x, y, sw = unpack_batch(item)
        if self.prepare_x is not None:  # the model's input order (a dict by name) and Keras' rank rule
            x = self.prepare_x(x)
        elif isinstance(x, dict):
            x = list(x.values())
        n = len(x[0])
        y = self.prepare_y(y, n) if self.prepare_y is not None else _arrays(y)
        self.wait_s += time.perf_counter() - t0
        given, sw = sw, _batch_weights(sw, n)
        if self._weigh is not None and y:
            extra = self._weigh(y)
            if extra is not None:
                if given is not None:  # Keras 3's dataset adapters refuse the pair
                    raise ValueError("fit() received class_weight and a dataset whose batches carry sample weights "
                                     "(x, y, sample_weight); Keras takes one of them. Fold the class weights into "
                                     "the sample weights the dataset yields, or yield (x, y) batches.")
                from flexflow_keras.models.sample_weights import scale

                sw = scale(sw, extra)
        if self.check_weights is not None:
            self.check_weights(sw)
        return _cast(tuple(x) + tuple(y), self.dtypes) + (sw,), np.arange(n, dtype=np.int64)

    def _ran_out(self, b: int):
        """None: the data ended at batch `b` of the epoch. Without steps_per_epoch that is the epoch's end.
        With it, a pass that ended exactly at the last epoch's end gives way to a new one (the epoch does
        not go empty), and a pass that ends within an epoch cuts it short, as Keras 3 does (`end_epoch`
        warns)."""
        self._ended = True
        if not self.reiterable:
            self.exhausted = True
        if self.steps_per_epoch is None:
            return None
        if b == 0 and self.reiterable and not self._fresh:
            self._new_pass(0)
            return self.take(b)
        self._cut = b
        return None

    def consumed(self, b: int, loader) -> None:
        pass

    def end_epoch(self, epoch: int, seconds: float) -> None:
        self.history.append((epoch, self.wait_s, seconds))
        if self._is_pydataset():
            self.data.on_epoch_end()
        if self.steps_per_epoch is None and self.reiterable and hasattr(self._it, "close"):
            self._it.close()  # the next epoch makes a new pass
        more = self.final_epoch is None or epoch < self.final_epoch
        if not self.reiterable and more and not self.exhausted and self._first is None:
            try:  # a generator that ended exactly at the epoch's end has no more: stop now, not mid-epoch
                self._first = next(self._it)
            except StopIteration:
                self.exhausted = True
        cut, self._cut = self._cut, None
        what = f"the {type(self.data).__name__} has nothing more to give ({self._taken} batches in all)"
        if self.exhausted and more:
            log.warning("Your input ran out of data; interrupting training after epoch %d of %s: %s. fit() cannot "
                        "pass over a generator again: make it yield at least steps_per_epoch * epochs batches "
                        "(loop over its data), or pass a tf.data Dataset or a keras.utils.PyDataset, which each "
                        "epoch passes over again.", epoch + 1,
                        "?" if self.final_epoch is None else self.final_epoch + 1, what)
        elif cut is not None and not self._warned:
            self._warned = True
            log.warning("Your input ran out of data; interrupting the epoch after %d of its steps_per_epoch=%d "
                        "steps: %s.", cut, self.steps_per_epoch,
                        "a pass over the data holds fewer batches, and the next epoch starts a new pass. Make "
                        "steps_per_epoch at most the batches of a pass, or .repeat() the dataset"
                        if self.reiterable else f"{what}. Make it yield at least steps_per_epoch * epochs batches")

    def close(self) -> None:
        if self.reiterable and hasattr(self._it, "close"):
            self._it.close()


def known_length(data) -> int | None:
    """The batches of a pass over `data` when it tells them before being read, else None (Keras 3's
    `num_batches`): a tf.data dataset of unknown or infinite cardinality (its `len` is a TypeError), a
    generator, a PyDataset whose `num_batches` is None."""
    from flexflow_keras.utils.py_dataset import PyDataset

    if isinstance(data, PyDataset):
        n = data.num_batches
        return None if n is None else int(n)
    if callable(getattr(data, "cardinality", None)) and int(data.cardinality()) < 0:
        return None  # tf.data.UNKNOWN_CARDINALITY (-2), INFINITE_CARDINALITY (-1)
    try:
        return len(data)
    except TypeError:
        return None


def _batch_weights(sw, n: int):
    """A batch's sample weights as the loader takes them: ones, one array (n,) or (n, T) for every
    loss, or a tuple with one per output (a list or tuple of arrays in the outputs' order)."""
    if sw is None:
        return np.ones(n, np.float32)
    if isinstance(sw, (list, tuple)) and sw and all(np.ndim(w) >= 1 for w in sw) and len(sw) != n:
        return tuple(np.ones(n, np.float32) if w is None else _batch_weights(w, n) for w in sw)
    w = np.asarray(sw, np.float32)
    if w.ndim >= 2 and w.shape[0] == n and w.size != n:
        return np.ascontiguousarray(w)  # one weight per timestep
    return w.reshape(-1)


def _arrays(a) -> list[np.ndarray]:
    if a is None:
        return []
    if isinstance(a, (list, tuple)):
        return [np.asarray(v) for v in a]
    if isinstance(a, dict):
        return [np.asarray(v) for v in a.values()]
    return [np.asarray(a)]


def unpack_batch(item):
    """(x arrays, y arrays, sample weight or None) of one (x, y[, sw]) batch (or x alone); x and y stay
    dicts of arrays when the batch gives them (the model matches them to its inputs and outputs by name,
    as Keras)."""
    if isinstance(item, tuple) and len(item) in (2, 3):
        x, y = _inputs(item[0]), _inputs(item[1])
        return x, y, (item[2] if len(item) == 3 else None)
    return _inputs(item), [], None


def _inputs(a):
    return {k: np.asarray(v) for k, v in a.items()} if isinstance(a, dict) else _arrays(a)


def batch_length(x) -> int:
    """The samples in a batch's inputs (a list of arrays, or a dict of them)."""
    first = next(iter(x.values())) if isinstance(x, dict) else x[0]
    return len(first)


def is_stream(x) -> bool:
    """Whether `x` is a dataset/iterable of batches rather than arrays."""
    if x is None or isinstance(x, (np.ndarray, list, tuple, dict)) or hasattr(x, "__array__"):
        return False
    return hasattr(x, "__iter__") or hasattr(x, "__next__")


def _dataset_labels(ds):
    return None if ds.labels is None else [np.ascontiguousarray(ds.labels)]


def spec_reads(data, done: int = 0) -> None:
    """Read batches 0 and 1 of a user's PyDataset (those not `done` already) and drop them, as tf.keras 3.15
    does to make its tf.data signature before each fit, evaluate or predict (PyDatasetAdapter.get_tf_dataset:
    NUM_BATCHES_FOR_TENSOR_SPEC = 2, or the whole dataset when shorter): a dataset whose __getitem__ draws
    random numbers (ImageDataGenerator's augmenting iterators) then gives its training batches the same
    draws as under tf.keras. Our tf.data stand-in, a PyDataset inside, is not one (Keras reads no batch of a
    tf.data Dataset)."""
    from flexflow_keras.data.slices import SliceDataset

    if isinstance(data, SliceDataset):
        return
    n = data.num_batches
    for i in range(done, 2 if n is None else min(2, n)):
        data[i]


def keras_reset(data) -> None:
    """Keras 3's `EpochIterator.reset()` on a user's PyDataset: its `on_epoch_end()`. tf.keras 3.15 calls it
    once in fit after the signature reads, before the first epoch, and in evaluate (a fit's validation
    included) before every pass, after the first pass's signature reads; predict does not. An
    ImageDataGenerator iterator draws a new sample order there (np.random.permutation), so the batches and
    the later transforms come out as under tf.keras after a script's np.random.seed. Our tf.data stand-in
    (a PyDataset inside) has no such hook in Keras."""
    from flexflow_keras.data.slices import SliceDataset
    from flexflow_keras.utils.py_dataset import PyDataset

    if isinstance(data, PyDataset) and not isinstance(data, SliceDataset):
        data.on_epoch_end()


def stream_feed(x, rtm, cpus: int, what: str = "fit()"):
    """(feed, first batch x, first batch y, samples, description) for a dataset or iterable `x`."""
    from flexflow_keras.data.dataset import ImageDataset

    if isinstance(x, ImageDataset):
        if x.batch_size is None:
            raise DataError(f"{what} needs a batched dataset; image_dataset_from_directory(batch_size=None) "
                             f"yields single images. Pass a batch_size.")
        if x.labels is None:
            raise DataError(f"{what} needs labels; the dataset was made with label_mode=None (or labels=None).")
        rows = x.batch_rows(0)
        if not rows:
            raise DataError(f"{what} received an empty dataset (take(0), or skip() past its end).")
        first = x._batch(rows[0])
        labels = _dataset_labels(x)
        feed = PipelineFeed(x, labels, rtm, cpus)
        n = sum(len(r) for r in rows)
        return feed, np.asarray(first[0]), np.asarray(first[1]), n, f"{x.describe()} ({n} samples a pass)"
    from flexflow_keras.utils.py_dataset import PyDataset

    if isinstance(x, PyDataset):  # peek by index: a pass would call on_epoch_begin/end
        feed = IterFeed(x, None)
        if feed.num_batches == 0:
            raise DataError(f"{what} received an empty PyDataset (len 0).")
        xs, ys, feed.first_weights = unpack_batch(x[0])
        spec_reads(x, done=1)
        keras_reset(x)  # before the first epoch, as Keras' fit
        from flexflow_keras.data.slices import SliceDataset

        b = batch_length(xs)
        kind = "tf.data Dataset" if isinstance(x, SliceDataset) else f"{type(x).__name__} (PyDataset)"
        return feed, _one_input(xs), _one(ys), b * (feed.num_batches or 1), f"{kind}, {_batches(feed.num_batches, b)}"
    it = iter(x)
    try:
        item = next(it)
    except StopIteration:
        raise DataError(f"{what} received an empty dataset or generator.") from None
    xs, ys, first_weights = unpack_batch(item)
    if hasattr(x, "__next__"):  # a generator: one iterator for the whole run, its first batch kept
        feed = IterFeed(x, item)
        feed._it, feed.reiterable = it, False
    else:  # a dataset: a fresh pass each epoch (the peeked batch was only for the shapes)
        feed = IterFeed(x, None)
    feed.first_weights = first_weights  # whether a compute_loss override is handed weights (training_fit.py)
    b = batch_length(xs)
    return feed, _one_input(xs), _one(ys), b * (feed.num_batches or 1), \
        f"{type(x).__name__} of batches ({_batches(feed.num_batches, b)})"


def _batches(n_batches: int | None, first: int) -> str:
    """What a pass of batches holds, as far as it is known before reading it: the batches' count and the
    first one's size (the last one may be smaller)."""
    if n_batches is None:
        return f"batches of {first}, their number unknown until a pass ends"
    return f"{n_batches} batch{'es' if n_batches != 1 else ''} a pass, the first of {first} samples"


def _one_input(xs):
    return xs if isinstance(xs, dict) or len(xs) > 1 else xs[0]


def folder_for_split(path: str, split: str) -> str:
    """The image folder that `split` reads: the -d folder for training; for evaluation a held-out sibling
    (``val/`` beside ``train/``, see `held_out_folder`) when there is one, else the -d folder itself, with a
    warning that the figures are on training images."""
    from flexflow_keras.data.images import HELD_OUT_NAMES, held_out_folder

    if split == "train":
        return path
    other = held_out_folder(path)
    if other is not None:
        log.info("data: evaluating on %s, the held-out folder beside -d %s", other, path)
        return other
    log.warning("data: evaluate() without data reads -d %s, the training images: no held-out folder (%s) "
                "beside a folder named train. Pass the held-out data to evaluate(), or lay the dataset out as "
                "DIR/train and DIR/val.", path, ", ".join(HELD_OUT_NAMES))
    return path


def folder_dataset(model, path: str, batch_size: int, seed: int | None = None):
    """The `-d` image folder as a dataset shaped for `model`: images sized and coloured for its input,
    labels encoded for its loss (class ids; one-hot for categorical crossentropy; 0/1 for binary), shuffled
    with `seed` (--seed's when given)."""
    from flexflow_keras import config as _config
    from flexflow_keras import losses as losses_mod
    from flexflow_keras.data.dataset import ImageDataset, encode_labels
    from flexflow_keras.data.images import open_image_folder

    graph = model._graph_for(None)
    source = open_image_folder(path, [t.spec for t in graph.inputs])
    out_names = model._output_names_for(graph)
    loss_arg = model._per_output(getattr(model, "_loss_arg", None), out_names, "loss")[0]
    kind = getattr(losses_mod.get(loss_arg), "label_kind", None) if loss_arg is not None else None
    mode = {"categorical": "categorical", "binary": "binary"}.get(kind, "int")
    cfg_seed = _config.get().seed
    ds = ImageDataset(source, batch_size, mode, shuffle=True, seed=cfg_seed if cfg_seed is not None else seed)
    if mode == "categorical":  # one-hot as wide as the output, so a folder with fewer classes still fits
        units = graph.outputs[0].shape[-1] or len(source.class_names)
        ds.labels = encode_labels(source.labels, mode, max(int(units), len(source.class_names)))
    return ds


def _stream_batches(data, labelled: bool, spec: bool = True):
    """(x arrays, y arrays, sample weight or None) per batch of `data`, without holding the whole set: an
    `ImageDataset` is decoded by the loader pipeline (the step runs synchronously, so a slot is free
    again once its batch is handed back), anything else is iterated."""
    from flexflow_keras import config as _config
    from flexflow_keras.data.dataset import ImageDataset
    from flexflow_keras.execution.context import get_runtime

    if isinstance(data, ImageDataset) and data.batch_size is not None and data.num_samples:
        labels = [] if data.labels is None else [np.ascontiguousarray(data.labels)]
        feed = PipelineFeed(data, labels, get_runtime(), _config.get().cpus)
        feed.final_epoch = 0
        feed.start_epoch(0)
        try:
            for b in range(len(feed)):
                sources, _ = feed.take(b)  # (x, labels..., sample weights)
                yield [sources[0]], (list(sources[1:-1]) if labelled else []), None
                feed.consumed(b, None)
        finally:
            feed.close()
        return
    from flexflow_keras.utils.py_dataset import PyDataset

    # a PyDataset: one pass by index between its epoch hooks, as Keras 3's adapter (ImageDataGenerator's
    # iterators also iterate endlessly from wherever `next` left them), after its signature reads
    if spec and isinstance(data, PyDataset):
        spec_reads(data)
    for item in (data.iterate() if isinstance(data, PyDataset) else data):
        yield unpack_batch(item)


def _one(arrays):
    if isinstance(arrays, dict):
        return arrays
    return None if not arrays else (arrays if len(arrays) > 1 else arrays[0])


def evaluate_stream(model, data, steps=None, callbacks=None, verbose=0, spec: bool = True) -> dict:
    """Loss and metrics of `model` over the batches of a dataset or iterable, batch by batch (`spec`: a
    PyDataset's signature reads first, `spec_reads`)."""
    from flexflow_keras.callbacks import callback_list
    from flexflow_keras.models.training_utils import RunningMeans
    from flexflow_keras.utils.py_dataset import PyDataset

    nsteps = steps if steps is not None else known_length(data)
    cbs = callback_list.for_evaluation(callbacks, model, verbose, nsteps)
    running, logs = None, {}
    if isinstance(data, PyDataset):  # Keras makes its iterator and resets it before the test hooks run
        if spec:
            spec_reads(data)
        keras_reset(data)
    cbs.on_test_begin()
    for b, (bx, by, bsw) in enumerate(_stream_batches(data, True, spec and not isinstance(data, PyDataset))):
        if nsteps is not None and b >= nsteps:  # a Sequence that also iterates endlessly stops at len()
            break
        graph, xs, ys, sw, n = model._prepare(_one(bx), _one(by), bsw)
        model._validate_labels(graph, ys)
        model._hand_weights(sw)
        engine = model._batch_engine(graph, xs, ys)
        if running is None:
            running = RunningMeans(model._loss_names, model._metric_objects, getattr(model, "run_eagerly", False),
                                   owner=model, hook="test_step")
        cbs.on_test_batch_begin(b)
        losses, stats = engine.eval_step(model._sources(xs, ys, sw, n), np.arange(n, dtype=np.int64))
        running.add(n, losses, model._loss_weights, model._penalty(), stats)
        logs = running.logs()
        cbs.on_test_batch_end(b, logs)
    if running is None:  # Keras 3 warns, and evaluate gives [] ({} with return_dict), as here
        log.warning("evaluate(): the dataset or generator gave no batch (Keras: 'Your input ran out of data'); "
                    "there is no loss or metric to report, so it returns [] ({} with return_dict=True).")
    cbs.on_test_end(logs)
    return logs


def predict_stream(model, data, steps=None, callbacks=None, verbose=0):
    """Model outputs over the batches of a dataset or iterable (labels, if any, are ignored)."""
    from flexflow_keras import callbacks as callbacks_mod

    nsteps = steps if steps is not None else known_length(data)
    cbs = callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=model, verbose=verbose, epochs=1,
                                     steps=nsteps)
    cbs.on_predict_begin()
    chunks: list = []
    for b, (bx, _, _) in enumerate(_stream_batches(data, False)):
        if nsteps is not None and b >= nsteps:  # a Sequence that also iterates endlessly stops at len()
            break
        graph, xs, _, _, n = model._prepare(_one(bx), None, None, need_labels=False)
        engine = model._batch_engine(graph, xs, None)
        cbs.on_predict_batch_begin(b)
        outs = engine.predict_step(tuple(xs), np.arange(n, dtype=np.int64))
        chunks.append(outs)
        cbs.on_predict_batch_end(b, {"outputs": outs})
    cbs.on_predict_end()
    if not chunks:
        raise DataError("predict() received an empty dataset or generator.")
    return model._pack_outputs([np.concatenate([c[i] for c in chunks], axis=0) for i in range(len(chunks[0]))])
