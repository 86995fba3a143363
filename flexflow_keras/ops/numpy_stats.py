"""Keras 3's products, order statistics and counting in `keras.ops`: tensordot, inner, vdot, kron, median,
quantile, percentile, ptp (composed from graph ops: einsum, multiply, a top_k sort, slices), and the
data-dependent searchsorted, bincount and unique, which are eager only (their output's size or values depend
on the data, which a graph cannot shape in advance; compute them on arrays before fit).

Quantiles sort with `top_k` (the last axis of a symbolic tensor, never its batch dim) and interpolate as
Keras' TensorFlow backend does ("linear": the gradient goes to the two neighbouring order statistics).
"""

from __future__ import annotations

import builtins
import math
import string

import numpy as np

from flexflow_keras.errors import ArgumentError, CrossBatchError, ShapeError
from flexflow_keras.ops import functional as F
from flexflow_keras.ops import numpy_api as N
from flexflow_keras.ops import numpy_extra as X
from flexflow_keras.ops.dtype_rules import as_dtype, dtype_of, operands, result_type
from flexflow_keras.ops.numpy_arrays import moveaxis, ravel
from kernels.reduce import normalize_axes

__all__ = ["tensordot", "inner", "vdot", "kron", "median", "quantile", "percentile", "ptp", "searchsorted",
           "bincount", "unique"]

_slice = builtins.slice
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _eager_only(who: str, *values) -> None:
    if F._symbolic(*values):
        raise ShapeError(f"ops.{who} is eager only: its result's size depends on the data, which a graph cannot "
                         f"shape in advance. Compute it on NumPy arrays (before fit or outside the model).")


# --- products --------------------------------------------------------------------------------------------------
def tensordot(x1, x2, axes=2):
    """Contract the last `axes` dims of x1 with the first of x2 (or the axes pair ``([..], [..])``)."""
    _, _, (a, b) = operands(x1, x2)
    na, nb = F._ndim(a), F._ndim(b)
    if isinstance(axes, int | np.integer):
        if not 0 <= axes <= min(na, nb):
            raise ArgumentError(f"ops.tensordot: axes={axes} is out of range for shapes {tuple(N.shape(a))} and "
                             f"{tuple(N.shape(b))}.")
        ca, cb = list(range(na - int(axes), na)), list(range(int(axes)))
    else:
        ca, cb = ([int(v)] if np.ndim(v) == 0 else [int(i) for i in v] for v in axes)
        ca, cb = [c % na for c in ca], [c % nb for c in cb]
        if len(ca) != len(cb):
            raise ArgumentError(f"ops.tensordot: axes={axes!r} pairs {len(ca)} axes of x1 with {len(cb)} of x2.")
    if na + nb - len(ca) > len(string.ascii_letters):
        raise ArgumentError("ops.tensordot: too many dims.")
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(ca, cb, strict=True):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ca] + [c for j, c in enumerate(sb) if j not in cb]
    try:
        return N.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)
    except CrossBatchError as e:
        if 0 not in ca and 0 not in cb:
            raise
        # keras.io's collaborative filtering: ops.tensordot(user_vector, movie_vector, 2) of two (batch, d)
        # tensors sums over the batch too, one number added to every sample's prediction
        raise CrossBatchError(
            f"ops.tensordot(x1, x2, axes={axes!r}) of shapes {tuple(a.shape)} and {tuple(b.shape)} contracts the "
            f"batch axis: its result mixes the batch's samples (one value for the whole batch), which a model's "
            f"graph does not compute, as it splits tensors by samples. For a per-sample dot product use "
            f"ops.sum(ops.multiply(x1, x2), axis=-1, keepdims=True); contract only non-batch axes, e.g. "
            f"axes=([1], [1]) on 3-D tensors. ({e})") from None


def inner(x1, x2):
    """The sum product over the last axes (a product when one is a scalar)."""
    _, _, (a, b) = operands(x1, x2)
    if F._ndim(a) == 0 or F._ndim(b) == 0:
        return F.multiply(a, b)
    return tensordot(a, b, ([-1], [-1]))


def vdot(x1, x2):
    """The dot product of the flattened x1 and x2 (a 0-d tensor)."""
    _, _, (a, b) = operands(x1, x2)
    if tuple(a.shape) != tuple(b.shape):
        a, b = ravel(a), ravel(b)
    return F.sum(F.multiply(a, b))


def kron(x1, x2):
    """The Kronecker product: every element of x1 times the whole of x2 (eager)."""
    if F._symbolic(x1, x2):
        raise ShapeError("ops.kron of symbolic tensors would merge the batch dim with the other operand's dims; "
                         "call it on arrays.")
    _, _, (a, b) = operands(x1, x2)
    sa, sb = tuple(N.shape(a)), tuple(N.shape(b))
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    ra = N.reshape(a, tuple(v for s in sa for v in (s, 1)))
    rb = N.reshape(b, tuple(v for s in sb for v in (1, s)))
    return N.reshape(F.multiply(ra, rb), tuple(p * q for p, q in zip(sa, sb, strict=True)))


# --- order statistics ------------------------------------------------------------------------------------------
def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th quantiles (q in [0, 1], a number or a 1-D list: then the q axis comes first) over `axis`.

    Args:
        method: "linear" (interpolate), "lower", "higher", "midpoint" or "nearest".
    """
    if method not in _METHODS:
        raise ArgumentError(f"ops.quantile: method must be one of {_METHODS}, received method={method!r}.")
    if F._symbolic(q):
        raise ShapeError("ops.quantile: q must be a number or an array of numbers, not a symbolic tensor.")
    qs = np.asarray(q, np.float64)
    if qs.ndim > 1 or np.any((qs < 0) | (qs > 1)):
        raise ArgumentError(f"ops.quantile: q must be a number or a 1-D list in [0, 1], received q={q!r}.")
    sym = F._symbolic(x)
    x = as_dtype(x, result_type(x, floating=True), sym)
    nd = F._ndim(x)
    axes = normalize_axes(axis, nd)
    if sym and (0 in axes or qs.ndim):
        raise ShapeError(f"ops.quantile of the symbolic tensor {tuple(x.shape)}: "
                         + ("sorting across the batch dim (axis 0) is not possible; give per-sample axes"
                            if 0 in axes else "a list of q would put its axis before the batch dim; call it once "
                            "per q"))
    shape = tuple(N.shape(x))
    kept = [d for d in range(nd) if d not in axes]
    y = moveaxis(x, axes, tuple(range(nd - len(axes), nd))) if axes else N.reshape(x, shape + (1,))
    n = math.prod(shape[d] for d in axes) if axes else 1
    y = N.reshape(y, tuple(N.shape(y)[:len(kept)]) + (n,))
    s = X.sort(y, -1)
    last = (_slice(None),) * len(kept)

    def at(i: int):
        return N.get_item(s, last + (int(min(max(i, 0), n - 1)),))

    outs = []
    for qv in np.atleast_1d(qs):
        exact = (n - 1) * qv
        if method == "lower":
            v = at(math.floor(exact))
        elif method == "higher":
            v = at(math.ceil(exact))
        elif method == "nearest":
            v = at(int(np.round(exact)))
        elif method == "midpoint":
            v = F.multiply(F.add(at(math.floor(exact)), at(math.ceil(exact))), 0.5)
        else:  # Keras' TensorFlow form: the weight of the lower neighbour is hi - exact
            hi = min(max(math.ceil(exact), 0), n - 1)
            lo = max(hi - 1, 0)
            hi = min(lo + 1, n - 1)
            frac = float(hi - exact)
            v = F.add(F.multiply(at(hi), 1.0 - frac), F.multiply(at(lo), frac))
        if dtype_of(x) in ("float16", "float32", "float64"):  # any NaN over the axes makes the result NaN
            v = F.where(X.any(X.isnan(x), axis=axes), np.asarray(np.nan, dtype_of(x)), v)
        if keepdims:
            v = N.reshape(v, tuple(1 if d in axes else shape[d] for d in range(nd)))
        outs.append(v)
    return outs[0] if qs.ndim == 0 else N.stack(outs, axis=0)


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th percentiles (q in [0, 100]) over `axis` (see `quantile`)."""
    if F._symbolic(q):
        raise ShapeError("ops.percentile: q must be a number or an array of numbers, not a symbolic tensor.")
    return quantile(x, np.asarray(q, np.float64) / 100.0, axis, method, keepdims)


def median(x, axis=None, keepdims=False):
    """The median over `axis` (the mean of the two middle values for an even count)."""
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


def ptp(x, axis=None, keepdims=False):
    """The range (maximum - minimum) over `axis`."""
    t = as_dtype(x, dtype_of(x), F._symbolic(x))
    return F.subtract(F.max(t, axis, keepdims), F.min(t, axis, keepdims))


# --- data-dependent: eager only ---------------------------------------------------------------------------------
def searchsorted(sorted_sequence, values, side="left"):
    """Indices where `values` would be inserted into the 1-D `sorted_sequence` to keep it sorted (int32)."""
    _eager_only("searchsorted", sorted_sequence, values)
    seq = np.asarray(sorted_sequence)
    if seq.ndim != 1:
        raise ArgumentError(f"ops.searchsorted needs a 1-D sorted sequence, received shape {seq.shape}.")
    if side not in ("left", "right"):
        raise ArgumentError(f"ops.searchsorted: side must be 'left' or 'right', received side={side!r}.")
    out = np.searchsorted(seq, np.asarray(values), side=side)
    return np.asarray(out, "int32" if seq.shape[0] <= np.iinfo(np.int32).max else "int64")


def bincount(x, weights=None, minlength=0, sparse=False):
    """Counts (or summed `weights`) of each non-negative integer in x; a 2-D x counts each row."""
    _eager_only("bincount", x, weights)
    if sparse:
        raise ArgumentError("ops.bincount(sparse=True) is not supported; use the dense result (sparse=False).")
    ids = np.asarray(x).astype(np.int64)
    if ids.ndim not in (1, 2):
        raise ArgumentError(f"ops.bincount takes a 1-D or 2-D x, received shape {ids.shape}.")
    if ids.size and ids.min() < 0:
        raise ArgumentError(f"ops.bincount counts non-negative integers, received a minimum of {ids.min()}.")
    dtype = "int32" if weights is None else result_type(x, weights)
    w = None if weights is None else np.asarray(weights)
    length = max(int(minlength), int(ids.max()) + 1 if ids.size else 0)
    rows = ids.reshape(-1, ids.shape[-1]) if ids.ndim == 2 else ids[None]
    wrows = None if w is None else (w.reshape(rows.shape) if w.ndim == 2 else w[None])
    out = np.stack([np.bincount(r, None if wrows is None else wrows[i], length) for i, r in enumerate(rows)])
    return out.astype(dtype) if ids.ndim == 2 else out[0].astype(dtype)


def unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=False,  # noqa: A002
           axis=None, size=None, fill_value=None):
    """The unique elements (or slices along `axis`) of x, sorted unless `sorted=False` (then in order of first
    appearance); optionally the first indices, the inverse map and the counts (int32). With `size`, the
    results are cut or padded (values with `fill_value`, default 0) to that length."""
    _eager_only("unique", x)
    arr = np.asarray(x)
    if axis is not None:
        axis = normalize_axes(axis, arr.ndim)[0]
    values, index, inverse, counts = np.unique(arr, return_index=True, return_inverse=True, return_counts=True,
                                               axis=axis)
    if not sorted:
        order = np.argsort(index, kind="stable")
        values = np.take(values, order, axis=0 if axis is None else axis)
        index, counts = index[order], counts[order]
        inverse = np.argsort(order)[inverse]
    inverse = inverse.reshape(arr.shape) if axis is None else inverse.reshape(-1)
    if size is not None:
        ax = 0 if axis is None else axis
        pad = max(int(size) - values.shape[ax], 0)
        values = np.take(values, np.arange(min(int(size), values.shape[ax])), axis=ax)
        widths = [(0, pad if d == ax else 0) for d in range(values.ndim)]
        values = np.pad(values, widths, constant_values=0 if fill_value is None else fill_value)
        index = np.pad(index[:size], (0, pad), constant_values=1)  # as Keras' TensorFlow backend pads
        counts = np.pad(counts[:size], (0, pad))
    results = [values.astype(arr.dtype)]
    results += [index.astype("int32")] if return_index else []
    results += [inverse.astype("int32")] if return_inverse else []
    results += [counts.astype("int32")] if return_counts else []
    return tuple(results) if len(results) > 1 else results[0]
