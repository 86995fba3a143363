"""Indexing, data-movement, scan, selection and random kernels behind `keras.ops` functions.

CPU variants are NumPy; each has a CUDA variant (``*_cuda``, device kernels in `kernels.gpu.array_ops` and
`kernels.gpu.array_select`, imported on first use). Every backward takes ``accumulate`` (add into the
gradient buffer, or overwrite).

Random numbers are counter-based (as `kernels.dropout`): element ``e`` of global sample ``s`` under
``key`` draws ``u = (mix64(mix64(key ^ s) + e) >> 40) / 2**24``, so a split batch draws exactly what the
whole batch draws.
"""

from __future__ import annotations

import numpy as np

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _store(dst: np.ndarray, value, accumulate: bool) -> None:
    if accumulate:
        dst += value
    else:
        np.copyto(dst, value, casting="unsafe")


# --- static indexing (x[index]) ---------------------------------------------------------------------------
def index_forward_cpu(x: np.ndarray, index: tuple, y: np.ndarray) -> None:
    """``y = x[index]`` for a basic (static) index: slices, ints, None, Ellipsis."""
    np.copyto(y, np.reshape(x[index], y.shape))


def index_backward_cpu(dy: np.ndarray, index: tuple, dx: np.ndarray, accumulate: bool = False) -> None:
    """``dx[index] (+)= dy`` and zero elsewhere (a basic index selects each element at most once)."""
    if not accumulate:
        dx[...] = 0
    view = dx[index]
    dx[index] = view + np.reshape(dy, view.shape)


# --- gather ---------------------------------------------------------------------------------------------
def _check_indices(idx: np.ndarray, size: int) -> int:
    """The flat position of the first index outside [-size, size), or -1."""
    bad = np.flatnonzero((idx < -size) | (idx >= size))
    return int(bad[0]) if bad.size else -1


def gather_forward_cpu(x: np.ndarray, idx: np.ndarray, axis: int, y: np.ndarray) -> int:
    """``y = take(x, idx, axis)``; returns the flat position of a bad index (nothing written) or -1."""
    bad = _check_indices(idx, x.shape[axis])
    if bad < 0:
        np.copyto(y, np.take(x, idx.astype(np.int64), axis=axis))
    return bad


def gather_backward_cpu(dy: np.ndarray, idx: np.ndarray, axis: int, dx: np.ndarray, accumulate: bool = False) -> None:
    """Scatter-add dy back to the gathered rows of dx (repeated indices add up)."""
    g = np.zeros(dx.shape, dx.dtype)
    moved = np.moveaxis(g, axis, 0)
    dmoved = np.reshape(np.moveaxis(dy, list(range(axis, axis + idx.ndim)), list(range(idx.ndim))),
                        (idx.size,) + moved.shape[1:])
    np.add.at(moved, idx.reshape(-1).astype(np.int64) % dx.shape[axis], dmoved)
    _store(dx, g, accumulate)


def take_along_forward_cpu(x: np.ndarray, idx: np.ndarray, axis: int, y: np.ndarray) -> int:
    """``y = take_along_axis(x, idx, axis)`` (idx broadcast against x off `axis`); -1 or a bad position."""
    bad = _check_indices(idx, x.shape[axis])
    if bad < 0:
        np.copyto(y, np.take_along_axis(x, _along(idx, x, axis), axis=axis))
    return bad


def _along(idx: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    shape = list(np.broadcast_shapes(tuple(s if i != axis else 1 for i, s in enumerate(x.shape)),
                                     tuple(s if i != axis else 1 for i, s in enumerate(idx.shape))))
    shape[axis] = idx.shape[axis]
    return np.broadcast_to(idx.astype(np.int64) % x.shape[axis], shape)


def take_along_backward_cpu(dy: np.ndarray, idx: np.ndarray, axis: int, dx: np.ndarray,
                            accumulate: bool = False) -> None:
    """Scatter-add dy to the positions take_along_axis read (x's dims off `axis` are the output's)."""
    full = _along(idx, dx, axis)
    g = np.zeros(dx.shape, dx.dtype)
    grids = list(np.indices(full.shape, sparse=True))
    grids[axis] = full
    np.add.at(g, tuple(grids), np.broadcast_to(dy, full.shape))
    _store(dx, g, accumulate)


# --- tile, repeat, broadcast --------------------------------------------------------------------------------
def tile_forward_cpu(x: np.ndarray, reps: tuple[int, ...], y: np.ndarray) -> None:
    """``y = tile(x, reps)`` (len(reps) == x.ndim)."""
    np.copyto(y, np.tile(x, reps))


def tile_backward_cpu(dy: np.ndarray, reps: tuple[int, ...], dx: np.ndarray, accumulate: bool = False) -> None:
    """Sum the tiles of dy."""
    inter = []
    for r, s in zip(reps, dx.shape, strict=True):
        inter += [r, s]
    g = dy.reshape(inter).sum(axis=tuple(range(0, 2 * dx.ndim, 2)))
    _store(dx, g, accumulate)


def repeat_forward_cpu(x: np.ndarray, repeats: int, axis: int, y: np.ndarray) -> None:
    """``y = repeat(x, repeats, axis)``."""
    np.copyto(y, np.repeat(x, repeats, axis=axis))


def repeat_backward_cpu(dy: np.ndarray, repeats: int, axis: int, dx: np.ndarray, accumulate: bool = False) -> None:
    """Sum each group of `repeats` copies."""
    shape = dx.shape[:axis + 1] + (repeats,) + dx.shape[axis + 1:]
    _store(dx, dy.reshape(shape).sum(axis=axis + 1), accumulate)


def broadcast_forward_cpu(x: np.ndarray, y: np.ndarray) -> None:
    """``y = broadcast_to(x, y.shape)``."""
    np.copyto(y, np.broadcast_to(x, y.shape))


def broadcast_backward_cpu(dy: np.ndarray, dx: np.ndarray, accumulate: bool = False) -> None:
    """Sum dy over the broadcast dims."""
    lead = dy.ndim - dx.ndim
    g = dy.sum(axis=tuple(range(lead))) if lead else dy
    axes = tuple(i for i, s in enumerate(dx.shape) if s == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    _store(dx, g, accumulate)


# --- scans, products, selection ------------------------------------------------------------------------------
def cumsum_forward_cpu(x: np.ndarray, axis: int, reverse: bool, y: np.ndarray) -> None:
    """Inclusive cumulative sum along `axis` (from the end when `reverse`)."""
    if reverse:
        np.copyto(y, np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis), casting="unsafe")
    else:
        np.cumsum(x, axis=axis, out=y)


def cumsum_backward_cpu(dy: np.ndarray, axis: int, reverse: bool, dx: np.ndarray, accumulate: bool = False) -> None:
    """The gradient of a cumulative sum is the cumulative sum of dy from the other end."""
    g = np.empty_like(dx)
    cumsum_forward_cpu(dy, axis, not reverse, g)
    _store(dx, g, accumulate)


def prod_forward_cpu(x: np.ndarray, axes: tuple[int, ...], y: np.ndarray) -> None:
    """Product over `axes` into y (keepdims or squeezed shape: same size)."""
    np.copyto(y, np.prod(x, axis=axes, keepdims=True).reshape(y.shape))


def prod_backward_cpu(x: np.ndarray, axes: tuple[int, ...], dy: np.ndarray, dx: np.ndarray,
                      accumulate: bool = False) -> None:
    """d prod / dx_i = product of the other elements (computed without dividing, so zeros are exact)."""
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    flat = moved.reshape(moved.shape[:moved.ndim - len(axes)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    before = np.concatenate([ones, np.cumprod(flat, axis=-1)[..., :-1]], axis=-1)
    after = np.flip(np.concatenate([ones, np.cumprod(np.flip(flat, -1), axis=-1)[..., :-1]], axis=-1), -1)
    others = (before * after).reshape(moved.shape)
    others = np.moveaxis(others, tuple(range(x.ndim - len(axes), x.ndim)), axes)
    kept = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    _store(dx, others * dy.reshape(kept), accumulate)


def arg_forward_cpu(fn: str, x: np.ndarray, axis: int, y: np.ndarray) -> None:
    """``y = argmax/argmin(x, axis)`` (keepdims or not: y's shape decides)."""
    r = np.argmax(x, axis=axis) if fn == "argmax" else np.argmin(x, axis=axis)
    np.copyto(y, r.reshape(y.shape), casting="unsafe")


def one_hot_forward_cpu(ids: np.ndarray, depth: int, axis: int, y: np.ndarray) -> None:
    """One-hot rows of `depth` classes at `axis`; ids outside [0, depth) give all-zero rows (as Keras)."""
    ids = ids.astype(np.int64)
    hot = (ids[..., None] == np.arange(depth)).astype(y.dtype)
    np.copyto(y, np.moveaxis(hot, -1, axis))


def top_k_forward_cpu(x: np.ndarray, k: int, values: np.ndarray, indices: np.ndarray) -> None:
    """The k largest entries of the last axis, largest first (ties: the lower index first)."""
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    np.copyto(indices, order, casting="unsafe")
    np.copyto(values, np.take_along_axis(x, order, axis=-1))


def top_k_backward_cpu(dvalues: np.ndarray, indices: np.ndarray, dx: np.ndarray, accumulate: bool = False) -> None:
    """Scatter the values' gradient back to the selected positions."""
    g = np.zeros(dx.shape, dx.dtype)
    np.put_along_axis(g, indices.astype(np.int64), dvalues, axis=-1)
    _store(dx, g, accumulate)


# --- random ---------------------------------------------------------------------------------------------------
def _mix64(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform_bits(key: int, first_sample: int, rows: int, per_sample: int, draws: int = 1) -> np.ndarray:
    """(rows, per_sample * draws) uniforms in [0, 1) for global samples first_sample.. (see the docstring)."""
    with np.errstate(over="ignore"):
        s = np.arange(first_sample, first_sample + rows, dtype=np.uint64)[:, None]
        e = np.arange(per_sample * draws, dtype=np.uint64)[None, :]
        h = _mix64(_mix64(np.uint64(key) ^ s) + e)
    return (h >> np.uint64(40)).astype(np.float64) / float(1 << 24)


def random_forward_cpu(dist: str, key: int, first_sample: int, params: tuple[float, float], y: np.ndarray) -> None:
    """Fill y (rows = samples) from `dist`: "normal" (mean, stddev), "uniform" (min, max), "randint"
    [min, max), "truncated_normal" (mean, stddev; redrawn beyond two stddevs), "permutation" (each row a
    permutation of its last axis; y of rank 2)."""
    rows = y.shape[0] if y.ndim else 1
    per = int(np.prod(y.shape[1:], dtype=np.int64)) if y.ndim else 1
    a, b = params
    if dist == "uniform":
        v = a + (b - a) * uniform_bits(key, first_sample, rows, per)
    elif dist == "randint":
        v = np.floor(a + (b - a) * uniform_bits(key, first_sample, rows, per))
        v = np.minimum(v, b - 1)
    elif dist in ("normal", "truncated_normal"):
        draws = 2 if dist == "normal" else 8
        u = uniform_bits(key, first_sample, rows, per, draws).reshape(rows, per, draws)
        u1, u2 = 1.0 - u[..., 0::2], u[..., 1::2]  # u1 in (0, 1]: log is finite
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        if dist == "truncated_normal":  # the first of four candidates inside two stddevs (else clipped)
            ok = np.abs(z) <= 2.0
            first = np.argmax(ok, axis=-1)
            z = np.clip(np.take_along_axis(z, first[..., None], axis=-1)[..., 0], -2.0, 2.0)
        else:
            z = z[..., 0]
        v = a + b * z
    elif dist == "permutation":
        v = np.argsort(uniform_bits(key, first_sample, rows, per), axis=-1, kind="stable")
    else:
        raise ValueError(f"random kernel: unknown distribution {dist!r}.")
    np.copyto(y, np.reshape(v, y.shape), casting="unsafe")


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import array_ops, array_select

        return getattr(array_ops, name, None) or getattr(array_select, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
