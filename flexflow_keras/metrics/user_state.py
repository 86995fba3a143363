"""The state of a metric written the Keras way: variables from ``add_variable``/``add_weight``, an
``update_state`` that assigns to them, a ``result`` that reads them, and metrics held as attributes.

Such a metric joins the additive protocol of `metrics/base.py` through deltas: a shard's partial sums are
what its ``update_state`` changes in the metric's whole state (its variables, its own ``_state`` and those
of the metrics it holds), computed under a lock and undone at once, so the state only changes when the
execution layer merges the sum of every shard's delta. With one shard this is exactly ``update_state``;
across shards it is Keras' own rule for metric variables under a distribution strategy (``aggregation=
"sum"``: each replica's updates add up). Variables are plain host arrays, so ``update_state`` runs eagerly
on the shard's NumPy labels and predictions with ``keras.ops``, ``keras.backend`` or NumPy.

Keras 3's stateless API (``stateless_update_state`` and friends) runs the same way: the given values
are written into the state, the method runs, the new values are copied out and the state is put back.
"""

from __future__ import annotations

import threading

import numpy as np

# One lock for every metric's snapshot-update-restore: shards of a data-parallel step run their metric
# tasks on several processor threads, and a metric object may be held by another metric.
LOCK = threading.RLock()


def _held_metrics(metric, seen: set[int]) -> list:
    """The metrics `metric` holds as attributes (directly, or in lists, tuples and dict values)."""
    from flexflow_keras.metrics.base import Metric

    found = []

    def visit(value):
        if isinstance(value, Metric):
            if id(value) not in seen:
                seen.add(id(value))
                found.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)

    for name, value in vars(metric).items():
        if not name.startswith("_ff_"):
            visit(value)
    return found


def own_variables(metric) -> list:
    """The Variables `metric` created with add_variable/add_weight or holds as attributes, in order."""
    from flexflow_keras.ops.graph import Variable

    out = list(metric.__dict__.get("_ff_variables", ()))
    ids = {id(v) for v in out}
    for value in vars(metric).values():
        if isinstance(value, Variable) and id(value) not in ids:
            ids.add(id(value))
            out.append(value)
    return out


def state_arrays(metric, seen: set[int] | None = None) -> list[np.ndarray]:
    """Every array that makes up `metric`'s state (its `_state`, its variables', its held metrics'), as
    live references in a fixed order."""
    seen = {id(metric)} if seen is None else seen
    arrays = [metric._state] + [v._value for v in own_variables(metric)]
    for held in _held_metrics(metric, seen):
        arrays += state_arrays(held, seen)
    return arrays


def flat_values(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, np.float64).ravel() for a in arrays]) if arrays else np.zeros(0)


def write_values(arrays, flat: np.ndarray) -> None:
    at = 0
    for a in arrays:
        piece = flat[at:at + a.size].reshape(a.shape)
        at += a.size
        a[...] = np.rint(piece) if np.issubdtype(a.dtype, np.integer) else piece


def delta_of(collect, run, changed_message: str) -> np.ndarray:
    """What `run()` adds to the flat state of the arrays `collect()` returns; they are left as they were.
    `changed_message` is the ValueError's text when `run` changes the arrays' shapes (creates state)."""
    with LOCK:
        arrays = collect()
        before = flat_values(arrays)
        try:
            run()
            arrays_after = collect()
            if [a.shape for a in arrays_after] != [a.shape for a in arrays]:
                raise ValueError(changed_message)
            after = flat_values(arrays_after)
        finally:
            write_values(arrays, before)
    return after - before


def delta_of_update(metric, y_true, y_pred, sample_weight) -> np.ndarray:
    """What ``metric.update_state(y_true, y_pred, sample_weight)`` adds to its flat state; the state is
    left as it was."""
    def run():
        if sample_weight is None:
            metric.update_state(y_true, y_pred)
        else:
            metric.update_state(y_true, y_pred, sample_weight=sample_weight)

    return delta_of(lambda: state_arrays(metric), run,
                    f"Metric '{metric.name}' ({type(metric).__name__}) changed the shape of its state in "
                    f"update_state(); create every variable in __init__ with self.add_variable(shape, initializer) "
                    f"and only assign to it in update_state.")


def results_by_name(metrics) -> dict:
    """Each metric's result under its name (a metric whose result is a dict contributes its entries)."""
    out = {}
    for m in metrics:
        value = m.result()
        if isinstance(value, dict):
            out.update(value)
        else:
            out[m.name] = value
    return out


def add_delta(metric, delta) -> None:
    """Add summed shard deltas into `metric`'s state."""
    delta = np.asarray(delta, np.float64)
    with LOCK:
        arrays = state_arrays(metric)
        flat = flat_values(arrays)
        if flat.shape != delta.shape:
            raise ValueError(f"Metric '{metric.name}' expects state deltas of {flat.size} values, received "
                             f"{delta.size}.")
        write_values(arrays, flat + delta)


def zero_variables(metric) -> None:
    """Keras 3's default reset: every variable to zeros, every held metric reset."""
    for v in own_variables(metric):
        v._value[...] = 0
    for held in _held_metrics(metric, {id(metric)}):
        held.reset_state()


def _snapshot(metric):
    """A function that puts back `metric`'s whole state (its `_state`, its variables', its held
    metrics') as it is now, into the same array objects."""
    saved = []

    def visit(m, seen):
        saved.append((m, m._state, m._state.copy(), [(v, v._value, v._value.copy()) for v in own_variables(m)]))
        for held in _held_metrics(m, seen):
            visit(held, seen)

    visit(metric, {id(metric)})

    def restore():
        for m, state, state_copy, variables in saved:
            state[...] = state_copy
            m._state = state
            for v, value, value_copy in variables:
                value[...] = value_copy
                v._value = value

    return restore


def _live_arrays(metric) -> list[np.ndarray]:
    """The arrays behind `metric.variables`, in its order."""
    from flexflow_keras.ops.graph import Variable

    return [v._value if isinstance(v, Variable) else v for v in metric.variables]


def check_metric_variables(metric, metric_variables) -> None:
    """Keras 3's check of the `metric_variables` a stateless method is given."""
    expected = len(metric.variables)
    if len(metric_variables) != expected:
        raise ValueError(
            f"Argument `metric_variables` must be a list of tensors corresponding 1:1 to "
            f"{type(metric).__name__}().variables. Received list with length {len(metric_variables)}, but "
            f"expected {expected} variables.")


def run_stateless(metric, metric_variables, run):
    """``run()`` with `metric`'s variables holding `metric_variables` (None: as they are); returns its
    value and copies of the variables' values after it. The metric's own state is left as it was."""
    from flexflow_keras.ops.graph import Variable

    with LOCK:
        restore = _snapshot(metric)
        try:
            if metric_variables is not None:
                for i, (array, value) in enumerate(zip(_live_arrays(metric), list(metric_variables), strict=True)):
                    value = np.asarray(value._value if isinstance(value, Variable) else value)
                    if value.size != array.size:
                        raise ValueError(
                            f"Metric '{metric.name}': metric_variables[{i}] has shape {value.shape}, but "
                            f"{type(metric).__name__}().variables[{i}] has shape {array.shape}. Pass the "
                            f"list returned by metric.variables or by a stateless method of this metric.")
                    array[...] = value.reshape(array.shape)
            out = run()
            new = [np.array(a, copy=True) for a in _live_arrays(metric)]
        finally:
            restore()
    return out, new
