"""`as_numpy_iterator()`'s result for every dataset here: an iterator of NumPy batches that also answers
`.next()`, as tf.data's NumpyIterator does (tutorials call `ds.as_numpy_iterator().next()`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class NumpyIterator(Iterator):
    """Wraps an iterable of NumPy items; `next(it)` and `it.next()` both give the next one."""

    def __init__(self, items: Iterable):
        self._items = iter(items)

    def __next__(self):
        return next(self._items)

    def next(self):
        """The next item (tf.data's spelling of `next(it)`)."""
        return next(self._items)
