"""Host preprocessing in front of a functional model: ``inputs = Input(shape=(1,), dtype="string");
x = vectorize_layer(inputs); ...; Model(inputs, outputs)`` (keras.io's "end-to-end" text models).

The graph the runtime trains holds numbers only, so a host layer (`layers/host_layer.py`) called on a
symbolic tensor does not add ops: it returns a new graph input of its output's shape and dtype, and
remembers which layer makes it from which tensor or tensors (`record`). When a functional model is built,
`split_inputs` replaces the model's string inputs by those host outputs (the inputs of the graph) and
returns a `HostPrefix`: the steps that turn the data the model is given (strings, in the structure of
the inputs the script declared) into the graph's inputs. `fit`, `evaluate`, `predict`, the `*_on_batch`
methods and an eager call run it on arrays at once and on datasets batch by batch (`wrap_data`), on the
host, as Keras runs these layers outside the backend's graph.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import DataError, GraphError
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils.py_dataset import PyDataset


def _sources(src) -> tuple:
    """A step's source tensors: one, or a tuple (a layer on a list of inputs, e.g. HashedCrossing)."""
    return src if isinstance(src, tuple) else (src,)


def record(layer, src) -> KerasTensor:
    """`layer` (a host layer) called on the symbolic `src` (a tensor, or a list of them): a new graph input
    that stands for its output."""
    from flexflow_keras.layers.host_shape_step import hoist, is_model_input
    from flexflow_keras.layers.input_layer import Input

    many = isinstance(src, (list, tuple))
    if many:
        src = tuple(src)
    hoisted = []
    for t in _sources(src):
        h = t if is_model_input(t) else hoist(t)  # shape ops (expand_dims, reshape) on an input: host steps
        hoisted.append(h)
        if h is None:
            producer = t._keras_history.operation.name if t._keras_history is not None else "an op"
            raise GraphError(f"{type(layer).__name__} '{layer.name}' runs on the host, before the model's graph: call "
                             f"it on model inputs (e.g. keras.Input(shape=(1,), dtype='string')), on arrays, or in "
                             f"the dataset's map(); it cannot take the output of '{producer}' (only reshape, "
                             f"expand_dims, squeeze and transpose of an input may come before it).")
    src = tuple(hoisted) if many else hoisted[0]
    shape = tuple(layer.compute_output_shape([t.shape for t in src] if many else src.shape))
    calls = layer.__dict__.setdefault("_host_calls", 0)
    out = Input(batch_shape=(None,) + shape[1:], dtype=layer.output_dtype(),
                name=layer.name if calls == 0 else f"{layer.name}_{calls}")
    layer._host_calls = calls + 1
    layer.built = True
    out._host_from = (layer, src)
    _sources(src)[0].__dict__.setdefault("_host_outputs", []).append(out)  # split_inputs orders the steps
    return out


class HostPrefix:
    """The host steps from a model's declared inputs to its graph's inputs (see the module docstring)."""

    def __init__(self, model_name: str, declared: list, steps: list, graph_inputs: list):
        self.model_name = model_name
        self.declared = declared
        self.steps = steps
        self.graph_inputs = graph_inputs
        self.declared_struct = declared if len(declared) > 1 else declared[0]  # as the model was declared

    def __call__(self, x):
        """`x` in the declared inputs' structure (one array, a list, or a dict by input name) -> the graph
        inputs' arrays (one, or a list)."""
        names = [t.name for t in self.declared]
        if isinstance(x, KerasTensor) or any(isinstance(v, KerasTensor) for v in _leaves(x)):
            raise GraphError(f"Model '{self.model_name}' starts with host preprocessing ("
                             f"{', '.join(s[0].name for s in self.steps)}); call it on data, not on symbolic tensors.")
        struct = getattr(self, "declared_struct", None)
        if isinstance(x, dict) and isinstance(struct, dict) and set(x) <= set(struct):
            x = {struct[k].name: v for k, v in x.items()}  # keyed as the model's dict of Inputs (Keras 3)
        if isinstance(x, dict):
            missing = [n for n in names if n not in x]
            if missing:
                raise DataError(f"Model '{self.model_name}' expects its inputs {names}; the dict lacks {missing}.")
            given = [x[n] for n in names]
        elif isinstance(x, (list, tuple)) and len(names) > 1:
            if len(x) != len(names):
                raise DataError(f"Model '{self.model_name}' expects {len(names)} inputs {names}, received {len(x)}.")
            given = list(x)
        else:
            if len(names) != 1:
                raise DataError(f"Model '{self.model_name}' expects {len(names)} inputs {names}, received one.")
            given = [x]
        values = {t.uid: _ranked(v, t) for t, v in zip(self.declared, given, strict=True)}
        for layer, src, out in self.steps:
            given = tuple(values[s.uid] for s in src) if isinstance(src, tuple) else values[src.uid]
            values[out.uid] = np.asarray(layer.host_call(given))
        outs = [np.asarray(values[t.uid]) for t in self.graph_inputs]
        return outs[0] if len(outs) == 1 else outs


    def symbolic(self, flat: list) -> list:
        """The graph inputs for the symbolic tensors `flat` (one per declared input): each host step called
        again on them, so the model being built records the steps in its own prefix (a
        ``Sequential([StringLookup(...), Embedding(...)])`` called on a string Input, as keras.io's
        recommendation examples build their encoders)."""
        values = {t.uid: v for t, v in zip(self.declared, flat, strict=True)}
        for layer, src, out in self.steps:
            given = [values[s.uid] for s in src] if isinstance(src, tuple) else values[src.uid]
            values[out.uid] = layer(given)
        return [values[t.uid] for t in self.graph_inputs]


def _ranked(value, t: KerasTensor):
    """Keras' rank rule: data of shape (N,) for an Input of shape (None, 1) is (N, 1)."""
    arr = np.asarray(value, dtype=object) if isinstance(value, (str, bytes)) else np.asarray(value)
    if arr.ndim == len(t.shape) - 1 and t.shape[-1] == 1:
        arr = arr[..., None]
    return arr


def _leaves(x):
    if isinstance(x, dict):
        return list(x.values())
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _used(outputs) -> set:
    """The uids of the tensors the outputs are computed from (walking back through the ops)."""
    seen, stack = set(), list(outputs)
    while stack:
        t = stack.pop()
        if t.uid in seen:
            continue
        seen.add(t.uid)
        if t.node is not None:
            stack.extend(t.node.inputs)
    return seen


def split_inputs(model_name: str, declared: list, outputs=None):
    """(the graph's inputs, a HostPrefix or None) for a model declared with `declared` inputs: its number
    inputs and the host outputs made from them that `outputs` read (all of them without `outputs`)."""
    steps = []

    def walk(t):
        for out in t.__dict__.get("_host_outputs", []):
            steps.append((out._host_from[0], out._host_from[1], out))
            walk(out)
    for t in declared:
        walk(t)
    strings = [t for t in declared if t.dtype == "string"]
    if not steps and not strings:
        return declared, None
    steps = _in_order(model_name, declared, steps)
    direct = None
    if outputs is not None:  # only the host calls the outputs read (a cell run twice, a Sequential rebuilt)
        need, kept = _used(outputs), []
        direct = set(need)  # the host outputs the graph reads (not only other host steps)
        for step in reversed(steps):
            if step[2].uid in need:
                kept.append(step)
                need.update(t.uid for t in _sources(step[1]))
        steps = kept[::-1]
        if not steps and not strings:
            return declared, None
    graph_inputs = [t for t in declared if t.dtype != "string"] + [
        out for _, _, out in steps if (out.uid in direct if direct is not None else out.dtype != "string")]
    for t in strings:
        read = any(s is t for _, src, _ in steps for s in _sources(src))
        if not read and (direct is None or t.uid in direct or not graph_inputs):  # else unused: left unread
            raise GraphError(f"Model '{model_name}': input '{t.name}' holds strings, which only host preprocessing "
                             f"layers (TextVectorization, StringLookup) can read; call one on it, or give the "
                             f"model numbers.")
    return graph_inputs, HostPrefix(model_name, list(declared), steps, graph_inputs)


def _in_order(model_name: str, declared: list, steps: list) -> list:
    """`steps` ordered so that each runs after those making its sources (which must be model inputs)."""
    ready, ordered, pending = {t.uid for t in declared}, [], list(steps)
    while pending:
        runnable = [s for s in pending if all(t.uid in ready for t in _sources(s[1]))]
        if not runnable:
            layer, src, _ = pending[0]
            missing = [t.name for t in _sources(src) if t.uid not in ready]
            raise GraphError(f"Model '{model_name}': host layer '{layer.name}' reads {missing}, which are not inputs "
                             f"of the model; pass them in Model(inputs=[...]).")
        ordered += runnable
        ready.update(out.uid for _, _, out in runnable)
        pending = [s for s in pending if not any(s is r for r in runnable)]
    return ordered


def _map_batch(batch, prefix):
    if isinstance(batch, tuple) and batch:
        return (prefix(batch[0]),) + tuple(batch[1:])
    return prefix(batch)


def wrap_data(model, x):
    """`x` as the graph takes it: arrays run through the model's host prefix now, datasets batch by batch."""
    if x is None:
        return x
    stream = _is_stream(x)
    ensure = getattr(model, "_ensure_host_prefix", None)  # a Sequential that starts with a host layer builds now
    if ensure is not None and getattr(model, "_graph", None) is None:
        sample = x[0] if isinstance(x, PyDataset) else (None if stream else x)
        if sample is not None:
            ensure(sample[0] if stream and isinstance(sample, tuple) else sample)
    prefix = getattr(model, "_host_prefix", None)
    if prefix is None:
        return x
    if not stream:
        return prefix(x)
    if isinstance(x, PyDataset):
        return _MappedPyDataset(x, prefix)
    if hasattr(x, "__next__"):  # an iterator: one pass, mapped as it goes
        return (_map_batch(b, prefix) for b in x)
    # a re-iterable: each pass (epoch) mapped anew, with the length it has
    return (_MappedSized if hasattr(x, "__len__") else _MappedIterable)(x, prefix)


class _MappedIterable:
    """A re-iterable dataset whose batches' inputs go through `prefix` on every pass."""

    def __init__(self, inner, prefix):
        self._inner, self._prefix = inner, prefix

    def __iter__(self):
        return (_map_batch(b, self._prefix) for b in self._inner)


class _MappedSized(_MappedIterable):
    def __len__(self) -> int:
        return len(self._inner)


def _is_stream(x) -> bool:
    return not isinstance(x, (np.ndarray, list, tuple, dict, str, bytes)) and not hasattr(x, "__array__") and (
        hasattr(x, "__iter__") or hasattr(x, "__next__"))


def wrap_validation(model, data):
    """fit's `validation_data` ((x, y[, sample_weight]) or a dataset) with its inputs as the graph takes them."""
    if getattr(model, "_host_prefix", None) is None or data is None:
        return data
    if isinstance(data, (tuple, list)):
        return (wrap_data(model, data[0]),) + tuple(data[1:])
    return wrap_data(model, data)


class _MappedPyDataset(PyDataset):
    """`inner`'s batches with their inputs through `prefix` (its length, order and epoch hooks)."""

    def __init__(self, inner, prefix):
        super().__init__()
        self._inner, self._prefix = inner, prefix

    def __getitem__(self, index):
        return _map_batch(self._inner[index], self._prefix)

    def __len__(self) -> int:
        return len(self._inner)

    def on_epoch_begin(self) -> None:
        self._inner.on_epoch_begin()

    def on_epoch_end(self) -> None:
        self._inner.on_epoch_end()

    def iterate(self, shuffle: bool = False, seed: int | None = None, hooks: bool = True):
        for batch in self._inner.iterate(shuffle, seed, hooks):
            yield _map_batch(batch, self._prefix)
