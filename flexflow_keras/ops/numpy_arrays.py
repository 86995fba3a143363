"""Keras 3's array-manipulation functions in `keras.ops`: moving, rolling and rotating axes, stacking and
unstacking, diagonals, running products and differences, selection and creation (moveaxis, roll, unstack,
hstack/vstack/dstack, ravel, diagonal, trace, flipud/fliplr/rot90, tri, cumprod, diff, append, select, copy,
array, empty, empty_like).

Every function composes graph ops (transpose, slices, concatenation, gather, multiply), so it runs eagerly,
records symbolically, trains and is seen by a GradientTape. A symbolic tensor's batch dim (its leading None)
can be neither split, reversed, rolled nor merged with other dims: a function asked to do so raises a
`ShapeError` that names the axis; the eager form (NumPy arrays) has no such limit.
"""

from __future__ import annotations

import builtins

import numpy as np

from flexflow_keras.errors import ArgumentError, ShapeError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops.dtype_rules import as_dtype, dtype_of, operands, python_dtype, result_type
from kernels.reduce import normalize_axes

__all__ = ["moveaxis", "roll", "unstack", "hstack", "vstack", "dstack", "ravel", "diagonal", "trace", "flipud",
           "fliplr", "rot90", "tri", "cumprod", "diff", "append", "select", "copy", "array", "empty",
           "empty_like"]

_slice = builtins.slice


def _tensor(x):
    """x as a tensor of its Keras dtype (lists of Python ints: int32)."""
    return as_dtype(x, dtype_of(x), F._symbolic(x))


def _axes(who: str, axis, nd: int) -> tuple[int, ...]:
    try:
        return normalize_axes(axis, nd)
    except ValueError as e:
        raise ShapeError(f"ops.{who}: {e}") from None


def _check_not_batch(who: str, x, axes, what: str) -> None:
    """Refuse `what` along a symbolic tensor's batch dim (axis 0)."""
    if F._symbolic(x) and 0 in axes:
        raise ShapeError(f"ops.{who} {what} axis 0, the batch dim of the symbolic tensor {tuple(x.shape)}; use a "
                         f"per-sample axis (1 or more), or call it eagerly on arrays.")


def _key(nd: int, axis: int, index) -> tuple:
    return tuple(index if d == axis else _slice(None) for d in range(nd))


# --- moving and rolling axes ---------------------------------------------------------------------------------
def moveaxis(x, source, destination):
    """Move the axes `source` to the positions `destination` (the others keep their order)."""
    stacked = isinstance(x, N.BatchSecondStack)  # moveaxis(s, 0, 1): the transpose that puts the batch first
    if not stacked:
        x = _tensor(x)
    nd = len(x.shape) if stacked else F._ndim(x)
    src = tuple(_axes("moveaxis", int(s), nd)[0] for s in np.atleast_1d(source))
    dst = tuple(_axes("moveaxis", int(d), nd)[0] for d in np.atleast_1d(destination))
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ArgumentError(f"ops.moveaxis needs as many distinct destination as source axes, received "
                         f"source={source!r} and destination={destination!r}.")
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    if stacked:
        return x.transposed(order)
    return x if order == list(range(nd)) else F.transpose(x, order)


def roll(x, shift, axis=None):
    """Shift elements along `axis` (ints or tuples), wrapping around; axis None rolls the flattened x."""
    x = _tensor(x)
    if axis is None:
        if F._symbolic(x):
            raise ShapeError("ops.roll(axis=None) of a symbolic tensor flattens its batch dim into the data; give "
                             "the per-sample axis (or axes) to roll.")
        shape = N.shape(x)
        return N.reshape(roll(N.reshape(x, (-1,)), shift, 0), shape)
    nd = F._ndim(x)
    axes = [_axes("roll", int(a), nd)[0] for a in np.atleast_1d(axis)]
    shifts = [int(s) for s in np.broadcast_to(np.atleast_1d(shift), (len(axes),))]
    _check_not_batch("roll", x, axes, "cannot roll along")
    for a, s in zip(axes, shifts, strict=True):
        n = N.shape(x)[a]
        s %= n
        if s:
            x = F.concatenate([N.get_item(x, _key(nd, a, _slice(n - s, None))),
                               N.get_item(x, _key(nd, a, _slice(0, n - s)))], axis=a)
    return x


def unstack(x, num=None, axis=0):
    """The slices of x along `axis`, as a list."""
    if isinstance(x, N.BatchSecondStack):  # the parts of stack(xs, axis=0) of batch-first tensors
        parts = x.unstacked(axis)
        if num is not None and int(num) != len(parts):
            raise ArgumentError(f"ops.unstack: num={num} does not match the {len(parts)} stacked tensors.")
        return parts
    x = _tensor(x)
    nd = F._ndim(x)
    a = _axes("unstack", axis, nd)[0]
    _check_not_batch("unstack", x, (a,), "cannot split along")
    n = N.shape(x)[a]
    if num is not None and int(num) != n:
        raise ArgumentError(f"ops.unstack: num={num} does not match the size {n} of axis {axis} of shape "
                         f"{tuple(N.shape(x))}.")
    return [N.get_item(x, _key(nd, a, i)) for i in range(n)]


# --- stacking --------------------------------------------------------------------------------------------------
def _common(who: str, xs) -> list:
    xs = list(xs)
    if not xs:
        raise ArgumentError(f"ops.{who} needs at least one tensor, received an empty sequence.")
    _, _, ts = operands(*xs)
    return list(ts)


def _at_least(x, nd: int, where: str):
    """x reshaped to at least `nd` dims, NumPy's atleast_2d/3d placement ("front" or "3d")."""
    shape = tuple(N.shape(x))
    if len(shape) >= nd:
        return x
    if F._symbolic(x):
        raise ShapeError(f"ops.{where}: a symbolic tensor of shape {tuple(x.shape)} would gain dims before its "
                         f"batch dim; give it rank {nd} or more.")
    if nd == 3:
        target = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    else:
        target = (1,) * (nd - len(shape)) + shape
    return N.reshape(x, target)


def hstack(xs):
    """Join along axis 1 (axis 0 for 1-D tensors)."""
    ts = [_at_least(t, 1, "hstack") for t in _common("hstack", xs)]
    return F.concatenate(ts, axis=0 if all(F._ndim(t) == 1 for t in ts) else 1)


def vstack(xs):
    """Join along axis 0, 1-D tensors as rows."""
    return F.concatenate([_at_least(t, 2, "vstack") for t in _common("vstack", xs)], axis=0)


def dstack(xs):
    """Join along axis 2 (1-D tensors as (1, N, 1), 2-D ones as (M, N, 1))."""
    ts = _common("dstack", xs)
    ts = [F.expand_dims(t, -1) if F._symbolic(t) and F._ndim(t) == 2 else _at_least(t, 3, "dstack") for t in ts]
    return F.concatenate(ts, axis=2)


def append(x1, x2, axis=None):
    """x2 joined after x1 along `axis` (None: both flattened)."""
    _, _, (a, b) = operands(x1, x2)
    if axis is None:
        a, b = ravel(a), ravel(b)
        axis = 0
    return F.concatenate([a, b], axis=axis)


def ravel(x):
    """x flattened to 1-D (eager; a symbolic tensor's batch cannot merge with its other dims)."""
    x = _tensor(x)
    if F._symbolic(x) and F._ndim(x) > 1:
        raise ShapeError(f"ops.ravel of the symbolic tensor {tuple(x.shape)} would merge its batch dim with the "
                         f"others; use ops.reshape(x, (-1, n)) or keras.layers.Flatten() to flatten each sample.")
    return x if F._ndim(x) == 1 else N.reshape(x, (-1,))


# --- diagonals and rotations -----------------------------------------------------------------------------------
def diagonal(x, offset=0, axis1=0, axis2=1):
    """The `offset` diagonal of the planes (axis1, axis2), as the last axis of the result."""
    x = _tensor(x)
    nd = F._ndim(x)
    if nd < 2:
        raise ArgumentError(f"ops.diagonal needs at least 2 dims, received shape {tuple(N.shape(x))}.")
    a1, a2 = _axes("diagonal", axis1, nd)[0], _axes("diagonal", axis2, nd)[0]
    if a1 == a2:
        raise ArgumentError(f"ops.diagonal needs two different axes, received axis1={axis1}, axis2={axis2}.")
    _check_not_batch("diagonal", x, (a1, a2), "cannot take a diagonal over")
    y = moveaxis(x, (a1, a2), (-2, -1))
    shape = N.shape(y)
    n, m, k = shape[-2], shape[-1], int(offset)
    rows = np.arange(max(0, -k), max(0, min(n, m - k)))  # the diagonal's rows; its columns are rows + k
    flat = N.reshape(y, tuple(shape[:-2]) + (n * m,))
    return N.take(flat, (rows * m + rows + k).astype(np.int32), axis=F._ndim(flat) - 1)


def trace(x, offset=0, axis1=0, axis2=1):
    """The sum of the `offset` diagonal of the planes (axis1, axis2) (bools and small ints as int32)."""
    dtype = dtype_of(x)
    if dtype in ("bool", "int8", "int16"):
        dtype = "int32"
    elif dtype in ("uint8", "uint16"):
        dtype = "uint32"
    d = diagonal(as_dtype(x, dtype, F._symbolic(x)), offset, axis1, axis2)
    return F.sum(d, axis=F._ndim(d) - 1)


def flipud(x):
    """Reverse axis 0."""
    x = _tensor(x)
    _check_not_batch("flipud", x, (0,), "cannot reverse")
    return N.flip(x, 0)


def fliplr(x):
    """Reverse axis 1 (x needs at least 2 dims)."""
    x = _tensor(x)
    if F._ndim(x) < 2:
        raise ArgumentError(f"ops.fliplr needs at least 2 dims, received shape {tuple(N.shape(x))}.")
    return N.flip(x, 1)


def rot90(array, k=1, axes=(0, 1)):
    """Rotate by 90 degrees `k` times in the plane `axes`, from the first axis toward the second."""
    x = _tensor(array)
    nd = F._ndim(x)
    if nd < 2:
        raise ArgumentError(f"ops.rot90 needs at least 2 dims, received shape {tuple(N.shape(x))}.")
    if len(axes) != 2:
        raise ArgumentError(f"ops.rot90 needs two axes, received axes={axes!r}.")
    a0, a1 = _axes("rot90", axes[0], nd)[0], _axes("rot90", axes[1], nd)[0]
    if a0 == a1:
        raise ArgumentError(f"ops.rot90 needs two different axes, received axes={axes!r}.")
    _check_not_batch("rot90", x, (a0, a1), "cannot rotate over")
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return N.flip(N.flip(x, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = a1, a0
    return F.transpose(N.flip(x, a1), perm) if k == 1 else N.flip(F.transpose(x, perm), a1)


def tri(N, M=None, k=0, dtype=None):  # noqa: N803 - Keras' argument names
    """Ones at and below the k-th diagonal of an N x M matrix (float32 by default)."""
    return np.tri(int(N), None if M is None else int(M), int(k), dtype=dtype or "float32")


# --- running products and differences -------------------------------------------------------------------------
def cumprod(x, axis=None, dtype=None):
    """Cumulative product along `axis` (None: of the flattened x): a log2(n)-step scan of products, so
    its gradient is exact at zeros too."""
    t = _tensor(x)
    if dtype is not None or dtype_of(t) == "bool":
        t = F.cast(t, dtype or "int32")
    if axis is None:
        t, axis = ravel(t), 0
    nd = F._ndim(t)
    a = _axes("cumprod", axis, nd)[0]
    _check_not_batch("cumprod", t, (a,), "cannot scan along")
    n, step = N.shape(t)[a], 1
    while step < n:
        head = N.ones_like(N.get_item(t, _key(nd, a, _slice(0, step))))
        t = F.multiply(t, F.concatenate([head, N.get_item(t, _key(nd, a, _slice(0, n - step)))], axis=a))
        step *= 2
    return t


def diff(a, n=1, axis=-1):
    """The `n`-th discrete difference along `axis` (bools: whether neighbours differ)."""
    x = _tensor(a)
    if int(n) < 0:
        raise ArgumentError(f"ops.diff: the order n must be non-negative, received n={n}.")
    nd = F._ndim(x)
    if nd == 0:
        raise ArgumentError("ops.diff needs an input with at least one dim, received a scalar.")
    ax = _axes("diff", axis, nd)[0]
    _check_not_batch("diff", x, (ax,), "cannot difference along")
    for _ in range(int(n)):
        hi, lo = N.get_item(x, _key(nd, ax, _slice(1, None))), N.get_item(x, _key(nd, ax, _slice(None, -1)))
        x = F.not_equal(hi, lo) if dtype_of(x) == "bool" else F.subtract(hi, lo)
    return x


# --- selection and creation ---------------------------------------------------------------------------------------
def select(condlist, choicelist, default=0):
    """Per element, the choice of the first true condition (`default` where none is)."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist) or not condlist:
        raise ArgumentError(f"ops.select needs one choice per condition (at least one), received {len(condlist)} "
                         f"conditions and {len(choicelist)} choices.")
    sym = F._symbolic(*condlist, *choicelist, default)
    dtype = result_type(*choicelist, default)
    out = as_dtype(default, dtype, sym)
    for cond, choice in zip(reversed(condlist), reversed(choicelist), strict=True):
        out = F.where(F._tensor(cond, sym), as_dtype(choice, dtype, sym), out)
    return out


def copy(x):
    """A copy of x."""
    return F._identity(_tensor(x))


def array(x, dtype=None):
    """x as a tensor (Python floats: float32, ints: int32 or int64 beyond int32's range, as Keras)."""
    return N.convert_to_tensor(x, dtype or python_dtype(x) or dtype_of(x))


def empty(shape, dtype=None):
    """A tensor of `shape` (zeros, as Keras' TensorFlow backend gives; float32 by default)."""
    return N.zeros(shape, dtype or "float32")


def empty_like(x, dtype=None):
    """A tensor of x's shape and dtype (zeros)."""
    return N.zeros_like(x, dtype)
