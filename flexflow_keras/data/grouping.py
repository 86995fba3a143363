"""tf.data's grouping and sampling methods, which data/slices.py's `SliceDataset` chains: `group_by_window`,
`bucket_by_sequence_length`, `Dataset.sample_from_datasets` and `Dataset.choose_from_datasets`.

Each is a `DerivedDataset` (data/derived.py): its elements are made again every pass from its inputs'
elements, so an upstream shuffle draws anew each epoch.
- `group_by_window` keeps one open window per key; a window that holds its `window_size` elements goes to
  `reduce_func` at once, and at the end of the input the unfinished ones go in ascending key order, as
  tf.data's (whose windows sit in a map sorted by key). Its elements are those of the datasets
  `reduce_func` returns (``window.batch(n)``: a batch each), as `flat_map`'s.
- `bucket_by_sequence_length` is that grouping, as TensorFlow builds it: the key is the bucket of the
  element's length (bucket i holds boundaries[i-1] <= length < boundaries[i]), the window size the
  bucket's batch size, the reduction a padded batch. Its elements are batches (`unbatch` splits them).
  With `pad_to_bucket_boundary` the dims TensorFlow knows as None are padded to the bucket's boundary - 1;
  here those are the dims whose size varies over the pass (this stand-in keeps no static shapes).
- `sample_from_datasets` draws each element's dataset by `weights` (a dataset that ran out is no longer
  drawn, or with `stop_on_empty_dataset` ends the result). Made from an endless dataset (``repeat()``, the
  tutorials' oversampling ``sample_from_datasets([pos_ds.repeat(), neg_ds.repeat()])``) it is endless too:
  a later ``take`` (fit's steps_per_epoch) decides how many elements are drawn. Its draws are NumPy's from the seed, not
  TensorFlow's: the proportions match TensorFlow, the order does not. Without a seed one is drawn from the
  framework's generator (`tf.random.set_seed` repeats it); each pass draws the same order unless
  `rerandomize_each_iteration=True`, as TensorFlow's.
- `choose_from_datasets` takes the next element of ``datasets[i]`` for each i of `choice_dataset`.
"""

from __future__ import annotations

import bisect

import numpy as np

from flexflow_keras.data.derived import (
    DerivedDataset,
    _elements,
    _first_elements,
    _is_batched,
    _is_endless,
    _pad_stack,
    _positive,
    _produced,
    stack_elements,
)
from flexflow_keras.data.slices import SliceDataset, _call
from flexflow_keras.errors import DataError
from flexflow_keras.utils import tree

_INT32 = np.iinfo(np.int32)


def _integer(method: str, what: str, value) -> int:
    a = np.asarray(value)
    if a.ndim != 0 or a.dtype.kind not in "iu":
        raise DataError(f"Dataset.{method}: {what} must be an integer scalar (tf.int64), received "
                        f"{a.dtype} of shape {a.shape}; return e.g. tf.cast(x, 'int64') of one value.")
    return int(a)


def _group(items: list, key_of, size_of, reduce) -> list:
    """tf.data's group-by-window over one pass: the outputs of `reduce(key, members)` in order."""
    groups: dict[int, list] = {}
    sizes: dict[int, int] = {}
    out: list = []
    for item in items:
        key = key_of(item)
        if key not in groups:
            groups[key], sizes[key] = [], size_of(key)
        groups[key].append(item)
        if len(groups[key]) >= sizes[key]:
            out += reduce(key, groups.pop(key))
    for key in sorted(groups):  # the unfinished windows, by key as tf.data's sorted map holds them
        out += reduce(key, groups[key])
    return out


def group_by_window(dataset, key_func, reduce_func, window_size=None, window_size_func=None) -> DerivedDataset:
    """`Dataset.group_by_window`: windows of the elements of each key (`key_func`'s int64), each handed to
    ``reduce_func(key, window_dataset)``, whose dataset's elements are the result."""
    from flexflow_keras.ops.eager_tensor import eager

    if (window_size is None) == (window_size_func is None):
        raise DataError(f"Dataset.group_by_window takes exactly one of window_size and window_size_func, received "
                        f"{'neither' if window_size is None else 'both'}; give window_size=n for windows of n "
                        f"elements, or window_size_func=fn(key) for a size per key.")
    if window_size is not None:
        size = _positive("group_by_window", "window_size", window_size)

        def size_of(_key):
            return size
    else:
        def size_of(key):
            value = _integer("group_by_window", "window_size_func's result", window_size_func(eager(np.int64(key))))
            return _positive("group_by_window", "window_size_func's result", value)

    def reduce(key, members):
        window = DerivedDataset(lambda _k: members, f"group_by_window window (key {key})", _is_batched(dataset))
        return _elements(_produced("group_by_window", reduce_func, (eager(np.int64(key)), window)))

    def make(_k):
        return _group(_elements(dataset), lambda item: _integer("group_by_window", "key_func's result",
                                                                _call(key_func, item)), size_of, reduce)
    return DerivedDataset(make, "group_by_window(...)")


def bucket_by_sequence_length(dataset, element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None, pad_to_bucket_boundary=False,
                              no_padding=False, drop_remainder=False) -> DerivedDataset:
    """`Dataset.bucket_by_sequence_length`: batches of the elements of similar length (see the module
    docstring), padded to the longest of the batch (or to `padded_shapes`, or the bucket's boundary)."""
    method = "bucket_by_sequence_length"
    boundaries = [_integer(method, "each of bucket_boundaries", b) for b in bucket_boundaries]
    sizes = [_positive(method, "each of bucket_batch_sizes", b) for b in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise DataError(f"Dataset.{method}: len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1 (a batch "
                        f"size per bucket, the last for lengths >= the last boundary), received "
                        f"{len(sizes)} sizes for {len(boundaries)} boundaries.")
    lows, highs = [_INT32.min] + boundaries, boundaries + [_INT32.max]

    def bucket_of(item):
        length = _integer(method, "element_length_func's result", _call(element_length_func, item))
        for i, (low, high) in enumerate(zip(lows, highs, strict=True)):
            if low <= length < high:
                return i
        raise DataError(f"Dataset.{method}: an element of length {length} falls in no bucket; bucket_boundaries "
                        f"must increase, received {boundaries}.")

    def make(_k):
        items = _elements(dataset)
        varying = _varying_dims(items)

        def batch(bucket, members):
            if drop_remainder and len(members) < sizes[bucket]:
                return []
            if no_padding:
                return [stack_elements(members, None)]
            filler = None
            if pad_to_bucket_boundary:
                if bucket == len(boundaries):
                    raise DataError(f"Dataset.{method}(pad_to_bucket_boundary=True): elements must be shorter than "
                                    f"the last bucket boundary ({boundaries[-1]}), as TensorFlow requires; add a "
                                    f"larger boundary, or filter out the longer elements.")
                filler = boundaries[bucket] - 1
            return [_padded_batch(members, padded_shapes, padding_values, filler, varying)]
        return _group(items, bucket_of, lambda bucket: sizes[bucket], batch)
    return DerivedDataset(make, f"{method}({boundaries}, {sizes})", of_batches=True)


def _varying_dims(items: list) -> list[set]:
    """Per component, the dims whose size differs over the items (TensorFlow's None dims of its shape)."""
    if not items:
        return []
    shapes = [[np.shape(leaf) for leaf in tree.flatten(item)] for item in items]
    out = []
    for j in range(len(shapes[0])):
        dims = {s[j] for s in shapes}
        ranks = {len(d) for d in dims}
        out.append(set(range(max(ranks))) if len(ranks) > 1 else
                   {d for d in range(ranks.pop()) if len({s[d] for s in dims}) > 1})
    return out


def _per_leaf(element, spec) -> list:
    """`spec` (padded_shapes or padding_values, in the element's structure; one value: for every component)
    as one entry per component of `element`."""
    if isinstance(element, tuple) and isinstance(spec, (tuple, list)) and len(spec) == len(element):
        return [v for e, s in zip(element, spec, strict=True) for v in _per_leaf(e, s)]
    if isinstance(element, dict) and isinstance(spec, dict):
        return [v for k in element for v in _per_leaf(element[k], spec.get(k))]
    return [spec] * len(tree.flatten(element))


def _padded_batch(members: list, padded_shapes, padding_values, filler, varying: list):
    leaves = [tree.flatten(m) for m in members]
    first = members[0]
    shapes, values = _per_leaf(first, padded_shapes), _per_leaf(first, padding_values)
    out = []
    for j in range(len(leaves[0])):
        parts = [np.asarray(leaf[j]) for leaf in leaves]
        shape = shapes[j]
        if shape is None:
            shape = [filler if filler is not None and d in varying[j] else None for d in range(parts[0].ndim)]
        else:
            shape = [shape] if np.ndim(shape) == 0 else [filler if d is None or int(d) < 0 else int(d)
                                                         for d in shape]
        out.append(_pad_stack(parts, shape, values[j]))
    return tree.pack_as(first, out)


_ENDLESS_UNIT = 1024  # elements an endless sample_from_datasets draws at a time


def _weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    if isinstance(weights, SliceDataset):
        raise DataError("Dataset.sample_from_datasets: a dataset of weights (weights that change per element) is "
                        "not supported by flexflow_keras' tf.data stand-in; give a list of floats.")
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if len(w) != n or (w < 0).any() or not w.sum() > 0:
        raise DataError(f"Dataset.sample_from_datasets: weights must be {n} non-negative numbers (one per dataset) "
                        f"with a positive sum, received {np.asarray(weights).tolist()}.")
    return w


def _datasets(method: str, datasets) -> list:
    datasets = list(datasets)
    if not datasets or not all(isinstance(d, SliceDataset) for d in datasets):
        raise DataError(f"Dataset.{method} takes a non-empty list of datasets, received "
                        f"{[type(d).__name__ for d in datasets]}.")
    return datasets


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                         rerandomize_each_iteration=None) -> DerivedDataset:
    """`Dataset.sample_from_datasets`: each element from a dataset drawn by `weights` (see the module docstring)."""
    from flexflow_keras.utils import rng

    datasets = _datasets("sample_from_datasets", datasets)
    w = _weights(weights, len(datasets))
    kept = [d for d, wi in zip(datasets, w, strict=True) if wi > 0]  # TensorFlow skips those of weight 0
    w = w[w > 0]
    seed = rng.make_seed() if seed is None else int(seed)
    again = bool(rerandomize_each_iteration)

    endless = [_is_endless(d) for d in kept]
    # endless when no dataset ends it: all are endless, or one is and an ended one is just no longer drawn
    unit = _ENDLESS_UNIT if all(endless) or (any(endless) and not stop_on_empty_dataset) else None

    def choose(lengths: list, count: int | None, k: int) -> list:
        """The dataset of each of (at most) `count` elements; a length of None never runs out."""
        draws = _draws(np.random.default_rng([seed, k if again else 0]))
        count = np.inf if count is None else count
        pos, order, cum = [0] * len(lengths), [], None
        has = [n is None or n > 0 for n in lengths]
        while len(order) < count and any(has):
            if cum is None:  # the cumulative weights of the datasets that can be drawn
                live = w if stop_on_empty_dataset else w * has
                cum = (np.cumsum(live) / live.sum()).tolist()
            i = min(bisect.bisect_right(cum, next(draws)), len(lengths) - 1)
            if not has[i]:  # only with stop_on_empty_dataset: the drawn dataset has ended
                break
            order.append(i)
            pos[i] += 1
            if lengths[i] is not None and pos[i] == lengths[i]:
                has[i], cum = False, None
        return order

    def make(k, count=None):
        cols = [None if e else _elements(d) for d, e in zip(kept, endless, strict=True)]
        lengths = [None if c is None else len(c) for c in cols]
        order = choose(lengths, count, k)
        cols = [_first_elements(d, order.count(i), k) if c is None else c
                for i, (d, c) in enumerate(zip(kept, cols, strict=True))]
        pos, out = [0] * len(cols), []
        for i in order:
            out.append(cols[i][pos[i]])
            pos[i] += 1
        return out
    return DerivedDataset(make, "sample_from_datasets(...)", any(_is_batched(d) for d in kept), endless_unit=unit)


def _draws(generator):
    """Uniform draws from `generator`, in chunks (the same numbers as one ``random(n)`` call)."""
    while True:
        yield from generator.random(4096).tolist()


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True) -> DerivedDataset:
    """`Dataset.choose_from_datasets`: for each index of `choice_dataset`, the next element of that dataset; a
    chosen dataset that has ended ends the result (`stop_on_empty_dataset`) or is skipped."""
    datasets = _datasets("choose_from_datasets", datasets)
    if not isinstance(choice_dataset, SliceDataset):
        raise DataError(f"Dataset.choose_from_datasets: choice_dataset must be a dataset of int64 indices, received "
                        f"{type(choice_dataset).__name__}; wrap a list with tf.data.Dataset.from_tensor_slices.")

    def make(_k):
        cols = [_elements(d) for d in datasets]
        pos, out = [0] * len(cols), []
        for choice in _elements(choice_dataset):
            i = _integer("choose_from_datasets", "each element of choice_dataset", choice)
            if not 0 <= i < len(cols):
                raise DataError(f"Dataset.choose_from_datasets: choice_dataset gave index {i}, out of range for "
                                f"{len(cols)} datasets (0 to {len(cols) - 1}).")
            if pos[i] < len(cols[i]):
                out.append(cols[i][pos[i]])
                pos[i] += 1
            elif stop_on_empty_dataset or all(p >= len(c) for p, c in zip(pos, cols, strict=True)):
                break
        return out
    return DerivedDataset(make, "choose_from_datasets(...)", any(_is_batched(d) for d in datasets))
