"""Keras 3's branches and loops in `keras.ops`: cond, switch, while_loop, fori_loop (the scans and maps are
in ops/control_scan.py), and the helpers both modules share.

Eagerly each runs the Python branch or loop on values, as Keras 3's TensorFlow backend does: one branch is
called, a loop runs until its condition is false, and a loop's results are tensors (Python ints int32,
floats float32).

A model's graph has no branch or loop op, so in a layer's call() (KerasTensors) they are built from the ops
that exist:
- a predicate, index or trip count known on the host (Python and NumPy values, eager tensors) is used as
  Python uses it: the graph holds only the branch taken (as TensorFlow's graph does for a constant
  predicate), or the loop unrolled, at most `MAX_UNROLL` iterations;
- a symbolic predicate or index computes every branch and selects with `where`: TensorFlow's values, and
  its gradients as long as every branch stays finite in its own backward pass on the values it is given.
  The branch not taken receives a zero gradient, but one that divides by zero in its backward (sqrt, log
  or a division at 0) turns that zero into NaN, which reaches the inputs the branches share; TensorFlow
  runs no backward for the branch not taken. A warning says so when such a branch is built
  (`warn_both_branches`). The branches must give the same structure, shapes and dtypes, as TensorFlow's
  graph requires;
- a symbolic loop condition with `maximum_iterations` unrolls that many steps, each kept only while every
  condition so far held (a loop that stops stays stopped); without it the loop is a `ControlFlowError`,
  since the number of steps must be known when the model is built.
The batch dim is never unrolled: it is split across processors by data parallelism.
"""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras import tree
from flexflow_keras.errors import ArgumentError, GraphError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.dtype_rules import as_dtype, dtype_of
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor, Variable

__all__ = ["cond", "switch", "while_loop", "fori_loop"]

log = logging.getLogger("flexflow_keras")

MAX_UNROLL = 1000  # iterations a symbolic loop may unroll into a model's graph


class ControlFlowError(GraphError):
    """A branch or loop a model's graph cannot hold: its trip count is not known when the model is built,
    it would unroll too far, or its branches differ."""


# --- helpers shared with control_scan.py ------------------------------------------------------------------
def is_symbolic(v) -> bool:
    """Whether `v` is a graph value: a KerasTensor, or a variable read inside a layer's symbolic call()."""
    return isinstance(v, KerasTensor) or (isinstance(v, Variable) and F._symbolic_calls[0] > 0)


def any_symbolic(structure) -> bool:
    return any(is_symbolic(v) for v in tree.flatten(structure))


def to_tensor(v):
    """A leaf as a tensor of Keras' dtype for it (Python ints int32, floats float32; arrays keep theirs);
    None stays None, graph values stay symbolic."""
    if v is None:
        return None
    t = as_dtype(v, dtype_of(v), is_symbolic(v))
    return eager(t) if isinstance(t, np.ndarray | np.generic) else t


def spec(v) -> tuple:
    """(shape, dtype) of a leaf as the graph sees it (None for the batch)."""
    if isinstance(v, KerasTensor):
        return tuple(v.spec.shape), v.dtype
    if isinstance(v, Variable):
        return tuple(v.shape), str(v.dtype)
    return tuple(np.shape(v)), dtype_of(v)


def check_unroll(n: int, who: str) -> None:
    """Refuse unrolling `n` iterations into a model's graph past `MAX_UNROLL`."""
    if n > MAX_UNROLL:
        raise ControlFlowError(
            f"{who} would unroll {n} iterations into the model's graph; at most {MAX_UNROLL} are allowed, as each "
            f"becomes ops of its own. Loop over fewer steps (a recurrent layer such as keras.layers.RNN runs a "
            f"long sequence), or run the loop eagerly on arrays.")


def _dim_error(who: str, what: str, value) -> ControlFlowError:
    shown = "an unknown dim of ops.shape(x) (the batch or an open length)" if getattr(value, "_is_dim", False) \
        else repr(value)
    return ControlFlowError(
        f"{who}: {what} is {shown}, a value of the model's graph (known only when the model runs), but the "
        f"number of steps or the branch must be known when the model is built: flexflow_keras unrolls loops and "
        f"picks branches then. Give a Python int (or an eager value), or for a loop whose condition depends on "
        f"the data, ops.while_loop(..., maximum_iterations=N).")


def host_int(value, who: str, what: str) -> int:
    """An integer argument known on the host (a Python or NumPy int, an eager tensor)."""
    if is_symbolic(value) or getattr(value, "_is_dim", False):
        raise _dim_error(who, what, value)
    v = value.value if isinstance(value, Variable) else value
    arr = np.asarray(v)
    if arr.ndim or arr.dtype.kind not in "iub":
        raise ArgumentError(f"{who} expects an integer scalar for {what}, received {value!r}.")
    return int(arr)


def _truth(value, who: str, what: str) -> bool:
    """A predicate known on the host, as Python's `if` reads it (a scalar only)."""
    v = value.value if isinstance(value, Variable) else value
    arr = np.asarray(v)
    if arr.size != 1:
        raise ArgumentError(f"{who} expects a scalar boolean for {what}, received a value of shape {arr.shape}; "
                            f"for an element-wise choice use keras.ops.where.")
    return bool(arr.reshape(()))


def _as_pred(value, who: str, what: str):
    """A symbolic predicate as a bool scalar tensor (TensorFlow requires a scalar)."""
    shape, dtype = spec(value)
    if any(s != 1 for s in shape):
        raise ControlFlowError(
            f"{who} expects a scalar for {what}, received a graph value of shape {shape} (its dims hold "
            f"{'the batch' if None in shape else 'several values'}); for a per-sample or element-wise choice use "
            f"keras.ops.where(condition, x, y), which selects element by element.")
    if shape:
        value = F.reshape(value, ())
    return value if dtype == "bool" else F.not_equal(value, 0)


def check_same(a, b, who: str, names: tuple[str, str]) -> None:
    """`a` and `b` have the same structure, and their leaves the same shapes and dtypes."""
    try:
        tree.assert_same_structure(a, b)
    except ValueError as e:
        raise ControlFlowError(f"{who}: {names[0]} and {names[1]} must have the same structure when the choice "
                               f"is made in the model's graph (as in TensorFlow's graph); {e}") from None
    for (path, x), (_, y) in zip(tree.flatten_with_path(a), tree.flatten_with_path(b), strict=True):
        if (x is None) != (y is None) or (x is not None and spec(x) != spec(y)):
            sx, sy = ("None" if v is None else "shape {} {}".format(*spec(v)) for v in (x, y))
            where = "".join(f"[{p!r}]" for p in path) or "the top level"
            raise ControlFlowError(
                f"{who}: {names[0]} and {names[1]} must give the same shapes and dtypes when the choice is made "
                f"in the model's graph (both are computed and one is selected, and TensorFlow's graph requires "
                f"it too); at {where} {names[0]} gives {sx} and {names[1]} gives {sy}. Cast or reshape one of "
                f"them.")


def warn_both_branches(who: str) -> None:
    """Log, once per process and function, that a symbolic choice computes every branch (module docstring)."""
    if who in _WARNED:
        return
    _WARNED.add(who)
    log.warning("%s with a predicate or index computed in the model: every branch is computed and the result "
                "selected with where (a model's graph has no branch op). Values are TensorFlow's, and so are the "
                "gradients unless a branch produces inf or NaN in its own backward pass where it is not taken "
                "(sqrt, log or a division at 0), which reaches the shared inputs as NaN where TensorFlow gives no "
                "gradient. Keep every branch finite on every input (e.g. sqrt(x + 1e-12)) or choose on the host "
                "(a Python bool).", who)


_WARNED: set = set()


def select(pred, a, b):
    """`a` where the scalar `pred` holds, else `b`, leaf by leaf (structures already checked)."""
    def pick(x, y):
        if x is None:
            return None
        return F.where(pred, x, y)
    return tree.map_structure(pick, a, b)


# --- branches ---------------------------------------------------------------------------------------------
def cond(pred, true_fn, false_fn):
    """`true_fn()` if `pred` else `false_fn()`.

    Args:
        pred: a boolean scalar. On the host (a Python or NumPy bool, an eager tensor) only the branch taken
            runs, in a model's graph too. A symbolic `pred` computes both and selects with `where`; their
            outputs must then have the same structure, shapes and dtypes.
        true_fn, false_fn: callables of no arguments.

    Example:
        >>> ops.cond(x.shape[-1] > 3, lambda: ops.relu(x), lambda: x)
    """
    if not is_symbolic(pred):
        return true_fn() if _truth(pred, "ops.cond", "pred") else false_fn()
    pred = _as_pred(pred, "ops.cond", "pred")
    t = tree.map_structure(to_tensor, true_fn())
    f = tree.map_structure(to_tensor, false_fn())
    check_same(t, f, "ops.cond", ("true_fn", "false_fn"))
    warn_both_branches("keras.ops.cond")
    return select(pred, t, f)


def switch(index, branches, *operands):
    """`branches[index](*operands)`, `index` clamped to the branches (as Keras 3 clamps it).

    A symbolic `index` (a scalar) computes every branch and selects; they must give the same structure,
    shapes and dtypes.
    """
    branches = list(branches)
    if not branches:
        raise ArgumentError("ops.switch needs at least one branch, received an empty sequence of branches.")
    if not is_symbolic(index):
        v = index.value if isinstance(index, Variable) else index
        arr = np.asarray(v)
        if arr.size != 1:
            raise ArgumentError(f"ops.switch expects a scalar index, received shape {arr.shape}.")
        i = int(arr.reshape(()).astype(np.int64))  # a float index truncates, as TensorFlow's int32 conversion
        return branches[min(max(i, 0), len(branches) - 1)](*operands)
    shape, dtype = spec(index)
    if any(s != 1 for s in shape):
        raise ControlFlowError(f"ops.switch expects a scalar index, received a graph value of shape {shape}; for a "
                               f"per-sample choice use keras.ops.where or keras.ops.take.")
    index = F.reshape(index, ()) if shape else index
    if np.dtype(dtype).kind not in "iu":
        index = F.cast(index, "int32")
    outs = [tree.map_structure(to_tensor, fn(*operands)) for fn in branches]
    if len(outs) > 1:
        warn_both_branches("keras.ops.switch")
    result = outs[0]
    for k, out in enumerate(outs[1:], start=1):
        check_same(outs[0], out, "ops.switch", ("branches[0]", f"branches[{k}]"))
        result = select(F.greater_equal(index, k), out, result)  # index >= k: branch k or a later one
    return result


# --- loops ------------------------------------------------------------------------------------------------
def _step_result(out, is_tuple: bool) -> tuple:
    return tuple(out) if is_tuple else (out,)


def _check_structure(before, after, who: str) -> None:
    try:
        tree.assert_same_structure(list(before), list(after))
    except ValueError as e:
        raise ArgumentError(f"{who}: the body must return the structure of the loop variables; {e}") from None


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """Run `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` (a tuple or list of loop variables is
    passed positionally), at most `maximum_iterations` times.

    In a model's graph the loop unrolls: its condition must be known on the host at every iteration, or, for
    a symbolic condition, `maximum_iterations` bounds the steps (each kept while the condition holds).

    Returns:
        The final loop variables as tensors: a tuple for a tuple or list, else one value.
    """
    who = "ops.while_loop"
    is_tuple = isinstance(loop_vars, tuple | list)
    values = tuple(loop_vars) if is_tuple else (loop_vars,)
    limit = None if maximum_iterations is None else host_int(maximum_iterations, who, "maximum_iterations")
    count = 0
    while limit is None or count < limit:
        go = cond(*values)
        if is_symbolic(go):
            if limit is None:
                raise ControlFlowError(
                    f"{who}: cond returned {go!r}, a value of the model's graph, so the number of iterations is "
                    f"not known when the model is built (flexflow_keras unrolls loops then). Give "
                    f"maximum_iterations=N (at most {MAX_UNROLL}): N steps are unrolled, each kept while cond "
                    f"holds, as TensorFlow's loop would stop; or make cond depend on Python ints only.")
            values = _masked_loop(cond, body, values, go, limit - count, is_tuple)
            break
        if not _truth(go, who, "the value cond returns"):
            break
        if count >= MAX_UNROLL and any_symbolic(values):
            check_unroll(count + 1, who)
        new = _step_result(body(*values), is_tuple)
        _check_structure(values, new, who)
        values = new
        count += 1
    result = tuple(tree.map_structure(to_tensor, list(values)))
    return result if is_tuple else result[0]


def _masked_loop(cond, body, values, go, steps: int, is_tuple: bool) -> tuple:
    """`steps` unrolled iterations under a symbolic condition: an iteration's results are kept only while
    every condition so far held, which gives TensorFlow's loop's values and gradients."""
    who = "ops.while_loop"
    check_unroll(steps, who)
    active = _as_pred(go, who, "the value cond returns")
    values = tuple(tree.map_structure(to_tensor, list(values)))
    for k in range(steps):
        new = tuple(tree.map_structure(to_tensor, list(_step_result(body(*values), is_tuple))))
        check_same(values, new, who, ("loop_vars", "body's result"))
        values = select(active, new, values)
        if k + 1 < steps:
            go = cond(*values)
            go = _as_pred(go, who, "the value cond returns") if is_symbolic(go) else bool(_truth(go, who, "cond"))
            active = F.logical_and(active, go)
    return values


def fori_loop(lower, upper, body_fun, init_val):
    """`val = body_fun(i, val)` for i in range(lower, upper), starting from `init_val`.

    The bounds must be known on the host (Python ints or eager tensors); in a model's graph the loop unrolls
    (at most `MAX_UNROLL` iterations). `i` is a Python int when `lower` is one, else an int tensor.
    """
    who = "ops.fori_loop"
    lo, hi = host_int(lower, who, "lower"), host_int(upper, who, "upper")
    if any_symbolic(init_val):
        check_unroll(hi - lo, who)
    kind = None if type(lower) is int else dtype_of(lower)
    val = init_val
    for i in range(lo, hi):
        new = body_fun(i if kind is None else eager(np.asarray(i, kind)), val)
        _check_structure([val], [new], who)
        val = new
    return tree.map_structure(to_tensor, val)
