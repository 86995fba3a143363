"""The tf.data methods that make a dataset from other datasets' elements: `concatenate`, `filter`,
`unbatch`, `enumerate`, `Dataset.zip`, `shard`, `window`, `flat_map`, `interleave`, `scan`, `rebatch`,
`unique`, `ignore_errors`, `padded_batch`'s and `ragged_batch`'s stacking, and the sources `Dataset.range`,
`Dataset.from_generator` and `TextLineDataset` (data/slices.py's `SliceDataset` chains them; the grouping
and sampling ones, `group_by_window`, `bucket_by_sequence_length`, `sample_from_datasets` and
`choose_from_datasets`, are data/grouping.py's).

A `DerivedDataset` is a `SliceDataset` whose base elements are a Python list made from its upstream
datasets, again for every pass (so an upstream `shuffle` or random `map` draws anew each epoch, as in
tf.data); its own chain (map, batch, shuffle, take, ...) then works as on arrays. Elements may differ in
shape (lines split into words): `padded_batch` pads them, `ragged_batch` makes RaggedTensors of them, `batch`
refuses them with a message. Made from
batched datasets, its elements are their batches (only `unbatch` splits them into rows), as in tf.data;
`batches_as_elements` is that view, which a second `batch` of a batched dataset stacks.

`window` gives a dataset whose elements are datasets (a tuple or dict element: a tuple or dict of them, one
per component, as tf.data), for the time-series idiom ``ds.window(n + 1, shift=1, drop_remainder=True)
.flat_map(lambda w: w.batch(n + 1))``; `flat_map` concatenates the datasets its function returns, `interleave` cycles through them as tf.data
does (`cycle_length` open at once, `block_length` elements from each in turn).

Made from an endless dataset (``repeat()`` without a count upstream), the element-by-element ones
(`filter`, `enumerate`, `shard`, `window`, `flat_map`, `interleave`, `scan`, `rebatch`, `unique`,
`concatenate`) are endless too: each is a generator over its input's elements (`_derived`), which reads an
endless input as a stream (`_stream`: its first 64, 128, ... elements, the same for every count) and makes
as many elements as a later ``take``, a fit's ``steps_per_epoch`` or a loop that breaks reads, as tf.data
streams them. `ignore_errors` of an endless dataset is an error that says so.
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from flexflow_keras.data.slices import SliceDataset, _as_array, _call
from flexflow_keras.errors import DataError
from flexflow_keras.utils import tree


def _elements(dataset, rows: bool = False) -> list:
    """The elements of one pass of a dataset (a batched one's are its batches; with `rows`, their rows)."""
    if _is_endless(dataset):  # its pass never ends: the callers that can stream it do (_derived)
        raise DataError(f"{dataset!r} repeats without end (repeat() without a count), and this step needs all "
                        f"of its elements; add .take(n) or give repeat() a count before it, or move repeat() "
                        f"after it.")
    batched = rows and _is_batched(dataset)
    out = []
    for item in dataset:
        if not batched:
            out.append(item)
            continue
        flat = tree.flatten(item)
        n = len(np.asarray(flat[0]))
        out += [tree.pack_as(item, [np.asarray(a)[i] for a in flat]) for i in range(n)]
    return out


def _is_batched(dataset) -> bool:
    return isinstance(dataset, SliceDataset) and dataset._batched()


def _is_endless(dataset) -> bool:
    return isinstance(dataset, SliceDataset) and dataset.is_endless()


def _first_elements(dataset, count: int, pass_index: int) -> list:
    """The first `count` elements of an endless dataset's pass `pass_index` (the same for every count)."""
    if count <= 0:
        return []
    head = dataset.take(count)
    head._pass = pass_index
    if not head._stackable():
        return _elements(head)
    groups, elem_maps, _, batched = head._plan()
    if batched or elem_maps:
        return _elements(head)
    # rows of arrays, read at once (an element at a time costs ~25 us; an oversampled fit reads 100,000s)
    block = head._raw_rows(np.asarray(groups, dtype=np.int64))
    flat = tree.flatten(block)
    return [tree.pack_as(block, [a[i] for a in flat]) for i in range(len(groups))]


def _stream(dataset, pass_index: int):
    """The elements of an endless dataset's pass `pass_index`, without end: its first 64, 128, 256, ...
    elements (the same for every count), each read on from where the last one stopped."""
    done, count = 0, 64
    while True:
        got = _first_elements(dataset, count, pass_index)
        yield from got[done:]
        done, count = len(got), count * 2


def _derived(dataset, gen, what: str, of_batches: bool = False, cls=None) -> DerivedDataset:
    """A dataset of the elements `gen(elements)` makes from an iterator over `dataset`'s: of a pass's list,
    or, for an endless `dataset`, of its stream, as many as are read (endless itself)."""
    cls = cls or DerivedDataset
    if _is_endless(dataset):
        return cls(lambda k, count: list(itertools.islice(gen(_stream(dataset, k)), count)), what, of_batches,
                   endless_unit=1)
    return cls(lambda _k: list(gen(iter(_elements(dataset)))), what, of_batches)


class DerivedDataset(SliceDataset):
    """A dataset whose base elements `make(pass_index)` builds (see the module docstring).

    Args:
        make: a callable giving the list of elements of a pass; with `endless_unit`,
            ``make(pass_index, count)`` giving the first `count` elements of an endless pass.
        what: how `repr` names it.
        of_batches: its elements are batches (made from batched datasets).
        endless_unit: made from endless datasets, its base never ends: `_plan` asks for as many units of
            elements as a later ``take`` needs (the first elements of a pass stay the same as it grows).
    """

    def __init__(self, make, what: str, of_batches: bool = False, endless_unit: int | None = None):
        super().__init__(None)
        self._make, self._what = make, what
        self._made: tuple | None = None
        self._of_batches = of_batches
        self._unit = endless_unit
        self._size = endless_unit  # the elements an endless base makes now (_count_for sets it)

    def _batched(self) -> bool:
        return self._of_batches or super()._batched()

    def _endless_base(self) -> bool:
        return self._unit is not None

    def _count_for(self, endless: int) -> int:
        if self._unit is None:
            return self._count()
        self._size = self._unit * int(endless)
        return self._size  # an endless base holds as many as asked: made only when read

    def _base(self) -> list:
        key = (self._pass, self._size)
        if self._made is None or self._made[0] != key:
            made = self._make(self._pass) if self._unit is None else self._make(self._pass, self._size)
            self._made = (key, list(made))
        return self._made[1]

    def _count(self) -> int:
        return len(self._base())

    def _raw_element(self, i):
        return self._base()[int(i)]

    def _raw_rows(self, rows):
        return stack_elements([self._base()[int(i)] for i in rows], None)

    def _stackable(self) -> bool:
        return False

    def __repr__(self) -> str:
        stages = "".join(f".{s[0]}()" for s in self._stages)
        return f"<Dataset {self._what}{stages}>"


def stack_elements(items: list, padded, dataset=None, plan=None) -> object:
    """Elements stacked into one batch; with a padded_batch stage ("padded_batch", size, drop, shapes,
    values) each component is padded to its `padded_shapes` entry (None: the longest of the batch); with a
    ragged_batch stage, the components that vary over `dataset`'s pass (`plan`) are RaggedTensors."""
    first = items[0]
    leaves = [tree.flatten(it) for it in items]
    n = len(leaves[0])
    ragged = None
    if padded is not None and padded[0] == "ragged_batch":
        ragged, padded = _varying_components(dataset, plan), None
    shapes = tree.flatten(padded[3]) if padded is not None and padded[3] is not None else [None] * n
    values = padded[4] if padded is not None else None
    values = tree.flatten(values) if isinstance(values, (tuple, list, dict)) else [values] * n
    out = []
    for j in range(n):
        parts = [np.asarray(leaf[j]) for leaf in leaves]
        if ragged is not None:
            out.append(_ragged_stack(parts, ragged[j]))
            continue
        if padded is None:
            if len({p.shape for p in parts}) > 1:
                raise DataError(f"Dataset.batch(): the elements have different shapes "
                                f"{sorted({p.shape for p in parts})[:4]}; use padded_batch() to pad them, or make "
                                f"them one length in map().")
            out.append(np.stack(parts))
            continue
        out.append(_pad_stack(parts, shapes[j] if j < len(shapes) else None, values[j] if j < len(values) else None))
    return tree.pack_as(first, out)


def _varying_components(dataset, plan) -> list:
    """For a ragged_batch: whether each (flattened) component differs in shape between the elements of the
    pass. tf.data decides from the component's static shape (a dim it cannot infer, as a split's length, makes
    every batch of it a RaggedTensor, a one-row batch too); elements here carry no static shape, so their
    shapes over the whole pass tell (one that varies nowhere in the data is dense, where tf.data may say
    ragged). Read once per pass (the element maps run once more for it)."""
    cached = getattr(dataset, "_ragged_cache", None)
    if cached is None or cached[0] is not plan:
        groups, elem_maps = plan[0], plan[1]
        shapes = [[np.shape(v) for v in tree.flatten(dataset._element(i, elem_maps))] for g in groups for i in g]
        cached = (plan, [len(set(col)) > 1 for col in zip(*shapes, strict=True)])
        dataset._ragged_cache = cached
    return cached[1]


def _ragged_stack(parts: list, varies: bool):
    """One component of a ragged_batch: the rows stacked when the component has one shape over the pass, else
    a RaggedTensor of them. Rows of different ranks cannot be one RaggedTensor, as in tf.data."""
    from flexflow_keras.tf_ragged import RaggedTensor, _dtype_name

    if not varies:
        return np.stack(parts)
    if len({p.ndim for p in parts}) > 1 or parts[0].ndim == 0:
        raise DataError(f"Dataset.ragged_batch(): the elements' components have different ranks "
                        f"{sorted({p.ndim for p in parts})}; a RaggedTensor's rows differ in length, not in rank.")
    if len({p.shape[1:] for p in parts}) > 1:
        raise DataError(f"Dataset.ragged_batch(): the elements differ in shape past their first dim "
                        f"{sorted({p.shape for p in parts})[:4]}; ragged_batch makes only the first dim ragged here "
                        f"(pad the others in map(), or use padded_batch()).")
    text = any(p.dtype.kind in "OSU" for p in parts)
    rows = [_as_array(p) if text else p for p in parts]
    if not text:
        dtype = np.result_type(*parts)
        rows = [p.astype(dtype, copy=False) for p in parts]
    return RaggedTensor(rows, "string" if text else _dtype_name(rows[0]))


def check_row_splits_dtype(row_splits_dtype) -> None:
    """ragged_batch's `row_splits_dtype`: int32 or int64, as tf.data accepts (a name, a NumPy or tf dtype)."""
    name = getattr(row_splits_dtype, "name", row_splits_dtype)
    try:
        name = np.dtype(name).name
    except TypeError:
        name = str(name)
    if name not in ("int32", "int64"):
        raise DataError(f"Dataset.ragged_batch(row_splits_dtype) must be int32 or int64, received "
                        f"{row_splits_dtype!r}.")


def _pad_stack(parts: list, shape, value):
    ndim = parts[0].ndim
    if any(p.ndim != ndim for p in parts):
        raise DataError(f"Dataset.padded_batch(): the elements' components have different ranks "
                        f"{sorted({p.ndim for p in parts})}; padded_batch pads lengths, not ranks.")
    target = [max(p.shape[d] for p in parts) for d in range(ndim)]
    if shape is not None:
        shape = [shape] if np.isscalar(shape) else list(shape)
        for d, s in enumerate(shape):
            if s is not None and int(s) >= 0:
                if int(s) < target[d]:
                    raise DataError(f"Dataset.padded_batch(): padded_shapes gives {int(s)} for dim {d}, but an "
                                    f"element is {target[d]} long there; give None (the longest) or more.")
                target[d] = int(s)
    text = parts[0].dtype.kind in "OSU"
    fill = (b"" if text else 0) if value is None else value
    out = np.full([len(parts)] + target, fill, dtype=object if text else np.result_type(*parts))
    for i, p in enumerate(parts):
        out[(i,) + tuple(slice(0, s) for s in p.shape)] = p
    return out


class WindowDataset(DerivedDataset):
    """`Dataset.window`'s result: its elements are datasets, handed to `map` / `flat_map` functions and to
    iteration as they are (not as tensors)."""

    def _element(self, i, elem_maps):
        item = self._raw_element(i)
        for fn in elem_maps:
            item = _call(fn, item)
        return item

    def __getitem__(self, index):
        groups, elem_maps, _batch_maps, batched = self._plan()
        if batched:
            raise DataError("Dataset.window(...).batch(): the elements of a window dataset are datasets, which do "
                            "not stack; turn each window into a tensor first, e.g. "
                            ".flat_map(lambda w: w.batch(window_size)).batch(batch_size).")
        return self._element(groups[index], elem_maps)


# --- the methods SliceDataset gains ------------------------------------------------------------------------
def concatenate(a, b) -> DerivedDataset:
    if _is_endless(a):  # b's elements never come, as in tf.data
        return _derived(a, lambda items: items, "concatenate(...)", _is_batched(a))
    if _is_endless(b):
        return DerivedDataset(lambda k, count: list(itertools.islice(itertools.chain(_elements(a), _stream(b, k)), count)),
                              "concatenate(...)", _is_batched(a), endless_unit=1)
    return DerivedDataset(lambda _k: _elements(a) + _elements(b), "concatenate(...)", _is_batched(a))


def filter_(dataset, predicate) -> DerivedDataset:
    def gen(items):
        return (item for item in items if bool(np.asarray(_call(predicate, item))))
    return _derived(dataset, gen, "filter(...)", _is_batched(dataset))


def batches_as_elements(dataset) -> DerivedDataset:
    """A batched dataset seen as one whose elements are its batches, for a further ``batch`` /
    ``padded_batch`` (tf.data's ``ids.batch(seq_length + 1).map(split).batch(64)``: batches of sequences)."""
    if _is_endless(dataset):
        raise DataError("Dataset.batch() of a batched dataset that repeats without end (repeat() before the "
                        "first batch): add .take(n) before the second batch, or move .repeat() after it.")
    return DerivedDataset(lambda _k: _elements(dataset), f"{dataset!r}")


def unbatch(dataset) -> DerivedDataset:
    if not dataset._batched():
        raise DataError("Dataset.unbatch() on a dataset that is not batched: its elements are already single.")
    if _is_endless(dataset):  # (repeat() before the batch): the rows of as many first batches as are read
        def rows(k, count):
            batches, out = 1, []
            while len(out) < count:
                out = [row for b in _first_elements(dataset, batches, k) for row in _rows(b)]
                batches *= 2
            return out[:count]
        return DerivedDataset(rows, "unbatch()", endless_unit=1)
    return DerivedDataset(lambda _k: _elements(dataset, rows=True), "unbatch()")


def _rows(item) -> list:
    """The rows of one batch (an element of a batched dataset)."""
    flat = tree.flatten(item)
    return [tree.pack_as(item, [np.asarray(a)[i] for a in flat]) for i in range(len(np.asarray(flat[0])))]


def enumerate_(dataset, start=0) -> DerivedDataset:
    from flexflow_keras.ops.eager_tensor import eager

    def gen(items):
        return ((eager(np.int64(start + i)), item) for i, item in enumerate(items))
    return _derived(dataset, gen, "enumerate()", _is_batched(dataset))


def shard(dataset, num_shards, index) -> DerivedDataset:
    num_shards, index = int(num_shards), int(index)
    if not 0 <= index < num_shards:
        raise DataError(f"Dataset.shard(num_shards={num_shards}, index={index}): index must be in [0, num_shards).")
    return _derived(dataset, lambda items: itertools.islice(items, index, None, num_shards),
                    f"shard({num_shards}, {index})", _is_batched(dataset))


def window(dataset, size, shift=None, stride=1, drop_remainder=False) -> WindowDataset:
    """`Dataset.window(size, shift, stride, drop_remainder)`: a window starts every `shift` elements (default
    `size`) and holds `size` elements taken every `stride`-th; without `drop_remainder` the windows near the
    end are shorter, down to one element, as tf.data's."""
    values = {"size": size, "shift": size if shift is None else shift, "stride": stride}
    for arg, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
            raise DataError(f"Dataset.window expects a positive integer for {arg}, received {arg}={v!r}.")
    size, shift, stride = (int(v) for v in values.values())
    span = (size - 1) * stride + 1

    def gen(items):
        ahead: list = []  # the elements from the next window's start on
        ended = False
        while True:
            while not ended and len(ahead) < span:
                item = next(items, _END)
                if item is _END:
                    ended = True
                else:
                    ahead.append(item)
            if not ahead:
                return
            picks = ahead[:span:stride]
            if drop_remainder and len(picks) < size:
                return  # every later window is shorter still
            yield _window_of(picks)
            if ended and len(ahead) <= shift:
                return
            while len(ahead) < shift and not ended:  # a shift beyond the window skips elements
                item = next(items, _END)
                if item is _END:
                    ended = True
                else:
                    ahead.append(item)
            ahead = ahead[shift:]
    return _derived(dataset, gen, f"window({size}, shift={shift}, stride={stride})", cls=WindowDataset)


def _window_of(picks: list):
    """One window: the picked elements' components, each as a dataset of its values (the element's structure)."""
    leaves = [tree.flatten(p) for p in picks]
    columns = [SliceDataset.from_tensor_slices(_column([leaf[j] for leaf in leaves]))
               for j in range(len(leaves[0]))]
    return tree.pack_as(picks[0], columns)


def _column(values: list) -> np.ndarray:
    arrays = [np.asarray(v) for v in values]
    if len({a.shape for a in arrays}) > 1:
        raise DataError(f"Dataset.window(): the elements in a window have different shapes "
                        f"{sorted({a.shape for a in arrays})[:4]}; window elements of one shape (window before "
                        f"batch, or pad them in map()).")
    return _as_array(np.stack(arrays))


def flat_map(dataset, map_func) -> DerivedDataset:
    """`Dataset.flat_map(fn)`: the elements of the datasets `fn` returns for each element, one after another."""
    def gen(items):
        for item in items:
            yield from _elements(_produced("flat_map", map_func, item))
    return _derived(dataset, gen, "flat_map(...)")


def _produced(method: str, map_func, item) -> SliceDataset:
    produced = _call(map_func, item)
    if not isinstance(produced, SliceDataset):
        raise DataError(f"Dataset.{method}: the function must return a dataset (e.g. w.batch(n) for a window, "
                        f"tf.data.Dataset.from_tensor_slices(...)), received {type(produced).__name__}. To "
                        f"transform elements one to one, use map().")
    return produced


def _positive(method: str, arg: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise DataError(f"Dataset.{method} expects a positive integer for {arg}, received {arg}={value!r}.")
    return int(value)


def _cycle_length(cycle_length, num_parallel_calls) -> int:
    """tf.data's cycle length: the given one, or for None / AUTOTUNE TensorFlow's choice from the number of
    schedulable CPU cores (interleave: all of them; with num_parallel_calls=n: min(n, cores); with
    num_parallel_calls=AUTOTUNE: ceil(cores / 3))."""
    if cycle_length is not None and int(cycle_length) != -1:
        return _positive("interleave", "cycle_length", cycle_length)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if num_parallel_calls is None:
        return cores
    if int(num_parallel_calls) != -1:
        return min(_positive("interleave", "num_parallel_calls", num_parallel_calls), cores)
    return -(-cores // 3)


_END = object()


def interleave(dataset, map_func, cycle_length=None, block_length=1, num_parallel_calls=None) -> DerivedDataset:
    """`Dataset.interleave`: `cycle_length` of the datasets `map_func` returns are open at once; each gives
    `block_length` elements in turn, and one that ends is replaced by the next input's, in tf.data's
    deterministic order (with num_parallel_calls or deterministic=False too: the calls run one after another
    here). `_cycle_length` says what a cycle_length of None or AUTOTUNE is."""
    cycle = _cycle_length(cycle_length, num_parallel_calls)
    block = _positive("interleave", "block_length", block_length)

    def gen(inputs):
        slots: list[list | None] = [None] * cycle
        index = in_block = opened = 0
        ended = False
        while not ended or opened:
            slot = slots[index]
            if slot is None and not ended:  # open the next input's dataset in this slot
                item = next(inputs, _END)
                if item is _END:
                    ended = True
                else:
                    slots[index] = _elements(_produced("interleave", map_func, item))[::-1]
                    opened += 1
                continue
            if slot:  # its next element; the block ends after block_length of them
                yield slot.pop()
                in_block += 1
                if in_block < block:
                    continue
            elif slot is not None:  # this one has ended (found on the call after its last element, as tf.data)
                slots[index] = None
                opened -= 1
            index, in_block = (index + 1) % cycle, 0
    return _derived(dataset, gen, f"interleave(cycle_length={cycle}, block_length={block})")


def scan(dataset, initial_state, scan_func) -> DerivedDataset:
    """`Dataset.scan`: ``scan_func(state, element)`` returns ``(new_state, output)``; the outputs are the elements."""
    from flexflow_keras.data.slices import _tensors

    def gen(items):
        state = _tensors(initial_state)
        for item in items:
            result = scan_func(state, item)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise DataError(f"Dataset.scan: scan_func must return a pair (new_state, output_element), received "
                                f"{type(result).__name__} {result!r:.60}; return `state, output`.")
            state = _tensors(result[0])
            yield result[1]
    return _derived(dataset, gen, "scan(...)", _is_batched(dataset))


def rebatch(dataset, batch_size, drop_remainder=False) -> DerivedDataset:
    """`Dataset.rebatch(n)`: the rows of the elements (batches) in batches of n, as ``unbatch().batch(n)``; a
    list of sizes is cycled through."""
    sizes = [_positive("rebatch", "batch_size", b) for b in np.asarray(batch_size).reshape(-1).tolist()]
    if not sizes:
        raise DataError("Dataset.rebatch received an empty list of batch sizes; give one size or a list of them.")

    def gen(items):
        rows: list = []
        k = 0
        for item in items:
            flat = [np.asarray(a) for a in tree.flatten(item)]
            if any(a.ndim == 0 for a in flat):
                raise DataError("Dataset.rebatch needs elements with a batch dimension, received scalar elements; "
                                "batch the dataset first (.batch(n).rebatch(m)), or use .batch(m).")
            rows += [tree.pack_as(item, [a[i] for a in flat]) for i in range(len(flat[0]))]
            while len(rows) >= sizes[k % len(sizes)]:
                size = sizes[k % len(sizes)]
                yield stack_elements(rows[:size], None)
                rows, k = rows[size:], k + 1
        if rows and not drop_remainder:
            yield stack_elements(rows, None)
    return _derived(dataset, gen, f"rebatch({batch_size})", of_batches=True)


def unique(dataset) -> DerivedDataset:
    """`Dataset.unique()`: each distinct element once, in the order first seen (one int or string component)."""
    def gen(items):
        seen = set()
        for item in items:
            if isinstance(item, (tuple, dict)):
                raise DataError("Dataset.unique() supports elements of one component (an int or string tensor), "
                                "received a tuple or dict element; map it to the one component first.")
            a = np.asarray(item)
            if a.dtype.kind not in "iuOSU":
                raise DataError(f"Dataset.unique() supports int32, int64 and string elements, received {a.dtype}; "
                                f"cast the elements first (map(lambda x: tf.cast(x, 'int64'))).")
            key = (a.shape, tuple(a.reshape(-1).tolist()))
            if key not in seen:
                seen.add(key)
                yield item
    return _derived(dataset, gen, "unique()", _is_batched(dataset))


def ignore_errors(dataset, log_warning=False) -> DerivedDataset:
    """`Dataset.ignore_errors()`: the elements (batches, if batched) whose making raised (a map function's
    error) are dropped, the others kept in order. Errors in making the whole pass (a filter, a flat_map) are
    not per element and still raise."""
    import logging

    if _is_endless(dataset):
        raise DataError("Dataset.ignore_errors() of a dataset that repeats without end (repeat() without a count "
                        "before it) is not supported here; call ignore_errors() before repeat().")

    def make(_k):
        out = []
        try:
            for i in range(len(dataset)):
                try:
                    out.append(dataset[i])
                except Exception as e:  # noqa: BLE001 - tf.data drops an element on any error its making raised
                    if log_warning:
                        logging.getLogger("flexflow_keras").warning("Dataset.ignore_errors: dropped element %d: %s: %s",
                                                                    i, type(e).__name__, e)
        finally:
            dataset._pass += 1  # one pass read, as iterating it counts
        return out
    return DerivedDataset(make, "ignore_errors()", _is_batched(dataset))


def zip_(*datasets) -> DerivedDataset:
    """`tf.data.Dataset.zip((a, b))` or `zip(a, b)`: tuples (or dicts) of the datasets' elements, as long as
    the shortest; the structure may nest (``zip((a, (b, c)))``), and endless members (a counter, a repeat())
    give as many elements as the others (all endless: endless)."""
    struct = datasets[0] if len(datasets) == 1 and isinstance(datasets[0], (tuple, list, dict)) else datasets
    # a nested structure of datasets zips as one: ``zip((images, (counter, counter)))`` gives (x, (s, s))
    if isinstance(struct, dict):
        struct = {k: zip_(v) if isinstance(v, (tuple, list, dict)) else v for k, v in struct.items()}
    else:
        struct = tuple(zip_(v) if isinstance(v, (tuple, list, dict)) else v for v in struct)
    parts = list(struct.values()) if isinstance(struct, dict) else list(struct)
    endless = [_is_endless(v) for v in parts]

    def rows(k, count=None):
        cols = [None if e else _elements(v) for v, e in zip(parts, endless, strict=True)]
        n = min([len(c) for c in cols if c is not None] + ([count] if count is not None else []))
        cols = [_first_elements(v, n, k) if c is None else c[:n] for v, c in zip(parts, cols, strict=True)]
        if isinstance(struct, dict):
            return [{key: c[i] for key, c in zip(struct, cols, strict=True)} for i in range(n)]
        return list(zip(*cols, strict=True))
    if all(endless):
        return DerivedDataset(rows, "zip(...)", any(_is_batched(d) for d in parts), endless_unit=1)
    return DerivedDataset(rows, "zip(...)", any(_is_batched(d) for d in parts))


def counter(start=0, step=1, dtype="int64", name=None) -> DerivedDataset:
    """`tf.data.Dataset.counter` / `tf.data.experimental.Counter`: start, start + step, ... without end (a
    later take, or a zip with a finite dataset, ends it)."""
    from flexflow_keras.ops.eager_tensor import eager

    kind = str(np.dtype(getattr(dtype, "name", dtype)))

    def make(_k, count):
        return [eager(v) for v in (int(start) + int(step) * np.arange(count)).astype(kind)]
    return DerivedDataset(make, f"counter({start}, {step})", endless_unit=64)


def range_(*args, dtype="int64", name=None) -> DerivedDataset:
    from flexflow_keras.ops.eager_tensor import eager

    values = np.arange(*[int(a) for a in args]).astype(str(np.dtype(getattr(dtype, "name", dtype))))
    return DerivedDataset(lambda _k: [eager(v) for v in values], f"range{tuple(args)}")


def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                   name=None) -> DerivedDataset:
    """Every element the generator yields (called again for every pass, as tf.data does)."""
    if not callable(generator):
        raise DataError("Dataset.from_generator takes the generator function (callable), not a generator object: "
                        "pass `gen`, not `gen()`.")

    def make(_k):
        return [tree.map_structure(_as_array, item) if not isinstance(item, tuple) else
                tuple(_as_array(v) if not isinstance(v, (tuple, dict)) else v for v in item)
                for item in generator(*(args or ()))]
    return DerivedDataset(make, f"from_generator({getattr(generator, '__name__', 'generator')})")


def text_line_dataset(filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
                      name=None) -> DerivedDataset:
    """`tf.data.TextLineDataset`: the lines of the files (bytes, without their line ends), file by file."""
    if compression_type not in (None, ""):
        raise DataError(f"TextLineDataset(compression_type={compression_type!r}) is not supported; decompress the "
                        f"files first.")
    paths = [filenames] if isinstance(filenames, (str, bytes, os.PathLike)) else list(np.asarray(filenames).ravel())
    paths = [p.decode() if isinstance(p, bytes) else os.fspath(p) for p in paths]
    for p in paths:
        if not os.path.isfile(p):
            raise DataError(f"TextLineDataset: {p!r} {'is a directory' if os.path.isdir(p) else 'does not exist'}; "
                            f"give text files.")

    def make(_k):
        lines = []
        for p in paths:
            with open(p, "rb") as f:
                lines += [line.rstrip(b"\n").rstrip(b"\r") for line in f]
        return [_as_array(np.asarray(line, dtype=object)) for line in lines]
    return DerivedDataset(make, f"TextLineDataset({paths[0]!r}{', ...' if len(paths) > 1 else ''})")
