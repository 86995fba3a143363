"""TensorFlow's branches, loops and scans under `python -m flexflow_keras` (tf_compat.py's `mapped_call`
looks here): `tf.cond`, `tf.case`, `tf.switch_case`, `tf.while_loop`, `tf.scan`, `tf.map_fn`,
`tf.vectorized_map`, `tf.foldl` and `tf.foldr`, each run by its keras.ops counterpart (ops/control_flow.py,
ops/control_scan.py) with TensorFlow's arguments adapted.

So they run as those do: eagerly on values (one branch called, a loop run in Python, recorded by our
GradientTape), and in a layer's call() on symbolic tensors by picking the branch or unrolling the loop when
the predicate or trip count is known on the host, by computing every branch and selecting when a scalar
predicate or index is symbolic, and by unrolling `maximum_iterations` masked steps for a symbolic loop
condition (a scan or map over the batch dim is a ControlFlowError: the batch is split across processors).

TensorFlow's conventions kept here:
- `tf.cond` eagerly returns the branch's result as it is (a Python number stays one, as TensorFlow 2).
- `tf.case` takes the first true predicate; without `default` the last pair is the default, which asserts
  that some predicate held (InvalidArgumentError eagerly), and `exclusive=True` checks the others eagerly.
- `tf.switch_case` wants an integer tensor index (a Python int is TensorFlow's TypeError); an index out of
  range takes `default`, else the last branch (Keras' switch clamps a negative index to 0 instead).
- `tf.while_loop` passes the loop variables positionally. In a model's graph it returns the structure of
  `loop_vars` (TensorFlow's graph loop); eagerly the list or tuple the body last returned (TensorFlow's eager
  loop: a list of loop variables whose body returns a tuple gives a tuple), `loop_vars`' own when the body
  never ran. With one loop variable the body may return it bare, as TensorFlow's graph loop takes.
- `tf.scan(fn, elems, initializer)`: ``fn(acc, x)`` returns the new accumulator, and the accumulators are
  stacked; without an initializer the first element (the last with `reverse`) starts it and is the first
  output. The accumulator keeps its dtype (TensorFlow's InvalidArgumentError otherwise).
- `tf.map_fn`'s output must have `fn_output_signature`'s structure and dtypes (by default those of
  `elems`), as TensorFlow's TensorArrays require.
- `back_prop` is ignored, as TensorFlow 2's eager loops ignore it (tf.stop_gradient stops gradients).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import tree
from flexflow_keras.ops.control_flow import is_symbolic, spec, to_tensor
from flexflow_keras.tf_convert import invalid
from flexflow_keras.tf_convert import ops as _ops


def _callable(value, what: str) -> None:
    if not callable(value):
        raise TypeError(f"'{what}' must be callable.")




def _host_bool(value) -> bool:
    return bool(np.asarray(value.value if hasattr(value, "assign") else value).reshape(()))


# --- branches ---------------------------------------------------------------------------------------------
def cond(pred, true_fn=None, false_fn=None, name=None):
    """`tf.cond(pred, true_fn, false_fn)`: `true_fn()` if `pred` else `false_fn()` (keras.ops.cond)."""
    for what, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is None:
            raise TypeError(f"cond(): '{what}' argument required")
        _callable(fn, what)
    return _ops().cond(pred, true_fn, false_fn)


def _pairs(pred_fn_pairs, exclusive: bool) -> list:
    if isinstance(pred_fn_pairs, dict):
        if not exclusive:
            raise ValueError("Unordered dictionaries are not supported for the 'pred_fn_pairs' argument when "
                             "`exclusive=False` and eager mode is enabled.")
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, list | tuple):
        raise TypeError(f"'pred_fn_pairs' must be a list, tuple, or dict. Received: {type(pred_fn_pairs)}")
    pairs = list(pred_fn_pairs)
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {pair}.")
        pred, fn = pair
        if isinstance(pred, bool | np.bool_) or not hasattr(pred, "dtype"):
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if str(pred.dtype) != "bool":
            raise TypeError(f"pred must be Tensor of type bool, received dtype {pred.dtype}.")
        _callable(fn, "fn")
    if not pairs:
        raise ValueError("tf.case needs at least one (predicate, fn) pair, received none.")
    return pairs


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """`tf.case(pred_fn_pairs, default=None, exclusive=False)`: the fn of the first true predicate."""
    pairs = _pairs(pred_fn_pairs, exclusive)
    if default is None:  # TensorFlow: the last pair is the default, asserting that some predicate held
        preds = [p for p, _ in pairs]
        last = pairs[-1][1]
        pairs = pairs[:-1]

        def default():
            if not any(is_symbolic(p) for p in preds) and not any(_host_bool(p) for p in preds):
                invalid("Input error: None of conditions evaluated as True: "
                        f"{[_host_bool(p) for p in preds]}. tf.case without a default needs a true predicate.")
            return last()
    else:
        _callable(default, "default")
    if exclusive and not any(is_symbolic(p) for p, _ in pairs):
        if sum(_host_bool(p) for p, _ in pairs) > 1:
            invalid(f"Input error: exclusive=True: more than 1 conditions evaluated as True: "
                    f"{[_host_bool(p) for p, _ in pairs]}")
    fn = default
    for pred, action in reversed(pairs):  # cond(p0, f0, cond(p1, f1, ... default))
        fn = (lambda p, a, rest: lambda: _ops().cond(p, a, rest))(pred, action, fn)
    return fn()


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """`tf.switch_case(branch_index, branch_fns, default=None)`: `branch_fns[branch_index]()` (keras.ops.switch);
    an index out of range runs `default`, or the last branch when there is none."""
    from flexflow_keras.ops.eager_tensor import EagerTensor
    from flexflow_keras.ops.graph import KerasTensor, Variable

    if not isinstance(branch_index, EagerTensor | KerasTensor | Variable):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    if np.dtype(branch_index.dtype).kind not in "iu":
        raise TypeError(f"'branch_index' must be an integer Tensor, got {branch_index.dtype}")
    if isinstance(branch_fns, dict):
        keys = sorted(branch_fns)
        if keys != list(range(len(keys))):
            raise ValueError(f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) but found "
                             f"{{{','.join(str(k) for k in keys)}}}")
        branch_fns = [branch_fns[k] for k in keys]
    fns = list(branch_fns)
    if not fns:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"Each entry in 'branch_fns' must be a 2-tuple. Received {fn}.")
    if default is not None:
        _callable(default, "default")
        fns.append(default)
    if not is_symbolic(branch_index):
        i = int(np.asarray(branch_index.value if hasattr(branch_index, "assign") else branch_index).reshape(()))
        return fns[i if 0 <= i < len(fns) - (default is not None) else len(fns) - 1]()
    ops = _ops()
    index = ops.cast(branch_index, "int32")
    inside = ops.logical_and(ops.greater_equal(index, 0), ops.less(index, len(fns) - (default is not None)))
    index = ops.where(inside, index, len(fns) - 1)
    return ops.switch(index, [lambda fn=fn: fn() for fn in fns])


# --- loops ------------------------------------------------------------------------------------------------
def _like(container, items):
    """`items` in the container type of `container` (a list, tuple or namedtuple)."""
    if isinstance(container, list):
        return list(items)
    return type(container)(*items) if hasattr(container, "_fields") else tuple(items)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """`tf.while_loop(cond, body, loop_vars, maximum_iterations=None)`: ``loop_vars = body(*loop_vars)`` while
    ``cond(*loop_vars)`` (keras.ops.while_loop); the result has the structure of `loop_vars`."""
    _callable(cond, "cond")
    _callable(body, "body")
    if not isinstance(loop_vars, list | tuple) or not loop_vars:
        raise ValueError(f"'loop_vars' must be provided: a non-empty list or tuple of loop variables, which "
                         f"tf.while_loop passes to cond and body positionally; received {loop_vars!r}. Wrap a "
                         f"single variable: tf.while_loop(cond, body, [x]).")
    single = len(loop_vars) == 1
    container = [loop_vars]

    def step(*values):
        out = body(*values)
        if single and not isinstance(out, list | tuple):
            return (out,)
        container[0] = out
        return tuple(out)

    out = _ops().while_loop(cond, step, tuple(loop_vars), maximum_iterations=maximum_iterations)
    # TensorFlow's graph loop gives loop_vars' container; its eager loop the one the body last returned
    eager = not any(is_symbolic(v) for v in tree.flatten(list(out)))
    return _like(container[0] if eager else loop_vars, out)


# --- scans and maps ---------------------------------------------------------------------------------------
def _elems(elems, who: str) -> list:
    """The leaves of `elems` as tensors, each of rank 1 or more and with one size of axis 0."""
    flat = [to_tensor(v) for v in tree.flatten(elems)]
    if not flat:
        raise ValueError(f"{who}: elems holds no tensors to loop over.")
    sizes = []
    for v in flat:
        shape = spec(v)[0]
        if not shape:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
        sizes.append(shape[0])
    for s in sizes[1:]:
        if None not in (s, sizes[0]) and s != sizes[0]:
            raise ValueError(f"Dimensions {sizes[0]} and {s} are not compatible")
    return flat


def _fold(who: str, fn, elems, initializer, reverse: bool, stacked: bool):
    """The accumulators of ``acc = fn(acc, x)`` over axis 0 of `elems`: stacked (scan), or the last (folds)."""
    _callable(fn, "fn")
    flat = _elems(elems, who)
    elems = tree.pack_sequence_as(elems, flat)
    first = [initializer is None]
    if first[0] and spec(flat[0])[0][0] == 0:
        invalid(f"{who}: Tried to read from index 0 but array size is: 0. With no initializer the first element "
                f"starts the accumulator; give an initializer to loop over no elements.")
    carry = elems if first[0] else tree.map_structure(to_tensor, initializer)
    dtypes = [spec(v)[1] for v in (flat if first[0] else tree.flatten(carry))]

    raw = [not stacked and initializer is not None]  # a fold's initializer reaches fn unconverted, as in TF

    def step(acc, x):
        if first[0]:  # TensorFlow: elems[0] (elems[-1] with reverse) is the first accumulator and output
            first[0] = False
            return x, (x if stacked else None)
        if raw[0]:
            raw[0], acc = False, initializer
        new = fn(acc, x)
        try:
            tree.assert_same_structure(acc, new)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{who}: fn must return an accumulator with the initializer's structure. {e}") from None
        new = tree.map_structure(to_tensor, new)
        if stacked:
            for want, got in zip(dtypes, (spec(v)[1] for v in tree.flatten(new)), strict=True):
                if want != got:
                    invalid(f"{who}: TensorArray dtype is {want} but Op is trying to write dtype {got}: fn must "
                            f"keep the accumulator's dtype. Cast fn's result, or give an initializer of dtype "
                            f"{got}.")
        return new, (new if stacked else None)

    last, ys = _ops().scan(step, carry, elems, reverse=reverse)
    return ys if stacked else last


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """`tf.scan(fn, elems, initializer=None, reverse=False)`: the accumulators of ``acc = fn(acc, x)`` over
    axis 0 of `elems`, stacked (keras.ops.scan)."""
    return _fold("tf.scan", fn, elems, initializer, bool(reverse), True)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """`tf.foldl(fn, elems, initializer=None)`: the last accumulator of ``acc = fn(acc, x)`` from the front."""
    return _fold("tf.foldl", fn, elems, initializer, False, False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """`tf.foldr(fn, elems, initializer=None)`: the last accumulator of ``acc = fn(acc, x)`` from the back."""
    return _fold("tf.foldr", fn, elems, initializer, True, False)


def _dtype_name(leaf) -> str:
    return str(getattr(getattr(leaf, "dtype", leaf), "name", getattr(leaf, "dtype", leaf)))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """`tf.map_fn(fn, elems, fn_output_signature=None)`: ``stack([fn(x) for x in elems])`` over axis 0
    (keras.ops.map); fn's output must have the signature's structure and dtypes (by default elems')."""
    _callable(fn, "fn")
    flat = _elems(elems, "tf.map_fn")
    elems = tree.pack_sequence_as(elems, flat)
    signature = fn_output_signature if fn_output_signature is not None else dtype
    if signature is None:
        signature = tree.pack_sequence_as(elems, [spec(v)[1] for v in flat])
    ops = _ops()

    def row(x):
        out = fn(x)
        try:
            tree.assert_same_structure(signature, out)
        except (ValueError, TypeError) as e:
            raise ValueError(f"tf.map_fn: fn's output must have the structure of fn_output_signature (by default "
                             f"that of elems); give fn_output_signature for another one. {e}") from None

        def check(want, got):
            want = _dtype_name(want)
            if not hasattr(got, "dtype") or isinstance(got, np.generic):  # a Python value: converted
                return ops.convert_to_tensor(np.asarray(got, want))
            if spec(got)[1] != want:
                invalid(f"tf.map_fn: TensorArray dtype is {want} but Op is trying to write dtype {spec(got)[1]}; "
                        f"give fn_output_signature={spec(got)[1]!r} or cast fn's output.")
            return got
        return tree.map_structure(check, signature, out)

    return ops.map(row, elems)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """`tf.vectorized_map(fn, elems)`: `fn` on each slice along axis 0 of `elems`, stacked
    (keras.ops.vectorized_map)."""
    _callable(fn, "fn")
    flat = _elems(elems, "tf.vectorized_map")
    return _ops().vectorized_map(fn, tree.pack_sequence_as(elems, flat))


CALLS = {f"tf.{fn.__name__}": fn for fn in (cond, case, switch_case, while_loop, scan, foldl, foldr, map_fn,
                                             vectorized_map)}
