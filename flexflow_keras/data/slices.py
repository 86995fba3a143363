"""`tf.data.Dataset.from_tensor_slices(...)` as TensorFlow 2 tutorials chain it, for `python -m
flexflow_keras` (tf_compat.py): ``from_tensor_slices((x, y)).shuffle(n).batch(32).map(f).prefetch(AUTOTUNE)``.

`SliceDataset` keeps the arrays and the chain of stages, and is a `PyDataset` of the batches the chain
gives, so `fit`, `evaluate` and `predict` load it as any PyDataset (and `for x, y in ds` iterates it):
- the arguments: tuples and dicts are structures, anything else one tensor (a list too, as TensorFlow
  reads it); text is held as bytes, as TensorFlow's string elements give it (``.numpy()`` is bytes);
- ``shuffle(buffer_size, seed, reshuffle_each_iteration)``: TensorFlow's shuffle buffer (each element out
  is drawn uniformly from the next `buffer_size` waiting, so a small buffer only mixes locally; one as
  large as the data is a uniform permutation). A new order each time it is iterated (each `fit` epoch,
  each pass of a later ``repeat``), as TensorFlow's default ``reshuffle_each_iteration=True``; with False
  the same order every time. After a ``repeat`` the buffer runs across the repetitions' boundaries, as in
  TensorFlow. A seed (or ``tf.random.set_seed``) makes the orders repeat run to run; they are not
  TensorFlow's orders. `fit(shuffle=...)` does not reorder it further (TensorFlow ignores it for a dataset).
- ``batch(n, drop_remainder)``; ``take``/``skip`` count elements before `batch`, batches after it; a second
  `batch` (or `padded_batch`) stacks the batches as elements, as tf.data (data/derived.py);
- ``map(fn)`` before `batch` calls fn on each element (one Python call per element), after it on each
  batch; fn gets the element's parts as arguments, as TensorFlow calls it. Its math runs on arrays
  (keras.ops, or the raw TensorFlow calls tf_compat maps).
- ``Dataset.list_files(pattern)``: the matching paths, sorted, shuffled each pass unless ``shuffle=False``;
- ``padded_batch``, ``ragged_batch`` (RaggedTensors of the components that vary); ``concatenate``, ``filter``, ``unbatch``, ``enumerate``, ``shard``, ``window`` and
  ``flat_map`` (``ds.window(n + 1, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(n + 1))``),
  ``interleave``, ``scan``, ``rebatch``, ``unique``, ``ignore_errors``, ``Dataset.zip``, ``Dataset.range``,
  ``Dataset.from_generator`` and ``TextLineDataset`` (data/derived.py); ``group_by_window``,
  ``bucket_by_sequence_length``, ``Dataset.sample_from_datasets`` and ``choose_from_datasets``
  (data/grouping.py); ``rejection_resample`` (data/resample.py); ``get_single_element``; ``with_options`` / ``options()`` keep a ``tf.data.Options``
  that changes nothing here (data/options.py); the other tf.data methods (save, load, random) are a clear
  error;
- ``prefetch``, ``cache``, ``snapshot``: the dataset itself (`fit` loads ahead through its own pipeline).
- ``repeat(n)`` passes over the data n times; ``repeat()`` as many times as a later ``take(k)`` needs
  (custom loops write ``ds.repeat().shuffle(..).batch(..)`` then ``ds.take(steps)``); without such a
  take it is an error when read, which says to drop it for fit (fit passes once per epoch by itself), except
  for Python iteration (``next(iter(ds))``, a loop that breaks), which goes on without end as tf.data's
  (a shuffle after the repeat is a shuffle buffer over the repetitions).
  A dataset made from endless ones (``Dataset.sample_from_datasets([pos.repeat(), neg.repeat()])``, the
  oversampling idiom, or ``ds.repeat().filter(f)``) is endless in the same way: its base grows as a later
  ``take`` or the iteration needs (data/derived.py streams its input).
Elements and batches answer ``.numpy()`` (`EagerTensor`).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import DataError
from flexflow_keras.utils import tree
from flexflow_keras.utils.py_dataset import PyDataset

AUTOTUNE = -1
_UNKNOWN_CARDINALITY = -2  # accepted by TensorFlow as a shuffle buffer_size: the whole data
_UNSUPPORTED_METHODS = ("save", "load", "random")
_BATCHING = ("batch", "padded_batch", "ragged_batch")  # the stages that group elements into batches
_ENDLESS = ("Dataset.repeat() without a count makes an endless dataset, and no take(n) after it ends it: add "
            ".take(n), give a count (.repeat(n)), or drop .repeat() for fit (it passes over the data once per epoch "
            "by itself).")


def _components(x):
    """`from_tensor_slices`' argument as TensorFlow reads it: tuples and dicts are structures, anything else
    (a list included: ``[1, 2, 3]``, a list of strings) is one tensor, of tf.convert_to_tensor's dtype (Python
    ints int32, floats float32; NumPy arrays keep theirs)."""
    from flexflow_keras.ops.dtype_rules import python_dtype

    if isinstance(x, tuple):
        return tuple(_components(v) for v in x)
    if isinstance(x, dict):
        return {k: _components(v) for k, v in x.items()}
    return _as_array(x, python_dtype(x))


def _as_array(a, dtype=None):
    """An array (of `dtype` when given); text as an object array of bytes (TensorFlow's strings: an element's
    `.numpy()` is bytes)."""
    arr = np.asarray(a) if dtype is None else np.asarray(a, dtype=dtype)
    if arr.dtype.kind == "U" or (arr.dtype.kind == "O" and arr.size and isinstance(arr.flat[0], str)):
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in arr.reshape(-1).tolist()]
        return out
    if arr.dtype.kind == "S":
        return arr.astype(object)
    return arr


class SliceDataset(PyDataset):
    """The dataset of `from_tensor_slices` and its chain (see the module docstring)."""

    def __init__(self, data, stages: tuple = ()):
        super().__init__()
        self._data = data
        self._stages = tuple(stages)
        self._pass = 0
        self._plan_cache: tuple | None = None
        self._options = None  # tf.data.Options given to with_options (data/options.py)

    @classmethod
    def from_tensor_slices(cls, tensors, name=None) -> SliceDataset:
        data = _components(tensors)
        flat = tree.flatten(data)
        if not flat:
            raise DataError("tf.data.Dataset.from_tensor_slices received no arrays.")
        lengths = {a.shape[0] if a.ndim else None for a in flat}
        if None in lengths or len(lengths) != 1:
            raise DataError(f"tf.data.Dataset.from_tensor_slices needs arrays with the same first dimension (the "
                            f"elements); received shapes {[tuple(a.shape) for a in flat]}.")
        return cls(data)

    @classmethod
    def from_tensors(cls, tensors, name=None) -> SliceDataset:
        """`tf.data.Dataset.from_tensors`: one element, the whole of `tensors`."""
        data = _components(tensors)
        if not tree.flatten(data):
            raise DataError("tf.data.Dataset.from_tensors received no arrays.")
        return cls(tree.map_structure(lambda a: np.asarray(a)[None], data))

    # --- the chain ---------------------------------------------------------------------------------------
    def _then(self, *stage) -> SliceDataset:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._stages, new._pass, new._plan_cache = self._stages + (stage,), 0, None
        return new

    # --- the base elements (data/derived.py's datasets make theirs from other datasets) --------------------
    def _count(self) -> int:
        return tree.flatten(self._data)[0].shape[0]

    def _raw_element(self, i):
        return tree.map_structure(lambda a: a[i], self._data)

    def _raw_rows(self, rows):
        return tree.map_structure(lambda a: a[rows], self._data)

    def _batched(self) -> bool:
        return any(s[0] in _BATCHING for s in self._stages)

    def _endless_base(self) -> bool:
        """Whether the base elements never end (data/derived.py's datasets made from endless ones)."""
        return False

    def _count_for(self, endless: int) -> int:
        """The number of base elements when each endless repeat makes `endless` passes; an endless base
        grows with `endless` too."""
        return self._count()

    def _endless_start(self) -> int | None:
        """The stage from which the data has no end (0 for an endless base), or None when it ends."""
        if self._endless_base():
            return 0
        return next((i for i, s in enumerate(self._stages) if s[0] == "repeat" and s[1] < 0), None)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None) -> SliceDataset:
        from flexflow_keras.utils import rng

        # no seed: one drawn from the framework's generator, so tf.random.set_seed makes the orders repeat
        if int(buffer_size) < 1 and int(buffer_size) != _UNKNOWN_CARDINALITY:
            raise DataError(f"Dataset.shuffle(buffer_size) must be at least 1 (or tf.data.UNKNOWN_CARDINALITY), "
                            f"received {buffer_size!r}; the size of the data gives a uniform shuffle.")
        size = None if int(buffer_size) == _UNKNOWN_CARDINALITY else int(buffer_size)  # as large as the data
        return self._then("shuffle", rng.make_seed() if seed is None else int(seed), bool(reshuffle_each_iteration),
                          size)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None,
              name=None) -> SliceDataset:
        if int(batch_size) < 1:
            raise DataError(f"Dataset.batch(batch_size) must be at least 1, received {batch_size!r}.")
        if self._batched():  # batches of batches (the char-RNN's sequences, then training batches of them)
            from flexflow_keras.data import derived

            return derived.batches_as_elements(self).batch(batch_size, drop_remainder)
        return self._then("batch", int(batch_size), bool(drop_remainder))

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None) -> SliceDataset:
        return self._then("map", map_func)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False,
                     name=None) -> SliceDataset:
        """Batches whose elements are padded to the longest of the batch (or to `padded_shapes`), with 0
        (b"" for text) or `padding_values`."""
        if int(batch_size) < 1:
            raise DataError(f"Dataset.padded_batch(batch_size) must be at least 1, received {batch_size!r}.")
        if self._batched():
            from flexflow_keras.data import derived

            return derived.batches_as_elements(self).padded_batch(batch_size, padded_shapes, padding_values,
                                                                  drop_remainder)
        return self._then("padded_batch", int(batch_size), bool(drop_remainder), padded_shapes, padding_values)

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype="int64", name=None) -> SliceDataset:
        """Batches in which a component whose elements differ in shape is a `RaggedTensor` (tf_ragged.py), the
        others stacked as `batch` stacks them (data/derived.py's stack_elements)."""
        from flexflow_keras.data import derived

        if int(batch_size) < 1:
            raise DataError(f"Dataset.ragged_batch(batch_size) must be at least 1, received {batch_size!r}.")
        derived.check_row_splits_dtype(row_splits_dtype)
        if self._batched():
            return derived.batches_as_elements(self).ragged_batch(batch_size, drop_remainder, row_splits_dtype)
        return self._then("ragged_batch", int(batch_size), bool(drop_remainder))

    # data/derived.py: datasets made from other datasets' elements
    def concatenate(self, dataset, name=None):
        from flexflow_keras.data import derived

        return derived.concatenate(self, dataset)

    def filter(self, predicate, name=None):  # noqa: A003 - tf.data's name
        from flexflow_keras.data import derived

        return derived.filter_(self, predicate)

    def unbatch(self, name=None):
        from flexflow_keras.data import derived

        return derived.unbatch(self)

    def enumerate(self, start=0, name=None):  # noqa: A003 - tf.data's name
        from flexflow_keras.data import derived

        return derived.enumerate_(self, start)

    def shard(self, num_shards, index, name=None):
        from flexflow_keras.data import derived

        return derived.shard(self, num_shards, index)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        from flexflow_keras.data import derived

        return derived.window(self, size, shift, stride, drop_remainder)

    def flat_map(self, map_func, name=None):
        from flexflow_keras.data import derived

        return derived.flat_map(self, map_func)

    def interleave(self, map_func, cycle_length=None, block_length=1, num_parallel_calls=None, deterministic=None,
                   name=None):
        from flexflow_keras.data import derived

        return derived.interleave(self, map_func, cycle_length, block_length, num_parallel_calls)

    def scan(self, initial_state, scan_func, name=None):
        from flexflow_keras.data import derived

        return derived.scan(self, initial_state, scan_func)

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        from flexflow_keras.data import derived

        return derived.rebatch(self, batch_size, drop_remainder)

    def unique(self, name=None):
        from flexflow_keras.data import derived

        return derived.unique(self)

    def ignore_errors(self, log_warning=False, name=None):
        from flexflow_keras.data import derived

        return derived.ignore_errors(self, log_warning)

    # data/grouping.py
    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None, name=None):
        from flexflow_keras.data import grouping

        return grouping.group_by_window(self, key_func, reduce_func, window_size, window_size_func)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries, bucket_batch_sizes,
                                  padded_shapes=None, padding_values=None, pad_to_bucket_boundary=False,
                                  no_padding=False, drop_remainder=False, name=None):
        from flexflow_keras.data import grouping

        return grouping.bucket_by_sequence_length(self, element_length_func, bucket_boundaries, bucket_batch_sizes,
                                                  padded_shapes, padding_values, pad_to_bucket_boundary,
                                                  no_padding, drop_remainder)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        from flexflow_keras.data import grouping

        return grouping.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset,
                                             rerandomize_each_iteration)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        from flexflow_keras.data import grouping

        return grouping.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None, name=None):
        from flexflow_keras.data import resample

        return resample.rejection_resample(self, class_func, target_dist, initial_dist, seed)

    def apply(self, transformation_func):
        return transformation_func(self)

    def get_single_element(self, name=None):
        """The dataset's one element (a batched dataset's one batch); another count is an error."""
        n = len(self)
        if n != 1:
            raise DataError(f"Dataset.get_single_element() needs a dataset of exactly one element, this one has {n}"
                            f"{' (it was empty)' if n == 0 else ''}; take(1) keeps the first, or batch the "
                            f"dataset into one batch first.")
        (item,) = list(self)
        return item

    def reduce(self, initial_state, reduce_func, name=None):
        """`Dataset.reduce`: ``reduce_func(state, element)`` folded over one pass from `initial_state` (Python
        numbers take tf.convert_to_tensor's dtypes: ints int32, floats float32); the final state as tensors.
        ``ds.reduce(0, lambda n, _: n + 1)`` counts the elements. The state keeps its structure and dtypes,
        as tf.data requires; an endless dataset is an error (TensorFlow would never return)."""
        if self.is_endless():
            raise DataError(f"Dataset.reduce() of an endless dataset would never return: {_ENDLESS}")
        state = _tensors(_components(initial_state))
        want = [np.asarray(v).dtype for v in tree.flatten(state)]
        for item in self:
            new = _tensors(_components(reduce_func(state, item)))
            got = [np.asarray(v).dtype for v in tree.flatten(new)]
            if got != want:
                raise TypeError(f"Dataset.reduce: reduce_func changed the state's dtypes from {[str(d) for d in want]} "
                                f"to {[str(d) for d in got]}; the new state must keep the initial state's structure "
                                f"and dtypes (cast it, or start from an initial state of the right dtype, e.g. "
                                f"np.int64(0) or 0.0).")
            state = new
        return state

    def with_options(self, options, name=None) -> SliceDataset:
        """The dataset with `options` (a tf.data.Options) merged over its own, kept for `options()`; a single
        process pipeline has nothing they change (data/options.py)."""
        from flexflow_keras.data.options import Options

        if not isinstance(options, Options):
            raise DataError(f"Dataset.with_options expects a tf.data.Options, received {type(options).__name__}; "
                            f"make one with tf.data.Options() and set its fields.")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._options = self.options().merge(options)
        return new

    def options(self):
        """The tf.data.Options set with `with_options` (a new default Options when none was)."""
        import copy

        from flexflow_keras.data.options import Options

        return copy.deepcopy(self._options) if self._options is not None else Options()

    @staticmethod
    def zip(*datasets, name=None):  # noqa: A004 - tf.data's name
        from flexflow_keras.data import derived

        return derived.zip_(*datasets)

    @staticmethod
    def range(*args, dtype="int64", name=None):  # noqa: A003 - tf.data's name
        from flexflow_keras.data import derived

        return derived.range_(*args, dtype=dtype)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None) -> SliceDataset:
        """The paths matching a glob pattern (or any of a list of them), sorted, then shuffled each pass unless
        ``shuffle=False``, as tf.data's; no match is an error naming the pattern."""
        import glob

        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) else list(np.asarray(file_pattern).reshape(-1))
        patterns = [p.decode("utf-8") if isinstance(p, bytes) else str(p) for p in patterns]
        files = sorted({f for p in patterns for f in glob.glob(p)})
        if not files:
            raise DataError(f"tf.data.Dataset.list_files: no files matched pattern {', '.join(map(repr, patterns))}. "
                            f"Check the folder and the wildcard (list_files does not recurse into sub-folders "
                            f"beyond what the pattern names).")
        ds = SliceDataset.from_tensor_slices(files)
        return ds if shuffle is False else ds.shuffle(len(files), seed=seed)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        from flexflow_keras.data import derived

        return derived.from_generator(generator, output_types, output_shapes, args, output_signature)

    def __getattr__(self, name: str):
        if name in _UNSUPPORTED_METHODS:
            raise DataError(f"Dataset.{name}() is a tf.data method flexflow_keras' tf.data stand-in does not have "
                            f"(it has map, batch, padded_batch, ragged_batch, rebatch, shuffle, take, skip, repeat, filter, unbatch, "
                            f"concatenate, zip, enumerate, shard, window, flat_map, interleave, scan, unique, "
                            f"group_by_window, bucket_by_sequence_length, sample_from_datasets, "
                            f"choose_from_datasets, rejection_resample, ignore_errors, get_single_element, reduce, "
                            f"with_options, prefetch, cache, snapshot); rewrite that step with them or on NumPy arrays.")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def take(self, count) -> SliceDataset:
        return self._then("take", int(count))

    def skip(self, count) -> SliceDataset:
        return self._then("skip", int(count))

    def repeat(self, count=None, name=None) -> SliceDataset:
        """`count` passes over the data; without a count, as many as a later ``take`` needs (an endless
        dataset with no ``take`` after it is an error when it is read)."""
        return self._then("repeat", -1 if count is None or int(count) < 0 else int(count))

    def prefetch(self, buffer_size=None, name=None) -> SliceDataset:
        return self

    def cache(self, filename="", name=None) -> SliceDataset:
        """tf.data's `cache`: the elements of the first full pass are replayed, so a shuffle before it keeps
        its first order in later epochs (TensorFlow's reshuffle stops there). A pass cut short by a later
        `take` does not finish the cache, and tf.data then reads (and reshuffles) its input again: so here.
        Element maps before it still run at each read (a random map is not frozen as tf.data's would be)."""
        return self._then("cache")

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None, name=None) -> SliceDataset:
        """`cache()`: the same elements (TensorFlow also writes them under `path` for other processes)."""
        return self.cache()

    # --- one pass ----------------------------------------------------------------------------------------
    def _plan(self):
        """(groups of element indices, element maps, batch maps, batched) for the current pass."""
        if self._plan_cache is not None and self._plan_cache[0] == self._pass:
            return self._plan_cache[1]
        first = self._endless_start()
        if first is None:
            plan = self._plan_with(1)
        else:  # an endless repeat: enough passes that a later take() is what ends the data
            if not any(s[0] == "take" and s[1] >= 0 for s in self._stages[first:]):
                raise DataError(_ENDLESS)
            n = max(self._count_for(1), 1)
            reps, plan = 1, self._plan_with(1)
            while True:
                more = self._plan_with(reps * 2)
                # more data gives no more (a take() ends it), and the same: a shuffle after the repeat has its
                # buffer's last elements still to settle (as the direct iteration reads them, _endless_items)
                if _planned(more) == _planned(plan) and _agreed(plan[0], more[0]) == len(plan[0]):
                    break
                reps, plan = reps * 2, more
                if reps * n > 50_000_000:
                    raise DataError(_ENDLESS)
        self._plan_cache = (self._pass, plan)
        return plan

    def _plan_with(self, endless: int):
        """The plan with each endless repeat made `endless` passes."""
        n = self._count_for(endless)
        elem_maps, batch_maps, batched = [], [], False
        for stage in self._stages:
            if stage[0] == "map":
                (batch_maps if batched else elem_maps).append(stage[1])
            batched = batched or stage[0] in _BATCHING
        return self._indices(len(self._stages), n, endless, (self._pass,)), elem_maps, batch_maps, batched

    def _indices(self, k: int, n: int, endless: int, iteration: tuple):
        """The element indices after the first `k` stages (a list of index arrays once batched). `iteration`
        names this iteration of them: the pass, then the repetition of each later repeat, so a shuffle
        below a repeat draws a new order for each repetition, as a tf.data iterator made anew per pass."""
        if k == 0:
            return np.arange(n)
        stage, kind = self._stages[k - 1], self._stages[k - 1][0]
        batched = any(s[0] in _BATCHING for s in self._stages[:k - 1])
        if kind == "repeat":
            times = endless if stage[1] < 0 else stage[1]
            if not any(s[0] == "shuffle" and s[2] for s in self._stages[:k - 1]):  # every repetition the same
                one = self._indices(k - 1, n, endless, iteration)
                return list(one) * times if batched else np.tile(one, times)
            parts = [self._indices(k - 1, n, endless, iteration + (r,)) for r in range(times)]
            if batched:
                return [g for part in parts for g in part]
            return np.concatenate(parts) if parts else np.arange(0)
        idx = self._indices(k - 1, n, endless, iteration)
        if kind == "shuffle":
            seed, again, size = stage[1], stage[2], stage[3]
            order = _buffer_order(np.random.default_rng([seed, k, *iteration] if again else [seed, k]), len(idx),
                                  len(idx) if size is None else size)
            return [idx[i] for i in order] if batched else idx[order]
        if kind == "cache":  # the first pass's order, unless a later take() leaves every pass unfinished
            if any(s[0] == "take" and s[1] >= 0 for s in self._stages[k:]):
                return idx
            return self._indices(k - 1, n, endless, (0,))
        if kind == "take":
            return idx[:stage[1]] if stage[1] >= 0 else idx
        if kind == "skip":
            return idx[stage[1]:]
        if kind in _BATCHING:
            size, drop = stage[1], stage[2]
            end = len(idx) - len(idx) % size if drop else len(idx)
            return [idx[i:i + size] for i in range(0, end, size)]
        return idx  # map: applied when an element is read

    def __len__(self) -> int:
        return len(self._plan()[0])

    def is_endless(self) -> bool:
        """Whether a repeat() without a count (or an endless base) is not ended by a later take()."""
        first = self._endless_start()
        return first is not None and not any(s[0] == "take" and s[1] >= 0 for s in self._stages[first:])

    @property
    def element_spec(self):
        """The element's structure of `TensorSpec`s (shape and dtype; a batch's first dim None), read from the
        first element, as tutorials print ``ds.element_spec``. A dim that varies between elements (padded
        batches) shows the first element's size, where tf.data shows None."""
        from flexflow_keras.ops.graph import TensorSpec

        if len(self) == 0:
            raise DataError("Dataset.element_spec is read from the first element here, and this dataset is empty.")
        batched = self._batched()

        def spec(a):
            a = np.asarray(a)
            shape = (None,) + tuple(a.shape[1:]) if batched and a.ndim else tuple(a.shape)
            return TensorSpec(shape, "string" if a.dtype.kind in "OSU" else a.dtype.name)
        return tree.map_structure(spec, self[0])

    def cardinality(self) -> np.int64:
        from flexflow_keras.ops.eager_tensor import eager

        return eager(np.int64(len(self)))

    def _element(self, i, elem_maps):
        item = self._raw_element(i)
        if elem_maps:  # a map function gets tensors, as tf.data gives them (a string: a StringTensor)
            item = _tensors(item)
        for fn in elem_maps:
            item = _call(fn, item)
        return item

    def _stackable(self) -> bool:
        return True  # the base is arrays: a batch is their rows

    def __getitem__(self, index):
        return self._read(self._plan(), index)

    def _read(self, plan, index):
        """Item `index` (an element, or a batch once batched) of `plan`."""
        groups, elem_maps, batch_maps, batched = plan
        if not batched:
            return _tensors(self._element(groups[index], elem_maps))
        rows = np.asarray(groups[index])
        padded = next((s for s in self._stages if s[0] in ("padded_batch", "ragged_batch")), None)
        if elem_maps or padded is not None or not self._stackable():
            from flexflow_keras.data.derived import stack_elements

            items = [self._element(i, elem_maps) for i in rows]
            batch = stack_elements(items, padded, self, plan)
        else:
            batch = self._raw_rows(rows)
        if batch_maps:  # tensors too, as for an element map (a batch of strings: a StringTensor)
            batch = _tensors(batch)
        for fn in batch_maps:
            batch = _call(fn, batch)
        return _tensors(batch)

    def iterate(self, shuffle: bool = False, seed: int | None = None, hooks: bool = True):
        """One pass in the dataset's own order (its `shuffle` stage decides, as for a tf.data dataset)."""
        return super().iterate(False, seed, hooks)

    def on_epoch_end(self) -> None:
        self._pass += 1

    def __iter__(self):
        if self.is_endless():  # next(iter(ds.repeat())), or a loop that breaks, as over a tf.data dataset
            yield from self._endless_items()
            return
        try:
            for i in range(len(self)):
                yield self[i]
        finally:
            self._pass += 1

    def _endless_items(self):
        """The items of an endless dataset, without end: the plans with each endless repeat (or endless base)
        making 1, 2, 4, ... passes, each read on from where the last one stopped, as far as it agrees with the
        plan of twice as many passes. A plan of more passes begins with the plan of fewer (each repetition's
        order is fixed by its number, an endless base's first elements stay as it grows), except near its
        end: its last batch, which more passes may fill, and a shuffle buffer's last elements after the
        repeat, which more passes mix with later ones; those wait for the next plan."""
        reps, done = 1, 0
        plan = self._plan_with(1)
        n = max(self._count_for(1), 1)
        while True:
            more = self._plan_with(reps * 2)
            agreed = _agreed(plan[0], more[0])
            for i in range(done, agreed):
                yield self._read(more, i)
            done = max(done, agreed)
            plan, reps = more, reps * 2
            if reps * n > 50_000_000:  # nothing settles: a shuffle of the whole endless stream
                raise DataError(_ENDLESS)

    def as_numpy_iterator(self):
        from flexflow_keras.data.numpy_iterator import NumpyIterator

        return NumpyIterator(tree.map_structure(_numpy, item) for item in self)

    def __repr__(self) -> str:
        stages = "".join(f".{s[0]}()" for s in self._stages)
        return f"<SliceDataset from_tensor_slices(...){stages}: {len(self)} items>"


def _agreed(a, b) -> int:
    """How many leading groups (element indices, or index arrays once batched) two plans share."""
    if len(a) and not isinstance(a, list) and not isinstance(b, list):
        n = min(len(a), len(b))
        differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
        return int(differ[0]) if len(differ) else n
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not np.array_equal(x, y):
            return i
    return min(len(a), len(b))


def _planned(plan) -> int:
    """The number of elements a plan reads (a partial last batch counts what it holds)."""
    groups, batched = plan[0], plan[3]
    return sum(len(g) for g in groups) if batched else len(groups)


def _buffer_order(rng, n: int, size: int) -> np.ndarray:
    """The order TensorFlow's shuffle buffer of `size` gives `n` elements: each one out is drawn uniformly
    from the buffer, whose slot the next element waiting fills (at the end the buffer drains); the loop is
    kernels/shuffle_buffer.py's. A buffer as large as the data is a uniform permutation, drawn at once. The
    first outputs depend only on the first draws, so the order's start stays the same as an endless repeat
    before it grows."""
    if size >= n:
        return rng.permutation(n)
    from kernels.shuffle_buffer import buffer_order

    return buffer_order(rng.random(n), size)


def _numpy(a):
    """What `as_numpy_iterator` gives, as TensorFlow's: one string is bytes, anything else an array."""
    a = np.asarray(a)
    return a.item() if a.ndim == 0 and a.dtype.kind == "O" else a


def _call(fn, item):
    """Call a map function as TensorFlow does: a tuple element's parts as separate arguments, its result
    normalized as tf.data does (data/map_result.py). The layers it calls know they run in a pipeline, where
    Keras 3 traces them (layers/tf_graph_call.py)."""
    from flexflow_keras.data.map_result import normalize
    from flexflow_keras.layers.tf_graph_call import pipeline_call

    with pipeline_call():
        return normalize(fn(*item) if isinstance(item, tuple) else fn(item))


def _tensors(item):
    return tree.map_structure(_tensor, item)


def _tensor(a):
    from flexflow_keras.data.dataset import as_tensor
    from flexflow_keras.tf_ragged import RaggedTensor

    if isinstance(a, RaggedTensor):  # a ragged_batch's component
        return a

    return as_tensor(a)


def bounded(x, steps, who: str, epochs: int | None = None):
    """An endless dataset (``repeat()`` without a count; ``make_csv_dataset(num_epochs=None)``) as `fit`,
    `evaluate` and `predict` read it with `steps` (steps_per_epoch, validation_steps, steps): its first
    `steps` batches, a dataset read from the start each time (validation, evaluate, predict); with `epochs`,
    one iterator over its first ``steps * epochs`` batches that each epoch continues, as tf.data's iterator
    over an endless dataset does in Keras' fit. Anything else is returned as it is."""
    if not isinstance(x, SliceDataset) or not x.is_endless():
        return x
    if not steps:
        raise DataError(f"{who} received an endless dataset (repeat() without a count) and no "
                        f"{'steps_per_epoch' if epochs is not None else 'steps'}; give it, or end the dataset "
                        f"(repeat(n), take(n)).")
    return x.take(int(steps)) if epochs is None else iter(x.take(int(steps) * int(epochs)))

