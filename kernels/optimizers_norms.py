"""Update kernels of the optimizers whose step reads a whole variable's statistics: Lamb (the trust ratio
of the weight's and the update's norms) and Adafactor (factored second moments: means over the last two
axes, and the root mean squares of the weight and the update). Keras 3's formulas, CPU and CUDA.

Gradient preprocessing and decoupled weight decay come first, as in kernels/optimizers.py (`gscale`,
`clipvalue`, ``w -= w * wd_lr``), and the norms are those of the decayed weight, as Keras applies the
decay before its update step. CPU: Lamb is two Numba passes (moments and the two sums of squares, then the
scaled update); Adafactor is NumPy in the weight's dtype (reductions over axes). CUDA: the same passes as
kernels, the sums accumulated on the device (a block reduction, then one atomic add per block) into a
small float64 array the next kernel reads, so no value comes back to the host during an update.

A variable of rank >= 2 is viewed as (B, R, C): B the product of its leading dims, R and C its last two.
Adafactor's factored slots r and c (Keras' shapes ``shape[:-1]`` and ``shape[:-2] + shape[-1:]``) are read
as (B, R) and (B, C); its `v` slot holds the full-shape second moment it rebuilds from them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kernels.optimizers import (
    _check_same,
    _dflat,
    _flat,
    _import_cuda,
    _prepared_grad,
    _squared_grad,
    launch_1d,
    moment_args,
    prepared_grad,
    squared_grad,
)

_THREADS = 256


# --------------------------------------------------------------------------------------------------
# Lamb (CPU)

@njit(nogil=True, cache=True, error_model="numpy")
def _lamb_moments(w, g, m, v, one_m_b1, one_m_b2, bc1, bc2, eps, gscale, cv, wd, q, use_q, qs, sums):
    sw = 0.0
    su = 0.0
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        mi = m[i] + (gi - m[i]) * one_m_b1
        vi = v[i] + (squared_grad(gi, q[i], use_q, qs) - v[i]) * one_m_b2
        m[i] = mi
        v[i] = vi
        wi = w[i] - w[i] * wd
        w[i] = wi
        u = (mi / bc1) / (np.sqrt(vi / bc2) + eps)
        sw += np.float64(wi) * np.float64(wi)
        su += np.float64(u) * np.float64(u)
    sums[0] = sw
    sums[1] = su


@njit(nogil=True, cache=True, error_model="numpy")
def _lamb_apply(w, m, v, bc1, bc2, eps, scale):
    for i in range(w.size):
        w[i] = w[i] - scale * ((m[i] / bc1) / (np.sqrt(v[i] / bc2) + eps))


def lamb_coefficients(beta_1: float, beta_2: float, step: int, dtype) -> tuple:
    """(1-beta_1, 1-beta_2, 1-beta_1^step, 1-beta_2^step) in `dtype`, as Keras computes them."""
    t = np.dtype(dtype).type
    return t(1.0 - beta_1), t(1.0 - beta_2), t(t(1) - t(beta_1) ** t(step)), t(t(1) - t(beta_2) ** t(step))


def trust_ratio(w_sumsq: float, u_sumsq: float) -> float:
    """Lamb's ``||w|| / ||update||``, 1 when either norm is 0."""
    if w_sumsq > 0 and u_sumsq > 0:
        return math.sqrt(w_sumsq) / math.sqrt(u_sumsq)
    return 1.0


def lamb_update_cpu(w, g, m, v, lr, beta_1, beta_2, epsilon, step, gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """Lamb step in place (Keras 3): Adam's moments, ``u = (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps)``,
    ``w -= (||w|| / ||u||) · lr · u`` (ratio 1 when a norm is 0).

    Args:
        w, g, m, v: weight, gradient, first and second moment slots.
        lr, beta_1, beta_2, epsilon: hyperparameters; step: 1-based update count.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
        q: an embedding table's per-lookup moment (kernels/optimizers.py's `moment_args`) or None.
    """
    _check_same(w, g, m, v, q)
    t = w.dtype.type
    c1, c2, bc1, bc2 = lamb_coefficients(beta_1, beta_2, step, w.dtype)
    sums = np.zeros(2, np.float64)
    wf, mf, vf = _flat(w), _flat(m), _flat(v)
    _lamb_moments(wf, _flat(g), mf, vf, c1, c2, bc1, bc2, t(epsilon), t(gscale), t(clipvalue), t(wd_lr),
                  *moment_args(g, q, gscale, _flat), sums)
    _lamb_apply(wf, mf, vf, bc1, bc2, t(epsilon), t(t(trust_ratio(sums[0], sums[1])) * t(lr)))


# --------------------------------------------------------------------------------------------------
# Adafactor (CPU)

def factored_shapes(shape) -> tuple:
    """((B, R), (B, C)) of Adafactor's r and c slots for a variable of rank >= 2, else None."""
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        return None
    b = math.prod(shape[:-2])
    return (b, shape[-2]), (b, shape[-1])


def adafactor_coefficients(lr: float, step: int, beta_2_decay: float, dtype) -> tuple:
    """(rho, beta_2_t) in `dtype`: ``min(lr, 1/sqrt(step))`` and ``1 - step**beta_2_decay``, as Keras."""
    t = np.dtype(dtype).type
    s = t(step)
    return t(min(t(lr), t(1) / np.sqrt(s))), t(t(1) - s ** t(beta_2_decay))


def adafactor_update_cpu(w, g, r, c, v, lr, step, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                         clip_threshold=1.0, gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """Adafactor step in place (Keras 3).

    ``rho = min(lr, 1/sqrt(t))``, ``alpha = max(eps_2, rms(w)) · rho``, ``g2 = g² + eps_1``,
    ``b = 1 - t^beta_2_decay``. Rank >= 2: ``r = b·r + (1-b)·mean(g2, -1)``, ``c = b·c + (1-b)·mean(g2, -2)``,
    ``v = r / mean(r, -1) ⊗ c``; else ``v = b·v + (1-b)·g2``. Then ``u = g / sqrt(v)``,
    ``w -= alpha · u / max(1, rms(u) / clip_threshold)``.

    Args:
        w, g: weight and gradient. r, c: the factored slots (sizes as `factored_shapes`), or None for rank < 2.
        v: the full-shape second moment slot.
        lr: learning rate; step: 1-based update count; beta_2_decay, epsilon_1, epsilon_2, clip_threshold:
            hyperparameters.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
        q: an embedding table's per-lookup moment, or None: it stands for g² in the second moment and in
            rms(u) (TensorFlow squares the lookups' rows there).
    """
    _check_same(w, g, v, q)
    t = w.dtype.type
    rho, bt = adafactor_coefficients(lr, step, beta_2_decay, w.dtype)
    gp = g * t(gscale)
    if clipvalue > 0:
        gp = np.clip(gp, -t(clipvalue), t(clipvalue))
    if wd_lr:
        w -= w * t(wd_lr)
    alpha = t(max(t(epsilon_2), t(np.sqrt(np.mean(np.square(w, dtype=np.float64)))))) * rho
    gsq = np.square(gp) if q is None else q * t(float(gscale) ** 2)
    g2 = gsq + t(epsilon_1)
    shapes = factored_shapes(w.shape)
    if shapes is not None:
        (b, rows), (_, cols) = shapes
        g3 = g2.reshape(b, rows, cols)
        r2, c2 = _flat(r).reshape(b, rows), _flat(c).reshape(b, cols)  # views of Keras' slot shapes
        r2[...] = bt * r2 + (t(1) - bt) * g3.mean(axis=-1, dtype=t)
        c2[...] = bt * c2 + (t(1) - bt) * g3.mean(axis=-2, dtype=t)
        v[...] = ((r2 / r2.mean(axis=-1, keepdims=True, dtype=t))[:, :, None] * c2[:, None, :]).reshape(v.shape)
    else:
        v[...] = bt * v + (t(1) - bt) * g2
    u = gp / np.sqrt(v)
    rms_u = t(np.sqrt(np.mean(np.square(u, dtype=np.float64) if q is None else gsq / v, dtype=np.float64)))
    w -= alpha * (u / max(t(1), rms_u / t(clip_threshold)))


# --------------------------------------------------------------------------------------------------
# CUDA (compiled on first use)

_cuda_kernels: dict[str, object] = {}
cuda = None  # numba.cuda, set on first use (a module global so the CUDA simulator can swap it)


def _build() -> dict:
    global cuda
    if _cuda_kernels:
        return _cuda_kernels
    cuda = _import_cuda()
    prep = cuda.jit(device=True)(_prepared_grad)
    sq = cuda.jit(device=True)(_squared_grad)

    @cuda.jit(device=True)
    def block_add(tile, value, out, k):
        # the block's sum of `value` (one per thread) added to out[k]: one atomic add per block
        tid = cuda.threadIdx.x
        tile[tid] = value
        cuda.syncthreads()  # every thread's value is in the tile
        s = _THREADS // 2
        while s > 0:
            if tid < s:
                tile[tid] += tile[tid + s]
            cuda.syncthreads()  # this halving step is complete before the next reads it
            s //= 2
        if tid == 0:
            cuda.atomic.add(out, k, tile[0])

    @cuda.jit
    def zero_sums(sums):
        i = cuda.grid(1)
        if i < sums.size:
            sums[i] = 0.0

    @cuda.jit
    def lamb_moments(w, g, m, v, c1, c2, bc1, bc2, eps, gscale, cv, wd, q, use_q, qs, sums):
        tile = cuda.shared.array(_THREADS, dtype=np.float64)
        i = cuda.grid(1)
        sw = 0.0
        su = 0.0
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            mi = m[i] + (gi - m[i]) * c1
            vi = v[i] + (sq(gi, q[i], use_q, qs) - v[i]) * c2
            m[i] = mi
            v[i] = vi
            wi = w[i] - w[i] * wd
            w[i] = wi
            u = (mi / bc1) / (math.sqrt(vi / bc2) + eps)
            sw = np.float64(wi) * np.float64(wi)
            su = np.float64(u) * np.float64(u)
        block_add(tile, sw, sums, 0)
        block_add(tile, su, sums, 1)

    @cuda.jit
    def lamb_apply(w, m, v, bc1, bc2, eps, lr, sums):
        i = cuda.grid(1)
        if i < w.size:
            ratio = 1.0
            if sums[0] > 0 and sums[1] > 0:
                ratio = math.sqrt(sums[0]) / math.sqrt(sums[1])
            scale = w.dtype.type(ratio) * lr
            w[i] = w[i] - scale * ((m[i] / bc1) / (math.sqrt(v[i] / bc2) + eps))

    @cuda.jit
    def decay_sumsq(w, wd, sums):
        # w -= w * wd, and the sum of the decayed weight's squares into sums[0]
        tile = cuda.shared.array(_THREADS, dtype=np.float64)
        i = cuda.grid(1)
        s = 0.0
        if i < w.size:
            wi = w[i] - w[i] * wd
            w[i] = wi
            s = np.float64(wi) * np.float64(wi)
        block_add(tile, s, sums, 0)

    @cuda.jit
    def factored_rows(g, r, bt, eps1, gscale, cv, q, use_q, qs, rows, cols):
        # r[b, i] = bt r + (1 - bt) mean_j (g[b, i, j]² + eps1); one thread per (b, i)
        k = cuda.grid(1)
        if k < r.size:
            base = k * cols
            acc = g.dtype.type(0)
            for j in range(cols):
                gi = prep(g[base + j], gscale, cv)
                acc += sq(gi, q[base + j], use_q, qs) + eps1
            one = r.dtype.type(1)
            r[k] = bt * r[k] + (one - bt) * (acc / r.dtype.type(cols))

    @cuda.jit
    def factored_cols(g, c, bt, eps1, gscale, cv, q, use_q, qs, rows, cols):
        # c[b, j] = bt c + (1 - bt) mean_i (g[b, i, j]² + eps1); one thread per (b, j)
        k = cuda.grid(1)
        if k < c.size:
            b = k // cols
            j = k % cols
            acc = g.dtype.type(0)
            for i in range(rows):
                e = (b * rows + i) * cols + j
                gi = prep(g[e], gscale, cv)
                acc += sq(gi, q[e], use_q, qs) + eps1
            one = c.dtype.type(1)
            c[k] = bt * c[k] + (one - bt) * (acc / c.dtype.type(rows))

    @cuda.jit
    def row_means(r, means, rows):
        # means[b] = mean_i r[b, i]; one thread per b
        b = cuda.grid(1)
        if b < means.size:
            acc = r.dtype.type(0)
            for i in range(rows):
                acc += r[b * rows + i]
            means[b] = acc / r.dtype.type(rows)

    @cuda.jit
    def second_moment(g, v, r, c, means, factored, bt, eps1, gscale, cv, q, use_q, qs, rows, cols, sums):
        # v (rebuilt from r and c, or decayed), and the sum of the update's squares into sums[1]
        tile = cuda.shared.array(_THREADS, dtype=np.float64)
        i = cuda.grid(1)
        s = 0.0
        if i < v.size:
            gi = prep(g[i], gscale, cv)
            gsq = sq(gi, q[i], use_q, qs)
            if factored:
                row = i // cols
                b = row // rows
                vi = (r[row] / means[b]) * c[b * cols + i % cols]
            else:
                vi = bt * v[i] + (v.dtype.type(1) - bt) * (gsq + eps1)
            v[i] = vi
            s = np.float64(gsq) / np.float64(vi)  # the update's square, (g / sqrt(v))²
        block_add(tile, s, sums, 1)

    @cuda.jit
    def adafactor_apply(w, g, v, rho, eps2, clip, gscale, cv, sums):
        i = cuda.grid(1)
        if i < w.size:
            n = np.float64(w.size)
            alpha = w.dtype.type(max(np.float64(eps2), math.sqrt(sums[0] / n))) * rho
            denom = w.dtype.type(max(1.0, math.sqrt(sums[1] / n) / np.float64(clip)))
            gi = prep(g[i], gscale, cv)
            w[i] = w[i] - alpha * ((gi / math.sqrt(v[i])) / denom)

    _cuda_kernels.update(zero_sums=zero_sums, lamb_moments=lamb_moments, lamb_apply=lamb_apply, decay_sumsq=decay_sumsq,
                         factored_rows=factored_rows, factored_cols=factored_cols, row_means=row_means,
                         second_moment=second_moment, adafactor_apply=adafactor_apply)
    return _cuda_kernels


def cuda_kernels() -> dict[str, object]:
    """Every CUDA kernel of this module by name (built on first use; see kernels.gpu.signatures)."""
    return dict(_build())


def _launch(name: str, n: int, *args) -> None:
    from kernels.gpu.launch import launch_grid  # the processor's stream

    blocks, threads = launch_1d(n, _THREADS)
    launch_grid(_build()[name], blocks, threads, *args)


def _sums(w):
    """The variable's float64 pair on the device for an update's sums of squares (made once per weight array,
    as kernels.gpu.memo keeps such buffers), zeroed on the stream."""
    from kernels.gpu import per_array

    sums = per_array(w, "norm_sums", lambda: _import_cuda().device_array(2, dtype=np.float64))
    _launch("zero_sums", 2, sums)
    return sums


def lamb_update_cuda(w, g, m, v, lr, beta_1, beta_2, epsilon, step, gscale=1.0, clipvalue=0.0, wd_lr=0.0,
                     q=None):
    """CUDA variant of `lamb_update_cpu` on device arrays (the norms stay on the device)."""
    _check_same(w, g, m, v, q)
    t = np.dtype(w.dtype).type
    c1, c2, bc1, bc2 = lamb_coefficients(beta_1, beta_2, step, w.dtype)
    sums = _sums(w)
    wf, mf, vf = _dflat(w), _dflat(m), _dflat(v)
    _launch("lamb_moments", w.size, wf, _dflat(g), mf, vf, c1, c2, bc1, bc2, t(epsilon), t(gscale), t(clipvalue),
            t(wd_lr), *moment_args(g, q, gscale, _dflat), sums)
    _launch("lamb_apply", w.size, wf, mf, vf, bc1, bc2, t(epsilon), t(lr), sums)


def adafactor_update_cuda(w, g, r, c, v, lr, step, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                          clip_threshold=1.0, gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """CUDA variant of `adafactor_update_cpu` on device arrays (the means and norms stay on the device)."""
    _check_same(w, g, v, q)
    t = np.dtype(w.dtype).type
    rho, bt = adafactor_coefficients(lr, step, beta_2_decay, w.dtype)
    sums = _sums(w)
    wf, gf, vf = _dflat(w), _dflat(g), _dflat(v)
    pre = (t(gscale), t(clipvalue))
    qa = moment_args(g, q, gscale, _dflat)
    _launch("decay_sumsq", w.size, wf, t(wd_lr), sums)
    shapes = factored_shapes(w.shape)
    if shapes is not None:
        (b, rows), (_, cols) = shapes
        rf, cf = _dflat(r), _dflat(c)
        from kernels.gpu import per_array

        means = per_array(w, "adafactor_means", lambda: _import_cuda().device_array(b, dtype=w.dtype))
        _launch("factored_rows", b * rows, gf, rf, bt, t(epsilon_1), *pre, *qa, rows, cols)
        _launch("factored_cols", b * cols, gf, cf, bt, t(epsilon_1), *pre, *qa, rows, cols)
        _launch("row_means", b, rf, means, rows)
        _launch("second_moment", w.size, gf, vf, rf, cf, means, True, bt, t(epsilon_1), *pre, *qa, rows, cols, sums)
    else:
        placeholder = vf[:1]
        _launch("second_moment", w.size, gf, vf, placeholder, placeholder, placeholder, False, bt, t(epsilon_1), *pre,
                *qa, 1, 1, sums)
    _launch("adafactor_apply", w.size, wf, gf, vf, rho, t(epsilon_2), t(clip_threshold), *pre, sums)
