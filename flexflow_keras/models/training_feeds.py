"""Where fit's batches come from: a feed per kind of data, one interface for the training loop.

`ArrayFeed`: arrays in memory; the step's loader gathers each batch's rows (`epoch_order(seed,
epoch)` decides them). `PipelineFeed`: an `ImageDataset` (or the `-d` image folder) decoded by loader
tasks into the zero-copy ring (data/pipeline.py). `IterFeed`: any other iterable of (x, y[, sample
weight]) batches (a generator, a tf.data dataset), drawn on the program thread. `evaluate_stream` and
`predict_stream` go through a dataset batch by batch (an image folder through the loader pipeline too),
so validating on a large folder never holds it in memory.

Interface: `start_epoch(epoch)`; `ready(b)` (never blocks: the loop collects the step in flight before
waiting for data that is not ready, so waits measure stalls); `take(b)` -> (sources, rows) or None at
the end of the data; `consumed(b, loader_futures)`; `end_epoch(epoch, seconds)`; `close()`.
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

    def weigh(self, class_weights) -> None:
        """Per-sample weights from `class_weights(labels)` (None: ones), gathered by the loaders."""
        self.pipeline.sample_weight = class_weights(self.labels)

    def __len__(self) -> int:
        return len(self.dataset.batch_rows(0))

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

    def close(self) -> None:
        self.pipeline.close()


class IterFeed:
    """Batches drawn from an iterable each step; the time spent drawing counts as waiting for data."""

    def __init__(self, data, first):
        self.data, self._first = data, first
        self._it = None
        self.wait_s = 0.0
        self.history: list = []
        self.reiterable = not hasattr(data, "__next__")
        self.labels = None  # known only batch by batch
        self._weigh = None
        self.dtypes = None
        self.shuffle, self.seed = False, 0  # set by fit; used by a PyDataset (batch order per epoch)
        self.steps_per_epoch = None  # set by fit: a PyDataset's pass then continues across epochs (Keras 3)
        self._taken = 0  # batches of the PyDataset's current pass taken
        self._pass: int | None = None
        self.prepare_x = None  # set by fit: a batch's inputs -> the step's input arrays
        self.prepare_y = None  # set by fit: a batch's labels and length -> one label array per output

    def set_dtypes(self, dtypes) -> None:
        """The dtypes of the step's input and label regions, which every batch is cast to."""
        self.dtypes = list(dtypes)

    def weigh(self, class_weights) -> None:
        """Weights for each batch: `class_weights(labels)` times the batch's own sample weights."""
        self._weigh = class_weights

    def __len__(self) -> int:
        try:
            return len(self.data)
        except TypeError:
            raise DataError("fit() got a generator or iterator without a length; pass steps_per_epoch.") from None

    def start_epoch(self, epoch: int) -> None:
        from flexflow_keras.utils.py_dataset import PyDataset

        if isinstance(self.data, PyDataset):
            n = len(self.data)
            if self._it is None or self.steps_per_epoch is None or self._taken >= n:
                if self._it is not None:
                    self._it.close()
                self._pass = epoch if self._pass is None else self._pass + 1
                self._it, self._taken = self.data.iterate(bool(self.shuffle), self.seed + self._pass, hooks=False), 0
            self.data.on_epoch_begin()
        elif self._it is None or self.reiterable:
            self._it = iter(self.data)
        self.wait_s = 0.0

    def ready(self, b: int) -> bool:
        return False

    def take(self, b: int):
        t0 = time.perf_counter()
        if self._first is not None:
            item, self._first = self._first, None
        elif self._pass is not None and self._taken >= len(self.data):  # a PyDataset's pass is over
            return None
        else:
            try:
                item = next(self._it)
            except StopIteration:
                return None
        self._taken += 1
        x, y, sw = unpack_batch(item)
        if self.prepare_x is not None:  # the model's input order (a dict by name) and Keras' rank rule
            x = self.prepare_x(x)
        elif isinstance(x, dict):
            x = list(x.values())
        n = len(x[0])
        y = self.prepare_y(y, n) if self.prepare_y is not None else _arrays(y)
        self.wait_s += time.perf_counter() - t0
        sw = _batch_weights(sw, n)
        if self._weigh is not None and y:
            extra = self._weigh(y)
            if extra is not None:
                from flexflow_keras.models.sample_weights import scale

                sw = scale(sw, extra)
        return _cast(tuple(x) + tuple(y), self.dtypes) + (sw,), np.arange(n, dtype=np.int64)

    def consumed(self, b: int, loader) -> None:
        pass

    def end_epoch(self, epoch: int, seconds: float) -> None:
        self.history.append((epoch, self.wait_s, seconds))
        if self._pass is not None:  # a PyDataset: its epoch ends (its pass may continue, see start_epoch)
            if self.steps_per_epoch is None:
                self._it.close()
            self.data.on_epoch_end()
        elif hasattr(self._it, "close") and not hasattr(self.data, "__next__"):
            self._it.close()

    def close(self) -> None:
        if hasattr(self._it, "close") and not hasattr(self.data, "__next__"):
            self._it.close()


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
        if len(x) == 0:
            raise DataError(f"{what} received an empty PyDataset (len 0).")
        item = x[0]
        xs, ys, _ = unpack_batch(item)
        from flexflow_keras.data.slices import SliceDataset

        b = batch_length(xs)
        kind = "tf.data Dataset" if isinstance(x, SliceDataset) else f"{type(x).__name__} (PyDataset)"
        return IterFeed(x, None), _one_input(xs), _one(ys), b * len(x), f"{kind}, {_batches(len(x), b)}"
    it = iter(x)
    try:
        item = next(it)
    except StopIteration:
        raise DataError(f"{what} received an empty dataset or generator.") from None
    xs, ys, _ = unpack_batch(item)
    if hasattr(x, "__next__"):  # a generator: one iterator for the whole run, its first batch kept
        feed = IterFeed(x, item)
        feed._it, feed.reiterable = it, False
    else:  # a dataset: a fresh pass each epoch (the peeked batch was only for the shapes)
        feed = IterFeed(x, None)
    b = batch_length(xs)
    n = b * (len(x) if hasattr(x, "__len__") else 1)
    count = _batches(len(x), b) if hasattr(x, "__len__") else f"batches of {b}, their number unknown"
    return feed, _one_input(xs), _one(ys), n, f"{type(x).__name__} of batches ({count})"


def _batches(n_batches: int, first: int) -> str:
    """What a pass of batches holds, as far as it is known before reading it: the batches' count and the
    first one's size (the last one may be smaller)."""
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


def folder_dataset(model, path: str, batch_size: int):
    """The `-d` image folder as a dataset shaped for `model`: images sized and coloured for its input,
    labels encoded for its loss (class ids; one-hot for categorical crossentropy; 0/1 for binary)."""
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
    ds = ImageDataset(source, batch_size, mode, shuffle=True, seed=_config.get().seed)
    if mode == "categorical":  # one-hot as wide as the output, so a folder with fewer classes still fits
        units = graph.outputs[0].shape[-1] or len(source.class_names)
        ds.labels = encode_labels(source.labels, mode, max(int(units), len(source.class_names)))
    return ds


def _stream_batches(data, labelled: bool):
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
    for item in data:
        yield unpack_batch(item)


def _one(arrays):
    if isinstance(arrays, dict):
        return arrays
    return None if not arrays else (arrays if len(arrays) > 1 else arrays[0])


def evaluate_stream(model, data, steps=None, callbacks=None, verbose=0) -> dict:
    """Loss and metrics of `model` over the batches of a dataset or iterable, batch by batch."""
    from flexflow_keras.callbacks import callback_list
    from flexflow_keras.models.training_utils import RunningMeans

    nsteps = steps if steps is not None else (len(data) if hasattr(data, "__len__") else None)
    cbs = callback_list.for_evaluation(callbacks, model, verbose, nsteps)
    running, logs = None, {}
    cbs.on_test_begin()
    for b, (bx, by, bsw) in enumerate(_stream_batches(data, True)):
        if nsteps is not None and b >= nsteps:  # a Sequence that also iterates endlessly stops at len()
            break
        graph, xs, ys, sw, n = model._prepare(_one(bx), _one(by), bsw)
        model._validate_labels(graph, ys)
        engine = model._batch_engine(graph, xs, ys)
        if running is None:
            running = RunningMeans(model._loss_names, model._metric_objects)
        cbs.on_test_batch_begin(b)
        losses, stats = engine.eval_step(model._sources(xs, ys, sw, n), np.arange(n, dtype=np.int64))
        running.add(n, losses, model._loss_weights, model._penalty(), stats)
        logs = running.logs()
        cbs.on_test_batch_end(b, logs)
    if running is None:
        raise DataError("evaluate() received an empty dataset or generator.")
    cbs.on_test_end(logs)
    return logs


def predict_stream(model, data, steps=None, callbacks=None, verbose=0):
    """Model outputs over the batches of a dataset or iterable (labels, if any, are ignored)."""
    from flexflow_keras import callbacks as callbacks_mod

    nsteps = steps if steps is not None else (len(data) if hasattr(data, "__len__") else None)
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
