"""Keras 3's scans and maps in `keras.ops`: scan, map, vectorized_map, associative_scan (the branches and
loops, and the rules they share, are in ops/control_flow.py).

Eagerly each loops over axis 0 of its (nested) inputs on values, as Keras 3's TensorFlow backend does. In a
model's graph the loop unrolls over that axis, which must then have a static size (at most `MAX_UNROLL`):
a symbolic tensor's leading None is its batch, split across processors by data parallelism, and is never
unrolled (transpose a time axis to the front to scan over time steps; the stacked outputs are then a stack
before the batch, which ``ops.transpose`` / ``ops.moveaxis`` put back behind it, ops/numpy_api.py).
`associative_scan` is Keras' parallel prefix scan (TensorFlow's recursion: pairs combined, the odd elements
scanned, interleaved back), so it never unrolls element by element and sums round as TensorFlow's do.

Choices where the backends differ: `scan`'s per-step outputs may have any structure and shapes (JAX's rule;
TensorFlow requires them to match the carry's), and a step output of None gives None. `vectorized_map` runs as
`map`: in a graph over a static axis 0; over the batch it is a `ControlFlowError`, since calling the function
on the whole batch is right only for functions written per sample with batch-polymorphic ops, which cannot
be checked.
"""

from __future__ import annotations

import builtins

import numpy as np

from flexflow_keras import tree
from flexflow_keras.errors import ArgumentError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops.control_flow import (
    ControlFlowError,
    any_symbolic,
    check_unroll,
    host_int,
    is_symbolic,
    spec,
    to_tensor,
)
from flexflow_keras.ops.eager_tensor import eager

__all__ = ["scan", "map", "vectorized_map", "associative_scan"]

_slice = builtins.slice


def _check_callable(f, who: str, name: str = "f") -> None:
    if not callable(f):
        raise TypeError(f"{who} expects a callable for `{name}`, received {name}={f!r}.")


def _length(flat: list, who: str, what: str, hint: str = "") -> int:
    """The common size of axis 0 of the leaves `flat` (static; a symbolic leading None is the batch)."""
    sizes = []
    for v in flat:
        shape, _ = spec(v)
        if not shape:
            raise ArgumentError(f"{who}: every leaf of {what} needs an axis 0 to loop over, received a scalar "
                                f"({v!r}).")
        if shape[0] is None:
            raise ControlFlowError(
                f"{who}: axis 0 of {what} is the batch dim of the symbolic tensor {shape}; it is split across "
                f"processors by data parallelism and cannot be unrolled into the model's graph. Loop over a "
                f"per-sample axis with a static size (transpose it to the front first), or call {who} eagerly "
                f"on arrays.{hint}")
        sizes.append(shape[0])
    if len(set(sizes)) > 1:
        raise ArgumentError(f"{who}: the leaves of {what} must have the same size of axis 0, received sizes "
                            f"{sizes}.")
    return sizes[0]


def _row(x, i: int):
    """`x[i]` along axis 0 (a graph tensor whose batch was transposed behind axis 0: taken batch-first)."""
    shape, _ = spec(x)
    if is_symbolic(x) and None in shape[1:]:
        k = shape.index(None)
        front = F.transpose(x, [k] + [d for d in range(len(shape)) if d != k])
        row = N.get_item(front, (_slice(None), i))
        if k == 1:
            return row
        perm = list(range(1, k)) + [0] + list(range(k, len(shape) - 1))
        return F.transpose(row, perm)
    row = N.get_item(x, i)
    return row if is_symbolic(row) else eager(row)


def _rows(xs, flat: list, i: int):
    return tree.pack_sequence_as(xs, [_row(v, i) for v in flat])


def _stack(parts: list, who: str):
    """The per-step outputs stacked on a new axis 0, leaf by leaf."""
    first = parts[0]
    for k, p in enumerate(parts[1:], start=1):
        try:
            tree.assert_same_structure(first, p)
        except ValueError as e:
            raise ArgumentError(f"{who}: f must return the same structure at every step; step {k} differs from "
                                f"step 0: {e}") from None

    def stack(*leaves):
        if leaves[0] is None:
            return None
        stacked = N.stack([to_tensor(v) for v in leaves], axis=0)  # batch-first parts: a BatchSecondStack
        return eager(stacked) if isinstance(stacked, np.ndarray) else stacked
    return tree.map_structure(stack, *parts)


def _empty(f, probe, who: str):
    """Outputs of a loop over zero steps: f's output for a probe step, with an empty axis 0."""
    out = f(*probe)
    return tree.map_structure(lambda v: None if v is None else to_tensor(N.get_item(N.stack([to_tensor(v)]),
                                                                                    _slice(0, 0))), out)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop ``carry, y = f(carry, x)`` over axis 0 of `xs` (or `length` steps of x=None), stacking the ys.

    Args:
        f: callable ``(carry, x) -> (carry, y)``; the carry keeps `init`'s structure.
        init: the initial carry (a nested structure). xs: a nested structure of tensors, or None.
        length: the number of steps (defaults to the size of axis 0 of xs).
        reverse: run from the last step to the first (ys stay in step order).
        unroll: a positive int or a bool, checked as Keras checks it; a model's graph unrolls every step.

    Returns:
        (final carry, stacked ys).
    """
    who = "ops.scan"
    _check_callable(f, who)
    if isinstance(unroll, bool) is False and (not isinstance(unroll, int) or unroll < 1):
        raise ArgumentError(f"{who}: `unroll` must be a positive integer or a boolean, received unroll={unroll!r}.")
    if xs is None and length is None:
        raise ArgumentError(f"{who}: got no `xs` to scan over and no `length`; give one of them.")
    flat = [] if xs is None else [to_tensor(v) for v in tree.flatten(xs)]
    n = _length(flat, who, "xs") if flat else None
    if length is not None:
        length = host_int(length, who, "length")
        if n is not None and n != length:
            raise ArgumentError(f"{who}: length={length} does not match the size {n} of axis 0 of xs.")
        n = length
    carry = tree.map_structure(to_tensor, init)
    if any_symbolic((carry, flat)):
        check_unroll(n, who)
    ys = [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        new_carry, ys[i] = f(carry, None if xs is None else _rows(xs, flat, i))
        try:
            tree.assert_same_structure(carry, new_carry)
        except ValueError as e:
            raise ArgumentError(f"{who}: f must return a carry with init's structure; {e}") from None
        carry = tree.map_structure(to_tensor, new_carry)
    if n == 0:
        probe_x = None if xs is None else tree.pack_sequence_as(xs, [N.zeros(spec(v)[0][1:], spec(v)[1])
                                                                     for v in flat])
        return carry, _empty(lambda c, x: f(c, x)[1], (carry, probe_x), who)
    return carry, _stack(ys, who)


def _map(f, xs, who: str, hint: str = ""):
    _check_callable(f, who)
    flat = [to_tensor(v) for v in tree.flatten(xs)]
    if not flat:
        raise ArgumentError(f"{who}: xs holds no tensors to map over.")
    n = _length(flat, who, "xs", hint)
    if any_symbolic(flat):
        check_unroll(n, who)
    if n == 0:
        return _empty(f, (tree.pack_sequence_as(xs, [N.zeros(spec(v)[0][1:], spec(v)[1]) for v in flat]),), who)
    return _stack([f(_rows(xs, flat, i)) for i in range(n)], who)


def map(f, xs):  # noqa: A001 - Keras' name
    """``stack([f(x) for x in xs])`` over axis 0 of `xs` (a nested structure: f gets its slices, and may
    return a nested structure; each leaf is stacked).

    In a model's graph axis 0 must have a static size (not the batch); the loop is unrolled.
    """
    return _map(f, xs, "ops.map")


def vectorized_map(function, elements):
    """`function` applied to each slice of `elements` along axis 0, stacked (as `map`; a list or tuple of
    tensors gives the function a list or tuple of slices).

    In a model's graph axis 0 must have a static size; over the batch axis this refuses, since calling the
    function on the whole batch is right only for a function written with batch-polymorphic ops (then call
    it on the batch directly).
    """
    hint = (" If the function works on a whole batch at once (element-wise and per-sample ops only), call it "
            "on the batch directly instead of through vectorized_map.")
    return _map(function, elements, "ops.vectorized_map", hint)


# --- associative scan (TensorFlow's recursion, so sums round as TensorFlow's do) ----------------------------
def associative_scan(f, elems, reverse=False, axis=0):
    """Inclusive scan of `elems` along `axis` with the associative ``f(a, b)`` (applied to whole slices of
    the axis at once; nested structures as in Keras).

    Returns:
        The structure of `elems`; element k along `axis` combines elements 0..k (k..end with `reverse`).
    """
    who = "ops.associative_scan"
    _check_callable(f, who)
    flat = [to_tensor(v) for v in tree.flatten(elems)]
    if not flat:
        raise ArgumentError(f"{who}: elems holds no tensors to scan.")
    nd = len(spec(flat[0])[0])
    if not -nd <= int(axis) < nd:
        raise ArgumentError(f"{who}: axis={axis} is out of range for elems of rank {nd}.")
    ax = int(axis) % nd
    sizes = []
    for v in flat:
        shape = spec(v)[0]
        if len(shape) <= ax or shape[ax] is None:
            what = "its batch dim" if is_symbolic(v) and len(shape) > ax and ax == 0 else "not a static size"
            raise ControlFlowError(f"{who}: axis {axis} of the tensor {shape} is {what}; the scan needs a static "
                                   f"per-sample axis (the batch is split across processors by data parallelism).")
        sizes.append(shape[ax])
    if len(set(sizes)) > 1:
        raise ArgumentError(f"{who}: the leaves of elems must have the same size along axis {axis}, received "
                            f"shapes {[spec(v)[0] for v in flat]}.")

    def sl(x, start=0, stop=None, step=1):
        return N.get_item(x, (_slice(None),) * ax + (_slice(start, stop, step),))

    def combine(a_flat, b_flat):
        out = f(tree.pack_sequence_as(elems, a_flat), tree.pack_sequence_as(elems, b_flat))
        return [to_tensor(v) for v in tree.flatten(out)]

    def interleave(a, b):  # [a0 a1 ...], [b0 b1 ...] -> [a0 b0 a1 b1 ...] (a may hold one more)
        na, nb = spec(a)[0][ax], spec(b)[0][ax]
        tail = [sl(a, na - 1, na)] if na == nb + 1 else []
        a = sl(a, 0, nb) if tail else a
        pair = F.concatenate([F.expand_dims(a, ax + 1), F.expand_dims(b, ax + 1)], axis=ax + 1)
        shape = list(spec(pair)[0])
        merged = shape[:ax] + [2 * nb] + shape[ax + 2:]
        out = F.reshape(pair, [-1 if s is None else s for s in merged])
        return F.concatenate([out] + tail, axis=ax) if tail else out

    def rec(level: list) -> list:
        n = spec(level[0])[0][ax]
        if n < 2:
            return level
        reduced = combine([sl(e, 0, -1, 2) for e in level], [sl(e, 1, None, 2) for e in level])
        if n == 2:
            return [F.concatenate([sl(e, 0, 1), r], axis=ax) for e, r in zip(level, reduced, strict=True)]
        if n == 3:
            again = combine(reduced, [sl(e, 2, 3) for e in level])
            return [F.concatenate([sl(e, 0, 1), r, rr], axis=ax)
                    for e, r, rr in zip(level, reduced, again, strict=True)]
        odd = rec(reduced)
        firsts = [sl(o, 0, -1) for o in odd] if n % 2 == 0 else odd
        results = combine(firsts, [sl(e, 2, None, 2) for e in level])
        even = [F.concatenate([sl(e, 0, 1), r], axis=ax) for e, r in zip(level, results, strict=True)]
        return [interleave(e, o) for e, o in zip(even, odd, strict=True)]

    if reverse:
        flat = [N.flip(v, ax) for v in flat]
    scans = rec(flat)
    if reverse:
        scans = [N.flip(v, ax) for v in scans]
    return tree.pack_sequence_as(elems, [to_tensor(v) for v in scans])
