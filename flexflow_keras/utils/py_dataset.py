"""`keras.utils.PyDataset` (and its Keras 2 name `Sequence`): an indexable dataset of batches.

A subclass implements `__len__` (the number of batches) and `__getitem__(i)` (batch i as `x`, `(x, y)` or
`(x, y, sample_weight)`), and optionally `on_epoch_begin`/`on_epoch_end`. `fit`, `evaluate` and `predict`
take it as `x`. `fit` calls `on_epoch_begin`/`on_epoch_end` around every epoch, and with
`steps_per_epoch` a pass continues across epochs (Keras 3's epoch iterator); `evaluate` and `predict`
make one pass between the two hooks; `fit(shuffle=True)` visits the batches in a shuffled order. A
subclass whose `num_batches` is None is endless (Keras 3): a pass reads batches 0, 1, 2, ... until
`steps_per_epoch` ends the epoch.

`workers` > 1 loads that many batches ahead (`max_queue_size` at most) in threads, or, with
`use_multiprocessing=True`, in forked worker processes (the dataset is inherited by the fork, never
pickled); batches are still handed to training in order.
"""

from __future__ import annotations

import concurrent.futures as _futures
import itertools
import multiprocessing as _mp
import random
from collections import deque

import numpy as np

from flexflow_keras.errors import DataError

_FORKED: dict[int, PyDataset] = {}  # the datasets forked worker processes read (by id)


def _forked_getitem(key: int, index: int):
    return _FORKED[key][index]


def batch_order(n: int, shuffle: bool, rng: np.random.Generator | None = None) -> list[int]:
    """The order in which a pass reads the `n` batches of a PyDataset / Sequence: as they come, or shuffled
    by `random.shuffle` of Python's global state as Keras 3's adapter draws it (so a script's `random.seed`
    gives tf.keras' order), or with `rng` (a `--seed`'s generator) by that generator."""
    if not shuffle:
        return list(range(n))
    if rng is None:
        order = list(range(n))
        random.shuffle(order)
        return order
    order = np.arange(n)
    rng.shuffle(order)
    return order.tolist()


class PyDataset:
    """Base class of an indexable dataset of batches (Keras 3's `keras.utils.PyDataset`).

    Args:
        workers: how many batches are loaded at the same time (1: one after the other, on the training
            thread).
        use_multiprocessing: with `workers` > 1, load in forked processes instead of threads (for
            `__getitem__` code that holds the GIL). Needs the `fork` start method (Linux).
        max_queue_size: how many batches may be loaded ahead of training.
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        if int(workers) < 1:
            raise ValueError(f"PyDataset(workers=...) must be at least 1, received {workers!r}.")
        if int(max_queue_size) < 1:
            raise ValueError(f"PyDataset(max_queue_size=...) must be at least 1, received {max_queue_size!r}.")
        self._workers = int(workers)
        self._use_multiprocessing = bool(use_multiprocessing)
        self._max_queue_size = int(max_queue_size)

    @property
    def workers(self) -> int:
        return getattr(self, "_workers", 1)

    @property
    def use_multiprocessing(self) -> bool:
        return getattr(self, "_use_multiprocessing", False)

    @property
    def max_queue_size(self) -> int:
        return getattr(self, "_max_queue_size", 10)

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index) returning batch "
                                  f"`index` as x, (x, y) or (x, y, sample_weight).")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__() returning its number of "
                                  f"batches.")

    @property
    def num_batches(self) -> int | None:
        """The number of batches in one pass (`len(self)`); a subclass may return None for an endless
        dataset, whose batches 0, 1, 2, ... are read until `steps_per_epoch` (or a callback) ends the epoch,
        as Keras 3's."""
        return len(self)

    def on_epoch_begin(self) -> None:
        """Called before each pass over the dataset."""

    def on_epoch_end(self) -> None:
        """Called after each pass over the dataset."""

    def __iter__(self):
        return self.iterate()

    def iterate(self, shuffle: bool = False, seed: int | None = None, hooks: bool = True):
        """The batches of one pass (shuffled order when `shuffle`), loaded ahead by the workers; with
        `hooks`, `on_epoch_begin` before the first and `on_epoch_end` when the pass ends or is closed
        (`fit` calls them per epoch itself). The shuffled order is `random.shuffle`'s of Python's global
        state, as Keras 3's adapter draws it (so a script's `random.seed` gives tf.keras' order), or with
        `seed` (fit's `--seed`) a NumPy generator's of it."""
        n = self.num_batches
        if n is None:  # endless: batch after batch, in order (Keras does not shuffle an endless PyDataset)
            order = itertools.count()
        else:
            order = batch_order(int(n), shuffle, None if seed is None else np.random.default_rng(seed))
        if hooks:
            self.on_epoch_begin()
        try:
            if self.workers <= 1:
                for i in order:
                    yield self[int(i)]
            else:
                yield from self._ahead(order)
        finally:
            if hooks:
                self.on_epoch_end()

    def _ahead(self, order):
        key = id(self)
        if self.use_multiprocessing:
            if "fork" not in _mp.get_all_start_methods():
                raise DataError(f"{type(self).__name__}(use_multiprocessing=True) needs the 'fork' start method, "
                                f"which this platform lacks; use use_multiprocessing=False (threads).")
            _FORKED[key] = self
            pool = _futures.ProcessPoolExecutor(self.workers, mp_context=_mp.get_context("fork"))
            load = lambda i: pool.submit(_forked_getitem, key, int(i))  # noqa: E731
        else:
            pool = _futures.ThreadPoolExecutor(self.workers, thread_name_prefix="pydataset")
            load = lambda i: pool.submit(self.__getitem__, int(i))  # noqa: E731
        queued: deque = deque()
        pending = iter(order)
        try:
            for i in pending:
                queued.append(load(i))
                if len(queued) >= self.max_queue_size:
                    break
            while queued:
                batch = queued.popleft().result()
                nxt = next(pending, None)
                if nxt is not None:
                    queued.append(load(nxt))
                yield batch
        finally:
            for f in queued:
                f.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            _FORKED.pop(key, None)


Sequence = PyDataset
