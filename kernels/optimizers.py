"""Fused optimizer update kernels: SGD (momentum, Nesterov), Adam (AMSGrad), RMSprop (momentum, centered),
Adagrad, and the gradient sum of squares that norm clipping needs.

Every update reads the gradient once and writes the weight and its slots once, with the gradient
preprocessing fused in, in the order Keras 3 applies it:

    g = g * gscale                 # 1/loss_scale times the clipnorm / global_clipnorm factor
    g = clip(g, -clipvalue, clipvalue)   if clipvalue > 0
    w = w - w * wd_lr              # decoupled weight decay (weight_decay * learning_rate), 0 = none
    ...the optimizer's own update of w and its slots...

CPU variants (`<name>_update_cpu`) are Numba `@njit(nogil=True, cache=True, error_model="numpy")`, single threaded, and work
on NumPy arrays in place; the arithmetic stays in the weight's dtype (float32 scalars are passed as
float32 so the loop does not widen), and compiled with ``error_model="numpy"``: Python's zero-division
check on ``/`` would otherwise stop LLVM from vectorising the loop (measured 7x slower). CUDA variants (`<name>_update_cuda`) take numba device arrays and
launch one thread per element; they are compiled on first use so importing this module never touches
a GPU. The scalar coefficients (Adam's bias-corrected step size, 1 - beta, ...) are computed once per
call on the host.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# --------------------------------------------------------------------------------------------------
# shared helpers


def _flat(a: np.ndarray) -> np.ndarray:
    """A 1-D view of `a` (the kernels update in place, so a copy would lose the update)."""
    if not a.flags.c_contiguous:
        raise ValueError(f"optimizer kernels need C-contiguous arrays, received an array of shape {a.shape} "
                         f"with strides {a.strides}; pass np.ascontiguousarray(...) and copy the result back.")
    return a.reshape(-1)


def _check_same(w: np.ndarray, *others) -> None:
    for o in others:
        if o is not None and o.shape != w.shape:
            raise ValueError(f"optimizer kernel: every array must have the weight's shape {w.shape}, "
                             f"received {o.shape}.")


# reassoc lets LLVM vectorise the float64 accumulation (8x faster; the sum order changes in the last bits)
@njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _sumsq_kernel(g):
    acc = 0.0
    for i in range(g.size):
        x = np.float64(g[i])
        acc += x * x
    return acc


def sumsq_cpu(g: np.ndarray) -> float:
    """Sum of squares of `g` accumulated in float64 (for clipnorm / global_clipnorm)."""
    return float(_sumsq_kernel(_flat(np.ascontiguousarray(g))))


def _prepared_grad(gi, gscale, cv):
    """A gradient element as every update reads it: scaled by `gscale` (loss scale, clipnorm factor), then
    clipped to [-cv, cv] when `cv` > 0. Compiled for the CPU kernels (`prepared_grad`) and, from the same
    source, as a device function for the CUDA ones."""
    gi = gi * gscale
    if cv > 0:
        gi = min(max(gi, -cv), cv)
    return gi


prepared_grad = njit(inline="always")(_prepared_grad)


def _squared_grad(gi, qi, use_q, qs):
    """The squared gradient an update accumulates: ``qi * qs`` (an embedding table's per-lookup moment,
    `moment_args`) when `use_q`, else ``gi * gi``. Compiled for the CPU kernels (`squared_grad`) and, from
    the same source, as a device function for the CUDA ones."""
    return qi * qs if use_q else gi * gi


squared_grad = njit(inline="always")(_squared_grad)


def moment_args(g, q, gscale: float, flat, power: int = 2) -> tuple:
    """(q, use_q, qs): the arguments with which an update reads a sparse gradient's moment.

    A weight whose gradient comes only from embedding lookups gets, beside its gradient G (the sum of
    the looked-up rows' gradients), q: the sum over lookups of each one's squared gradient (``power``
    2; Adamax's 1: of its absolute value). Keras 3's TensorFlow backend squares an `IndexedSlices`
    gradient per lookup before summing duplicates, so Adam's second moment reads q where a dense
    gradient gives G². With q None, `g` stands in as a placeholder and use_q is False. `qs` is
    `gscale` to that power (q holds unscaled gradients; no clipvalue applies to q: the optimizer
    gives no q when it clips)."""
    t = np.dtype(g.dtype).type
    if q is None:
        return flat(g), False, t(1)
    return flat(q), True, t(float(gscale) ** power)


# --------------------------------------------------------------------------------------------------
# SGD

@njit(nogil=True, cache=True, error_model="numpy")
def _sgd_plain(w, g, lr, gscale, cv, wd):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        wi = w[i] - w[i] * wd
        w[i] = wi - gi * lr


@njit(nogil=True, cache=True, error_model="numpy")
def _sgd_momentum(w, g, m, lr, mom, nesterov, gscale, cv, wd):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        wi = w[i] - w[i] * wd
        mi = m[i] * mom - gi * lr
        m[i] = mi
        if nesterov:
            w[i] = wi + (mi * mom - gi * lr)
        else:
            w[i] = wi + mi


def sgd_update_cpu(w, g, m, lr, momentum=0.0, nesterov=False, gscale=1.0, clipvalue=0.0, wd_lr=0.0):
    """SGD step in place: ``m = momentum*m - lr*g; w += m`` (Nesterov: ``w += momentum*m - lr*g``).

    Args:
        w, g: weight and gradient (same shape, C-contiguous).
        m: momentum slot, or None when momentum is 0 (plain ``w -= lr*g``).
        lr, momentum, nesterov: the hyperparameters.
        gscale, clipvalue, wd_lr: gradient scale, value clip (0 = none) and weight decay times lr.
    """
    _check_same(w, g, m)
    t = w.dtype.type
    wf, gf = _flat(w), _flat(g)
    if m is None or momentum == 0:
        _sgd_plain(wf, gf, t(lr), t(gscale), t(clipvalue), t(wd_lr))
    else:
        _sgd_momentum(wf, gf, _flat(m), t(lr), t(momentum), bool(nesterov), t(gscale), t(clipvalue), t(wd_lr))


# --------------------------------------------------------------------------------------------------
# Adam

@njit(nogil=True, cache=True, error_model="numpy")
def _adam(w, g, m, v, alpha, one_m_b1, one_m_b2, eps, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        mi = m[i] + (gi - m[i]) * one_m_b1
        vi = v[i] + (squared_grad(gi, q[i], use_q, qs) - v[i]) * one_m_b2
        m[i] = mi
        v[i] = vi
        wi = w[i] - w[i] * wd
        w[i] = wi - (mi * alpha) / (np.sqrt(vi) + eps)


@njit(nogil=True, cache=True, error_model="numpy")
def _adam_amsgrad(w, g, m, v, vhat, alpha, one_m_b1, one_m_b2, eps, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        mi = m[i] + (gi - m[i]) * one_m_b1
        vi = v[i] + (squared_grad(gi, q[i], use_q, qs) - v[i]) * one_m_b2
        m[i] = mi
        v[i] = vi
        vh = max(vhat[i], vi)
        vhat[i] = vh
        wi = w[i] - w[i] * wd
        w[i] = wi - (mi * alpha) / (np.sqrt(vh) + eps)


def adam_coefficients(lr: float, beta_1: float, beta_2: float, step: int, dtype) -> tuple:
    """(alpha, 1-beta_1, 1-beta_2) in `dtype`, as Keras computes them (step = iterations + 1)."""
    t = np.dtype(dtype).type
    b1p = t(beta_1) ** t(step)
    b2p = t(beta_2) ** t(step)
    alpha = t(lr) * np.sqrt(t(1) - b2p) / (t(1) - b1p)
    # 1 - beta in float64 then rounded, as Keras does with Python floats (float32(1) - float32(0.9) differs).
    return t(alpha), t(1.0 - beta_1), t(1.0 - beta_2)


def adam_update_cpu(w, g, m, v, vhat, lr, beta_1, beta_2, epsilon, step, gscale=1.0, clipvalue=0.0,
                    wd_lr=0.0, q=None):
    """Adam step in place (Keras 3's form, epsilon outside the square root).

    ``m += (g-m)(1-b1); v += (g²-v)(1-b2); w -= m·alpha/(sqrt(v)+eps)`` with
    ``alpha = lr·sqrt(1-b2^step)/(1-b1^step)``; AMSGrad (vhat not None) uses ``vhat = max(vhat, v)``.

    Args:
        w, g, m, v: weight, gradient, first and second moment slots.
        vhat: AMSGrad slot or None.
        lr, beta_1, beta_2, epsilon: hyperparameters; step: 1-based update count.
        gscale, clipvalue, wd_lr: see the module docstring.
        q: the sparse second moment (see `moment_args`) or None.
    """
    _check_same(w, g, m, v, vhat, q)
    t = w.dtype.type
    alpha, c1, c2 = adam_coefficients(lr, beta_1, beta_2, step, w.dtype)
    args = (alpha, c1, c2, t(epsilon), t(gscale), t(clipvalue), t(wd_lr)) + moment_args(g, q, gscale, _flat)
    if vhat is None:
        _adam(_flat(w), _flat(g), _flat(m), _flat(v), *args)
    else:
        _adam_amsgrad(_flat(w), _flat(g), _flat(m), _flat(v), _flat(vhat), *args)


# --------------------------------------------------------------------------------------------------
# RMSprop

@njit(nogil=True, cache=True, error_model="numpy")
def _rmsprop(w, g, vel, mom_buf, avg, lr, rho, one_m_rho, mom, eps, centered, use_mom, gscale, cv, wd, q, use_q,
             qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        vi = rho * vel[i] + one_m_rho * squared_grad(gi, q[i], use_q, qs)
        vel[i] = vi
        if centered:
            ai = rho * avg[i] + one_m_rho * gi
            avg[i] = ai
            denom = vi - ai * ai + eps
        else:
            denom = vi + eps
        inc = (lr * gi) / np.sqrt(denom)
        wi = w[i] - w[i] * wd
        if use_mom:
            mi = mom * mom_buf[i] + inc
            mom_buf[i] = mi
            w[i] = wi - mi
        else:
            w[i] = wi - inc


def rmsprop_update_cpu(w, g, velocity, momentum_buf, average_grad, lr, rho, momentum, epsilon,
                       gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """RMSprop step in place (Keras 3: epsilon inside the square root).

    ``vel = rho·vel + (1-rho)·g²``; centered: ``avg = rho·avg + (1-rho)·g``, denominator
    ``vel - avg² + eps`` else ``vel + eps``; ``inc = lr·g/sqrt(denominator)``; with momentum
    ``mom = momentum·mom + inc; w -= mom`` else ``w -= inc``.

    Args:
        w, g, velocity: weight, gradient, squared-gradient average.
        momentum_buf: momentum slot or None (momentum == 0).
        average_grad: centered slot or None.
        lr, rho, momentum, epsilon: hyperparameters.
        gscale, clipvalue, wd_lr: see the module docstring.
        q: the sparse second moment (see `moment_args`) or None.
    """
    _check_same(w, g, velocity, momentum_buf, average_grad, q)
    t = w.dtype.type
    use_mom = momentum_buf is not None and momentum > 0
    centered = average_grad is not None
    dummy = np.zeros(1, w.dtype)
    _rmsprop(_flat(w), _flat(g), _flat(velocity), _flat(momentum_buf) if use_mom else dummy,
             _flat(average_grad) if centered else dummy, t(lr), t(rho), t(1.0 - rho), t(momentum),
             t(epsilon), centered, use_mom, t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _flat))


# --------------------------------------------------------------------------------------------------
# Adagrad

@njit(nogil=True, cache=True, error_model="numpy")
def _adagrad(w, g, acc, lr, eps, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        ai = acc[i] + squared_grad(gi, q[i], use_q, qs)
        acc[i] = ai
        wi = w[i] - w[i] * wd
        w[i] = wi - (lr * gi) / np.sqrt(ai + eps)


def adagrad_update_cpu(w, g, accumulator, lr, epsilon, gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """Adagrad step in place: ``acc += g²; w -= lr·g/sqrt(acc + eps)`` (Keras 3).

    Args:
        w, g, accumulator: weight, gradient and the accumulator slot.
        lr, epsilon: hyperparameters.
        gscale, clipvalue, wd_lr: see the module docstring.
        q: the sparse second moment (see `moment_args`) or None.
    """
    _check_same(w, g, accumulator, q)
    t = w.dtype.type
    _adagrad(_flat(w), _flat(g), _flat(accumulator), t(lr), t(epsilon), t(gscale), t(clipvalue), t(wd_lr),
             *moment_args(g, q, gscale, _flat))


# --------------------------------------------------------------------------------------------------
# CUDA variants (compiled on first use)

_THREADS = 256
_cuda_kernels: dict[str, object] = {}


def launch_1d(n: int, threads: int = _THREADS) -> tuple[int, int]:
    """(blocks, threads) covering `n` elements with one thread each (kernels.gpu.launch's arithmetic)."""
    from kernels.gpu.launch import grid_1d  # imported with the CUDA kernels, never by the CPU path

    return grid_1d(n, threads)


def _launch(kernel, blocks, threads, *args) -> None:
    # on the calling GPU task's stream (kernels.gpu.launch)
    from kernels.gpu.launch import launch_grid

    launch_grid(kernel, blocks, threads, *args)


def _cuda():
    if not _cuda_kernels:
        _build_cuda_kernels()
    return _cuda_kernels


def cuda_kernels() -> dict[str, object]:
    """Every CUDA kernel of this module by name (built on first use; see kernels.gpu.signatures)."""
    kernels = _cuda()
    if "accumulate" not in kernels:
        _build_cuda_helpers()
    return dict(_cuda_kernels)


# numba.cuda, imported on first use; a module global because the CUDA simulator swaps the `cuda` name
# in a kernel's globals (a closure variable would not be swapped).
cuda = None


def _import_cuda():
    global cuda
    if cuda is None:
        from numba import cuda as numba_cuda

        cuda = numba_cuda
    return cuda


def _build_cuda_kernels() -> None:
    _import_cuda()

    prep = cuda.jit(device=True)(_prepared_grad)
    sq = cuda.jit(device=True)(_squared_grad)

    @cuda.jit
    def sgd(w, g, m, use_m, lr, mom, nesterov, gscale, cv, wd):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            wi = w[i] - w[i] * wd
            if use_m:
                mi = m[i] * mom - gi * lr
                m[i] = mi
                if nesterov:
                    w[i] = wi + (mi * mom - gi * lr)
                else:
                    w[i] = wi + mi
            else:
                w[i] = wi - gi * lr

    @cuda.jit
    def adam(w, g, m, v, vhat, amsgrad, alpha, c1, c2, eps, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            mi = m[i] + (gi - m[i]) * c1
            vi = v[i] + (sq(gi, q[i], use_q, qs) - v[i]) * c2
            m[i] = mi
            v[i] = vi
            if amsgrad:
                vi = max(vhat[i], vi)
                vhat[i] = vi
            wi = w[i] - w[i] * wd
            w[i] = wi - (mi * alpha) / (math.sqrt(vi) + eps)

    @cuda.jit
    def rmsprop(w, g, vel, mom_buf, avg, lr, rho, one_m_rho, mom, eps, centered, use_mom, gscale, cv, wd, q, use_q,
                qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            vi = rho * vel[i] + one_m_rho * sq(gi, q[i], use_q, qs)
            vel[i] = vi
            if centered:
                ai = rho * avg[i] + one_m_rho * gi
                avg[i] = ai
                denom = vi - ai * ai + eps
            else:
                denom = vi + eps
            inc = (lr * gi) / math.sqrt(denom)
            wi = w[i] - w[i] * wd
            if use_mom:
                mi = mom * mom_buf[i] + inc
                mom_buf[i] = mi
                w[i] = wi - mi
            else:
                w[i] = wi - inc

    @cuda.jit
    def adagrad(w, g, acc, lr, eps, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            ai = acc[i] + sq(gi, q[i], use_q, qs)
            acc[i] = ai
            wi = w[i] - w[i] * wd
            w[i] = wi - (lr * gi) / math.sqrt(ai + eps)

    @cuda.jit
    def sumsq(g, out):
        # One partial sum per block in shared memory, then one atomic add per block.
        tile = cuda.shared.array(_THREADS, dtype=np.float64)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        acc = 0.0
        stride = cuda.gridsize(1)
        while i < g.size:
            x = g[i]
            acc += x * x
            i += stride
        tile[tid] = acc
        cuda.syncthreads()  # every thread's partial sum is in the tile
        s = _THREADS // 2
        while s > 0:
            if tid < s:
                tile[tid] += tile[tid + s]
            cuda.syncthreads()  # this halving step is complete before the next reads it
            s //= 2
        if tid == 0:
            cuda.atomic.add(out, 0, tile[0])

    _cuda_kernels.update(sgd=sgd, adam=adam, rmsprop=rmsprop, adagrad=adagrad, sumsq=sumsq)


def _dflat(a):
    from kernels.gpu import flat

    return flat(a)


def _dummy_like(a):
    """A one-element placeholder for an unused array argument, made once per weight (it lives on the
    weight's device; a new one at every update cost an allocation)."""
    from kernels.gpu import per_array

    return per_array(a, "placeholder", lambda: _import_cuda().device_array(1, dtype=a.dtype))


def sumsq_cuda(g) -> float:
    """Sum of squares of a device array (float64 accumulation), returned to the host."""
    out = _import_cuda().to_device(np.zeros(1, np.float64))
    blocks, threads = launch_1d(min(g.size, 64 * _THREADS))
    _launch(_cuda()["sumsq"], blocks, threads, _dflat(g), out)
    return float(out.copy_to_host()[0])


def sgd_update_cuda(w, g, m, lr, momentum=0.0, nesterov=False, gscale=1.0, clipvalue=0.0, wd_lr=0.0):
    """CUDA variant of `sgd_update_cpu` on device arrays."""
    _check_same(w, g, m)
    t = np.dtype(w.dtype).type
    use_m = m is not None and momentum != 0
    blocks, threads = launch_1d(w.size)
    _launch(_cuda()["sgd"], blocks, threads, _dflat(w), _dflat(g), _dflat(m) if use_m else _dummy_like(w), use_m,
                                    t(lr), t(momentum), bool(nesterov), t(gscale), t(clipvalue), t(wd_lr))


def adam_update_cuda(w, g, m, v, vhat, lr, beta_1, beta_2, epsilon, step, gscale=1.0, clipvalue=0.0,
                     wd_lr=0.0, q=None):
    """CUDA variant of `adam_update_cpu` on device arrays."""
    _check_same(w, g, m, v, vhat, q)
    t = np.dtype(w.dtype).type
    alpha, c1, c2 = adam_coefficients(lr, beta_1, beta_2, step, w.dtype)
    blocks, threads = launch_1d(w.size)
    _launch(_cuda()["adam"], blocks, threads, _dflat(w), _dflat(g), _dflat(m), _dflat(v),
                                     _dflat(vhat) if vhat is not None else _dummy_like(w), vhat is not None,
                                     alpha, c1, c2, t(epsilon), t(gscale), t(clipvalue), t(wd_lr),
                                     *moment_args(g, q, gscale, _dflat))


def rmsprop_update_cuda(w, g, velocity, momentum_buf, average_grad, lr, rho, momentum, epsilon,
                        gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """CUDA variant of `rmsprop_update_cpu` on device arrays."""
    _check_same(w, g, velocity, momentum_buf, average_grad, q)
    t = np.dtype(w.dtype).type
    use_mom = momentum_buf is not None and momentum > 0
    centered = average_grad is not None
    blocks, threads = launch_1d(w.size)
    _launch(_cuda()["rmsprop"], blocks, threads,
        _dflat(w), _dflat(g), _dflat(velocity), _dflat(momentum_buf) if use_mom else _dummy_like(w),
        _dflat(average_grad) if centered else _dummy_like(w), t(lr), t(rho), t(1.0 - rho), t(momentum),
        t(epsilon), centered, use_mom, t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _dflat))


def adagrad_update_cuda(w, g, accumulator, lr, epsilon, gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """CUDA variant of `adagrad_update_cpu` on device arrays."""
    _check_same(w, g, accumulator, q)
    t = np.dtype(w.dtype).type
    blocks, threads = launch_1d(w.size)
    _launch(_cuda()["adagrad"], blocks, threads, _dflat(w), _dflat(g), _dflat(accumulator), t(lr), t(epsilon),
                                        t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _dflat))


# --------------------------------------------------------------------------------------------------
# gradient accumulation helpers (Keras' gradient_accumulation_steps)

@njit(nogil=True, cache=True, error_model="numpy")
def _accumulate(acc, g):
    for i in range(acc.size):
        acc[i] += g[i]


def accumulate_cpu(acc: np.ndarray, g: np.ndarray) -> None:
    """``acc += g`` in place."""
    _check_same(acc, g)
    _accumulate(_flat(acc), _flat(g))


def _build_cuda_helpers() -> None:
    _import_cuda()

    @cuda.jit
    def accumulate(acc, g):
        i = cuda.grid(1)
        if i < acc.size:
            acc[i] += g[i]

    @cuda.jit
    def fill(a, value):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = value

    _cuda_kernels.update(accumulate=accumulate, fill=fill)


def accumulate_cuda(acc, g) -> None:
    """CUDA variant of `accumulate_cpu`."""
    _check_same(acc, g)
    kernels = _cuda()
    if "accumulate" not in kernels:
        _build_cuda_helpers()
    blocks, threads = launch_1d(acc.size)
    _launch(_cuda_kernels["accumulate"], blocks, threads, _dflat(acc), _dflat(g))


def fill_cuda(a, value: float) -> None:
    """Set every element of a device array to `value`."""
    kernels = _cuda()
    if "fill" not in kernels:
        _build_cuda_helpers()
    blocks, threads = launch_1d(a.size)
    _launch(_cuda_kernels["fill"], blocks, threads, _dflat(a), np.dtype(a.dtype).type(value))
