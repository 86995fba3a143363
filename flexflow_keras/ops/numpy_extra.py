"""The rest of the `keras.ops` functions modern scripts use: reductions and statistics (sum of a list,
prod, var, std, logsumexp, norm, cumsum), sorting, masks (triu/tril), padding, predicates (isnan, any,
all), integer division, moments and grids; composed from graph ops (so symbolic calls train) or, where a
graph has no use for them, eager only with a message saying so."""

from __future__ import annotations

import functools

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import batch_second as _batch_second
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.array_ops import CumsumOp, ProdOp
from flexflow_keras.ops.base import apply_op
from kernels.reduce import normalize_axes

__all__ = ["sum", "prod", "var", "std", "logsumexp", "norm", "normalize", "cumsum", "any", "all", "amax", "amin", "ndim", "size", "moments", "triu", "tril", "linspace", "meshgrid", "diag",
           "sort", "argsort", "isnan", "isfinite", "floor_divide", "mod", "count_nonzero", "average", "pad",
           "outer", "nonzero", "log2", "log10"]


_sym = F._symbolic
_t = F._tensor


def _eager_only(who: str, *values) -> None:
    if F._symbolic(*values):
        raise ShapeError(f"ops.{who} is eager only (NumPy arrays); compute it on the data before fit().")


# --- reductions and statistics ---------------------------------------------------------------------------------
def sum(x, axis=None, keepdims=False, name=None):  # noqa: A001
    """Sum over `axis`; a list of tensors is summed element-wise first (``ops.sum(self.losses)``)."""
    if isinstance(x, list | tuple) and _sym(*x):
        return F.sum(functools.reduce(F.add, x), axis, keepdims, name)
    return F.sum(x, axis, keepdims, name)


def prod(x, axis=None, keepdims=False, dtype=None):
    """Product over `axis`."""
    if _batch_second.is_stack(x):  # ops.stack(xs, axis=0) of batch-first tensors
        return _batch_second.along(x, lambda t, a: prod(t, a, keepdims, dtype), axis, keepdims)
    axes = normalize_axes(axis, F._ndim(x))
    return apply_op(ProdOp(axes, bool(keepdims)), [_t(x, _sym(x))])


def var(x, axis=None, keepdims=False):
    """Population variance over `axis`."""
    centred = F.subtract(x, F.mean(x, axis, keepdims=True))
    return F.mean(F.square(centred), axis, keepdims)


def std(x, axis=None, keepdims=False):
    """Population standard deviation over `axis`."""
    return F.sqrt(var(x, axis, keepdims))


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x), axis))`` computed stably."""
    if _batch_second.is_stack(x):
        return _batch_second.along(x, lambda t, a: logsumexp(t, a, keepdims), axis, keepdims)
    m = F.stop_gradient(F.max(x, axis, keepdims=True))
    r = F.add(F.log(F.sum(F.exp(F.subtract(x, m)), axis, keepdims=True)), m)
    if keepdims:
        return r
    nd = F._ndim(x)
    axes = normalize_axes(axis, nd)
    return F.squeeze(r, axes) if _sym(x) or _tape.recording() else np.squeeze(r, axes)


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - the Keras argument name
    """Vector norms (ord None/2: Euclidean, 1, inf, -inf, other p) over `axis`; with two axes, the
    Frobenius norm (ord None or "fro")."""
    axes = normalize_axes(axis, F._ndim(x))
    if ord in (None, 2, "fro", "euclidean") and (ord != 2 or len(axes) == 1 or axis is None):
        return F.sqrt(F.sum(F.square(x), axis, keepdims))
    if len(axes) != 1:
        raise ValueError(f"norm: ord={ord!r} over axes {axes} is not supported; use ord=None (Frobenius).")
    if ord == 1:
        return F.sum(F.abs(x), axis, keepdims)
    if ord in (np.inf, "inf"):
        return F.max(F.abs(x), axis, keepdims)
    if ord in (-np.inf, "-inf"):
        return F.min(F.abs(x), axis, keepdims)
    p = float(ord)
    return F.power(F.sum(F.power(F.abs(x), p), axis, keepdims), 1.0 / p)


def normalize(x, axis=-1, order=2, epsilon=None):
    """x divided by its `order`-norm along `axis`, the norm at least `epsilon` (default `backend.epsilon()`,
    1e-7, as Keras). Order 2 is Keras' ``x * min(rsqrt(sum(x**2)), 1/epsilon)``, so a zero row gives zeros
    and a finite gradient."""
    from flexflow_keras import backend

    if isinstance(order, bool) or not isinstance(order, int | np.integer) or order < 1:
        raise ValueError(f"ops.normalize expects an integer order >= 1, received order={order!r}.")
    eps = backend.epsilon() if epsilon is None else float(epsilon)
    if isinstance(x, list | tuple | float | int):
        x = np.atleast_1d(np.asarray(x, dtype=np.float32))
    if int(order) == 2:
        inv = F.minimum(F.rsqrt(F.sum(F.square(x), axis, True)), 1.0 / eps)
        return F.multiply(x, inv)
    return F.divide(x, F.maximum(norm(x, ord=int(order), axis=axis, keepdims=True), eps))


def cumsum(x, axis=None, dtype=None):
    """Cumulative sum along `axis` (None: the flattened x, eager only)."""
    if axis is None:
        if _sym(x):
            raise ShapeError("cumsum(axis=None) flattens the batch; give an axis (e.g. -1).")
        return np.cumsum(x, dtype=dtype)
    return apply_op(CumsumOp(int(axis)), [_t(x, _sym(x))])


def any(x, axis=None, keepdims=False):  # noqa: A001 - the Keras name
    """Whether any element over `axis` is non-zero (bool)."""
    return F.greater(F.max(F.cast(F.not_equal(x, 0), "float32"), axis, keepdims), 0.5)


def all(x, axis=None, keepdims=False):  # noqa: A001
    """Whether every element over `axis` is non-zero (bool)."""
    return F.greater(F.min(F.cast(F.not_equal(x, 0), "float32"), axis, keepdims), 0.5)


amax, amin = F.max, F.min


def ndim(x) -> int:
    """The number of dims."""
    return len(N.shape(x))


def size(x):
    """The number of elements, an int32 scalar tensor as Keras' (eager; a symbolic tensor's size depends on
    the batch)."""
    _eager_only("size", x)
    return np.int32(np.size(x))


def moments(x, axes, keepdims=False, synchronized=False):
    """(mean, variance) over `axes`."""
    return F.mean(x, axes, keepdims), var(x, axes, keepdims)


def _band(x, k: int, upper: bool):
    if not F._symbolic(x):
        if not _tape.recording():
            return np.triu(np.asarray(x), k) if upper else np.tril(np.asarray(x), k)
        ones = np.ones(np.shape(x), np.asarray(x).dtype)  # a recording tape: the band as a mask it sees
        return F.multiply(x, np.triu(ones, k) if upper else np.tril(ones, k))
    if x.ndim < 3:
        raise ShapeError(f"ops.{'triu' if upper else 'tril'} of a symbolic tensor {x.shape} masks its last two "
                         f"per-sample dims; it needs rank >= 3.")
    rows, cols = x.shape[-2], x.shape[-1]
    band = np.triu(np.ones((rows, cols), x.dtype), k) if upper else np.tril(np.ones((rows, cols), x.dtype), k)
    return F.multiply(x, F.constant(band))


def triu(x, k=0):
    """x with the elements below the k-th diagonal of its last two dims zeroed."""
    return _band(x, int(k), True)


def tril(x, k=0):
    """x with the elements above the k-th diagonal of its last two dims zeroed."""
    return _band(x, int(k), False)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``np.linspace`` (eager, float32 by default)."""
    out = np.linspace(start, stop, num, endpoint, retstep, dtype or "float32", axis)
    return out


def meshgrid(*xs, indexing="xy"):
    """``np.meshgrid`` (eager)."""
    _eager_only("meshgrid", *xs)
    return np.meshgrid(*[np.asarray(x) for x in xs], indexing=indexing)


def diag(x, k=0):
    """``np.diag`` (eager)."""
    _eager_only("diag", x)
    return np.diag(np.asarray(x), k)


def sort(x, axis=-1):
    """x sorted ascending along `axis` (symbolic: the last axis)."""
    if not F._symbolic(x) and not (_tape.recording() and axis in (-1, np.ndim(x) - 1)):
        return np.sort(np.asarray(x), axis=axis)
    if axis not in (-1, F._ndim(x) - 1):
        raise ShapeError(f"ops.sort of a symbolic tensor sorts its last axis, received axis={axis}.")
    return N.flip(N.top_k(x, np.shape(x)[-1])[0], -1)


def argsort(x, axis=-1):
    """Indices that sort x ascending along `axis` (symbolic: the last axis; ties keep the later index
    first, as top_k's descending order reversed)."""
    if not F._symbolic(x):
        return np.argsort(np.asarray(x), axis=axis, kind="stable").astype("int32")
    if axis not in (-1, x.ndim - 1):
        raise ShapeError(f"ops.argsort of a symbolic tensor sorts its last axis, received axis={axis}.")
    return N.flip(N.top_k(x, x.shape[-1])[1], -1)


def isnan(x):
    """Where x is NaN (bool): x != x."""
    return F.not_equal(x, x)


def isfinite(x):
    """Where x is neither NaN nor infinite (bool)."""
    return F.logical_and(F.equal(x, x), F.less(F.abs(x), np.inf))


def floor_divide(a, b):
    """``floor(a / b)``; integers give integers of their result dtype, as Keras (int64 ids // 50 is int64)."""
    from flexflow_keras.ops.dtype_rules import result_type

    q = F.floor(F.divide(a, b))
    dtype = result_type(a, b)
    return F.cast(q, dtype) if np.dtype(dtype).kind in "iu" else q


def mod(a, b):
    """``a - floor(a / b) * b`` (the sign of b, as NumPy); integers give integers, as floor_divide."""
    return F.subtract(a, F.multiply(floor_divide(a, b), b))


def count_nonzero(x, axis=None):
    """The number of non-zero elements over `axis` (int32)."""
    return F.cast(F.sum(F.cast(F.not_equal(x, 0), "float32"), axis), "int32")


def _is_text(a: np.ndarray) -> bool:
    if a.dtype.kind in "SU":
        return True
    if a.dtype.kind != "O" or a.size == 0:
        return False
    first = a.reshape(-1)[0]
    first = first.item() if isinstance(first, (np.ndarray, np.generic)) else first
    return isinstance(first, (str, bytes))


def _pad_strings(x: np.ndarray, pad_width, constant_values):
    """`x`'s text (bytes; a list of 0-d string tensors holds them as elements) padded with the string given,
    "" for none or a number (tf.pad's default 0), as a string tensor."""
    from flexflow_keras.data.dataset import as_tensor

    def text(v):
        v = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        return v.encode("utf-8") if isinstance(v, str) else bytes(v)

    fill = b"" if constant_values is None or isinstance(constant_values, (int, float)) else text(constant_values)
    padded = np.pad(x.astype(object), pad_width, mode="constant", constant_values=fill)
    out = np.empty(padded.size, dtype=object)
    out[:] = [text(v) for v in padded.ravel().tolist()]
    return as_tensor(out.reshape(padded.shape))


def average(x, axis=None, weights=None):
    """The mean over `axis`, weighted by `weights` (broadcast against x) when given."""
    if weights is None:
        return F.mean(x, axis)
    return F.divide(F.sum(F.multiply(x, weights), axis), F.sum(F.multiply(N.ones_like(x), weights), axis))


def pad(x, pad_width, mode="constant", constant_values=None):
    """Pad with a constant (default 0); a symbolic x may not be padded along its batch dim. Strings (an eager
    tf.string tensor, as ``tf.pad([text], [[0, n]], constant_values="<pad>")`` in a tf.data map) are padded
    with the given string, "" by default, as TensorFlow."""
    if mode == "constant" and not F._symbolic(x) and not _tape.recording() and _is_text(np.asarray(x)):
        return _pad_strings(np.asarray(x), pad_width, constant_values)
    value = 0.0 if constant_values is None else float(constant_values)
    if mode in ("reflect", "symmetric") and (F._symbolic(x) or _tape.recording()):
        return _mirror_pad(x, pad_width, mode == "symmetric")
    if mode != "constant":
        if F._symbolic(x):
            raise ValueError(f"ops.pad of a symbolic tensor supports mode='constant', 'reflect' and 'symmetric', "
                             f"received mode={mode!r}.")
        return np.pad(np.asarray(x), pad_width, mode=mode)
    if not F._symbolic(x) and not _tape.recording():
        return np.pad(np.asarray(x), pad_width, constant_values=value)
    nd = F._ndim(x)
    if np.ndim(pad_width) == 0 or np.shape(pad_width) in ((2,), (1, 2)):  # one width (pair) for every dim
        pad_width = [np.asarray(pad_width).reshape(-1).tolist()] * nd
    widths = [(int(w), int(w)) if np.ndim(w) == 0 or len(w) == 1 else (int(w[0]), int(w[1]))
              for w in (np.asarray(w).reshape(-1) if np.ndim(w) else w for w in pad_width)]
    if len(widths) != nd or (F._symbolic(x) and widths[0] != (0, 0)):
        raise ShapeError(f"ops.pad: a symbolic tensor {x.shape} needs one (before, after) pair per dim and none "
                         f"on the batch dim, received {pad_width}.")
    out = x
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            parts = []
            for n in (lo, hi):
                shape = list(N.shape(out))
                shape[axis] = n
                parts.append(N.full(tuple(shape), value, out.dtype) if n else None)
            out = F.concatenate([p for p in (parts[0], out, parts[1]) if p is not None], axis=axis)
    return out


def _mirror_pad(x, pad_width, symmetric: bool):
    """Reflect (edge not repeated) or symmetric (edge repeated) padding from slices and a concatenation,
    so a symbolic tensor (a CycleGAN's ReflectionPadding2D) and a recording tape can use it."""
    nd = F._ndim(x)
    widths = [(int(w), int(w)) if np.ndim(w) == 0 else (int(w[0]), int(w[1])) for w in pad_width]
    if len(widths) != nd or (F._symbolic(x) and widths[0] != (0, 0)):
        raise ShapeError(f"ops.pad: {nd} (before, after) pairs are needed (none on a symbolic batch dim), received "
                         f"{pad_width}.")
    out, shift = x, 0 if symmetric else 1
    for axis, (lo, hi) in enumerate(widths):
        if not lo and not hi:
            continue
        n = N.shape(out)[axis]
        if max(lo, hi) > n - shift:
            raise ShapeError(f"ops.pad: a {'symmetric' if symmetric else 'reflect'} padding of {max(lo, hi)} on an "
                             f"axis of {n} needs at most {n - shift}.")

        def part(start, stop, axis=axis, src=out):  # elements start, start - 1, ..., stop + 1 (stop < 0: the first)
            key = [slice(None)] * nd
            key[axis] = slice(start, stop if stop >= 0 else None, -1)
            return N.get_item(src, tuple(key))

        parts = [part(lo - 1 + shift, shift - 1)] if lo else []
        parts.append(out)
        if hi:
            parts.append(part(n - 1 - shift, n - 1 - shift - hi))
        out = F.concatenate(parts, axis=axis)
    return out


def outer(a, b):
    """The outer product of the flattened a and b (eager)."""
    _eager_only("outer", a, b)
    if _tape.recording():
        return F.multiply(F.reshape(a, (-1, 1)), F.reshape(b, (1, -1)))
    return np.outer(a, b)


def nonzero(x):
    """Indices of the non-zero elements (eager: their count is data dependent)."""
    _eager_only("nonzero", x)
    return np.nonzero(np.asarray(x))


def log2(x):
    """Base-2 logarithm."""
    return F.multiply(F.log(x), 1.0 / np.log(2.0))


def log10(x):
    """Base-10 logarithm."""
    return F.multiply(F.log(x), 1.0 / np.log(10.0))
