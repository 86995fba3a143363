"""CUDA twins of `kernels.array_ops`, selection and random draws: argmax/argmin, one_hot, top_k and the
counter-based random fills (the data-movement twins are in `kernels.gpu.array_ops`).

argmax/argmin and top_k run one thread per line along their axis; one_hot one thread per output element.
Random draws hash (key, global sample, element) exactly as the CPU does (see `kernels.array_ops`), so a
batch split draws what the whole batch draws, and map the hash to values with the CPU's formulas in the
output's float type (float64 for integer outputs, as the CPU): the draw kernel is built per float type,
with every constant converted to it, so float32 draws run no f64 instructions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, int64

from kernels.gpu import flat, launch, per_dtype
from kernels.gpu.array_ops import _zero
from kernels.gpu.elementwise import operand
from kernels.softmax import axis_view

UNIFORM, RANDINT, NORMAL, TRUNCATED_NORMAL = range(4)
DIST_CODES = {"uniform": UNIFORM, "randint": RANDINT, "normal": NORMAL, "truncated_normal": TRUNCATED_NORMAL}
TRUNCATED_CANDIDATES = 4  # normal candidates per truncated-normal element (the CPU's 8 draws, in pairs)


# --- argmax / argmin, one_hot -------------------------------------------------------------------------------
@cuda.jit
def _arg(x, y, n, inner, is_max):
    # one thread per output: the first extreme along n (the first NaN wins, as NumPy)
    t = cuda.grid(1)
    if t < y.size:
        base = (t // inner) * n * inner + t % inner
        best = x[base]
        at = 0
        for j in range(1, n):
            v = x[base + j * inner]
            if best == best and (v != v or (v > best if is_max else v < best)):
                best = v
                at = j
        y[t] = at


def arg_forward_cuda(fn: str, x, axis: int, y) -> None:
    """``y = argmax/argmin(x, axis)`` (keepdims or not: y's size decides) on device arrays."""
    _outer, n, inner = axis_view(tuple(x.shape), axis)
    launch(_arg, y.size, flat(x), flat(y), n, inner, fn == "argmax")


@cuda.jit
def _one_hot(ids, y, depth, inner):
    # y (outer, depth, inner) flat, ids (outer, inner) flat; ids outside [0, depth) give zero rows
    i = cuda.grid(1)
    if i < y.size:
        k = i % inner
        c = (i // inner) % depth
        o = i // (inner * depth)
        y[i] = 1 if int64(ids[o * inner + k]) == c else 0


def one_hot_forward_cuda(ids, depth: int, axis: int, y) -> None:
    """One-hot rows of `depth` classes at `axis` of y on device arrays."""
    ids = operand(ids)
    inner = math.prod(tuple(ids.shape)[axis:])
    launch(_one_hot, y.size, flat(ids), flat(y), int(depth), inner)


# --- top_k --------------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def _before(va, ja, vb, jb):
    # (va, ja) sorts before (vb, jb): larger values first, ties by lower index, NaNs last (NumPy's
    # stable argsort of -x)
    if va != va:
        return vb != vb and ja < jb
    if vb != vb:
        return True
    return va > vb or (va == vb and ja < jb)


@cuda.jit
def _top_k(x, values, indices, rows, n, k):
    # one thread per row: k passes, each taking the first entry after the previous pick in sort order
    r = cuda.grid(1)
    if r < rows:
        base = r * n
        prev_v = x[base]
        prev_j = -1
        for t in range(k):
            best_v = x[base]
            best_j = -1
            for j in range(n):
                v = x[base + j]
                if (prev_j < 0 or _before(prev_v, prev_j, v, j)) and (best_j < 0 or _before(v, j, best_v, best_j)):
                    best_v = v
                    best_j = j
            values[r * k + t] = best_v
            indices[r * k + t] = best_j
            prev_v = best_v
            prev_j = best_j


@cuda.jit
def _top_k_grad(dvalues, indices, dx, n, k):
    # a row's indices are distinct: each dx element is written by at most one thread
    i = cuda.grid(1)
    if i < dvalues.size:
        p = (i // k) * n + int64(indices[i])
        dx[p] = dx[p] + dvalues[i]


def top_k_forward_cuda(x, k: int, values, indices) -> None:
    """The k largest entries of the last axis, largest first (ties: the lower index first), on device."""
    n = tuple(x.shape)[-1]
    rows = x.size // n if n else 0
    launch(_top_k, rows, flat(x), flat(values), flat(indices), rows, n, int(k))


def top_k_backward_cuda(dvalues, indices, dx, accumulate: bool = False) -> None:
    """Scatter the values' gradient back to the selected positions of dx."""
    if not accumulate:
        _zero(dx)
    launch(_top_k_grad, dvalues.size, flat(dvalues), flat(indices), flat(dx), tuple(dx.shape)[-1],
           tuple(dvalues.shape)[-1])


# --- random draws -------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def _bits(key, s, e):
    # the CPU's mix64(mix64(key ^ s) + e) >> 40 (SplitMix64's finaliser twice): 24 uniform bits
    z = key ^ np.uint64(s)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = (z ^ (z >> np.uint64(31))) + np.uint64(e)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return z >> np.uint64(40)


def _build_draw(ft):
    """The draw kernel computing in the float type `ft` (each constant converted with ``ft(...)``)."""

    @cuda.jit(device=True)
    def uniform(key, s, e):
        return ft(_bits(key, s, e)) * ft(5.9604644775390625e-08)  # / 2**24: exact in float32 too

    @cuda.jit(device=True)
    def normal(key, s, e):
        # Box-Muller from draws e (u1 = 1 - u in (0, 1]: a finite log) and e + 1, as the CPU
        u1 = ft(1.0) - uniform(key, s, e)
        return math.sqrt(ft(-2.0) * math.log(u1)) * math.cos(ft(6.283185307179586) * uniform(key, s, e + 1))

    @cuda.jit
    def draw(y, key, first, per, dist, a, b):
        i = cuda.grid(1)
        if i < y.size:
            s = first + i // per
            e = i % per
            if dist == UNIFORM:
                v = a + (b - a) * uniform(key, s, e)
            elif dist == RANDINT:
                v = min(ft(math.floor(a + (b - a) * uniform(key, s, e))), b - ft(1.0))
            elif dist == NORMAL:
                v = a + b * normal(key, s, 2 * e)
            else:  # the first of the candidates inside two stddevs, else the first one clipped
                z = normal(key, s, 2 * TRUNCATED_CANDIDATES * e)
                w = z
                c = 1
                while abs(w) > ft(2.0) and c < TRUNCATED_CANDIDATES:
                    w = normal(key, s, 2 * TRUNCATED_CANDIDATES * e + 2 * c)
                    c += 1
                if abs(w) > ft(2.0):
                    w = min(max(z, ft(-2.0)), ft(2.0))
                v = a + b * w
            y[i] = v

    return draw


@cuda.jit
def _permutation(y, key, first, per):
    # y[r] is the stable argsort of row r's draws: element e goes to its rank among them
    i = cuda.grid(1)
    if i < y.size:
        r = i // per
        e = i % per
        mine = _bits(key, first + r, e)
        rank = 0
        for j in range(per):
            other = _bits(key, first + r, j)
            if other < mine or (other == mine and j < e):
                rank += 1
        y[r * per + rank] = e


def _compute_dtype(dtype) -> np.dtype:
    return np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)


def cuda_kernels() -> dict[str, object]:
    """The per-float-type draw kernels (see kernels.gpu.signatures)."""
    return {f"draw[{dt}]": per_dtype("array_draw", dt, _build_draw) for dt in ("float32", "float64")}


def random_forward_cuda(dist: str, key: int, first_sample: int, params: tuple[float, float], y) -> None:
    """Fill the device array y (rows = samples) from `dist` with the CPU's values (see
    `kernels.array_ops.random_forward_cpu` for the distributions and their parameters)."""
    rows = y.shape[0] if y.ndim else 1
    per = y.size // rows if rows else 0
    if y.size == 0:
        return
    key = np.uint64(int(key) & 0xFFFFFFFFFFFFFFFF)
    if dist == "permutation":
        launch(_permutation, y.size, flat(y), key, int(first_sample), per)
        return
    if dist not in DIST_CODES:
        raise ValueError(f"random kernel: unknown distribution {dist!r}; valid: {[*DIST_CODES, 'permutation']}.")
    ft = _compute_dtype(y.dtype)
    kernel = per_dtype("array_draw", ft, _build_draw)
    a, b = (ft.type(float(p)) for p in params)
    launch(kernel, y.size, flat(y), key, int(first_sample), per, DIST_CODES[dist], a, b)
