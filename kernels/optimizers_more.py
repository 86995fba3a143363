"""Fused update kernels of the less common optimizers: Adadelta, Adamax, Nadam, Ftrl, Lion and Schedule-Free
AdamW (Keras 3's formulas), CPU (Numba, in place on NumPy arrays) and CUDA (one thread per element, compiled on first
use).

They follow kernels/optimizers.py exactly: the gradient is scaled by `gscale` and value-clipped by
`clipvalue` (0 = none), decoupled weight decay ``w -= w * wd_lr`` comes before the optimizer's own
update, arithmetic stays in the weight's dtype, and scalar coefficients (bias corrections, Nadam's
momentum schedule) are computed once per call on the host.
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

# --------------------------------------------------------------------------------------------------
# CPU


@njit(nogil=True, cache=True, error_model="numpy")
def _adadelta(w, g, acc_g, acc_d, lr, rho, one_m_rho, eps, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        ag = rho * acc_g[i] + one_m_rho * squared_grad(gi, q[i], use_q, qs)
        acc_g[i] = ag
        delta = -(np.sqrt(acc_d[i] + eps) * gi) / np.sqrt(ag + eps)
        # per lookup, delta's square is (acc_d + eps) / (ag + eps) times its squared gradient
        d2 = ((acc_d[i] + eps) * (q[i] * qs)) / (ag + eps) if use_q else delta * delta
        acc_d[i] = rho * acc_d[i] + one_m_rho * d2
        wi = w[i] - w[i] * wd
        w[i] = wi + lr * delta


@njit(nogil=True, cache=True, error_model="numpy")
def _adamax(w, g, m, u, lr, one_m_b1, b2, denom_scale, eps, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        mi = m[i] + (gi - m[i]) * one_m_b1
        m[i] = mi
        ui = max(b2 * u[i], q[i] * qs if use_q else abs(gi))
        u[i] = ui
        wi = w[i] - w[i] * wd
        w[i] = wi - (lr * mi) / (denom_scale * (ui + eps))


@njit(nogil=True, cache=True, error_model="numpy")
def _nadam(w, g, m, v, lr, one_m_b1, one_m_b2, c_m, c_g, inv_bc2, eps, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        mi = m[i] + (gi - m[i]) * one_m_b1
        vi = v[i] + (squared_grad(gi, q[i], use_q, qs) - v[i]) * one_m_b2
        m[i] = mi
        v[i] = vi
        m_hat = c_m * mi + c_g * gi
        wi = w[i] - w[i] * wd
        w[i] = wi - (m_hat * lr) / (np.sqrt(vi * inv_bc2) + eps)


@njit(nogil=True, cache=True, error_model="numpy")
def _ftrl(w, g, acc, lin, lr, neg_power, l1, two_l2, two_shrink, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        wi = w[i] - w[i] * wd
        a = acc[i]
        na = a + squared_grad(gi, q[i], use_q, qs)
        pn = na ** neg_power
        li = lin[i] + (gi + two_shrink * wi) - ((pn - a ** neg_power) / lr) * wi
        lin[i] = li
        quadratic = pn / lr + two_l2
        w[i] = (min(max(li, -l1), l1) - li) / quadratic
        acc[i] = na


@njit(nogil=True, cache=True, error_model="numpy")
def _schedule_free(w, g, z, v, lr, b1, one_m_b1, one_m_b2, bc2, eps, avg, keep, gscale, cv, wd, q, use_q, qs):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        y = w[i] - w[i] * wd
        vi = v[i] + (squared_grad(gi, q[i], use_q, qs) - v[i]) * one_m_b2
        v[i] = vi
        zi = z[i] - (lr * gi) / (np.sqrt(vi / bc2) + eps)
        z[i] = zi
        x_new = keep * ((y - one_m_b1 * zi) / b1) + avg * zi  # the updated z, as TensorFlow reads it
        w[i] = one_m_b1 * zi + b1 * x_new


@njit(nogil=True, cache=True, error_model="numpy")
def _lion(w, g, m, lr, b1, one_m_b1, b2, one_m_b2, gscale, cv, wd):
    for i in range(w.size):
        gi = prepared_grad(g[i], gscale, cv)
        wi = w[i] - w[i] * wd
        w[i] = wi - lr * np.sign(m[i] * b1 + gi * one_m_b1)
        m[i] = m[i] * b2 + gi * one_m_b2


def adadelta_update_cpu(w, g, accumulated_grad, accumulated_delta, lr, rho, epsilon, gscale=1.0, clipvalue=0.0,
                        wd_lr=0.0, q=None):
    """Adadelta step in place (Keras 3): ``ag = rho·ag + (1-rho)·g²; d = -sqrt(ad+eps)·g/sqrt(ag+eps);
    ad = rho·ad + (1-rho)·d²; w += lr·d``.

    Args:
        w, g: weight and gradient; accumulated_grad, accumulated_delta: the two slots.
        lr, rho, epsilon: hyperparameters.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
    """
    _check_same(w, g, accumulated_grad, accumulated_delta, q)
    t = w.dtype.type
    _adadelta(_flat(w), _flat(g), _flat(accumulated_grad), _flat(accumulated_delta), t(lr), t(rho), t(1.0 - rho),
              t(epsilon), t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _flat))


def adamax_denominator_scale(beta_1: float, step: int, dtype):
    """``1 - beta_1**step`` in `dtype`, as Keras computes it."""
    t = np.dtype(dtype).type
    return t(t(1) - t(beta_1) ** t(step))


def adamax_update_cpu(w, g, m, u, lr, beta_1, beta_2, epsilon, step, gscale=1.0, clipvalue=0.0, wd_lr=0.0,
                      q=None):
    """Adamax step in place (Keras 3): ``m += (g-m)(1-b1); u = max(b2·u, |g|); w -= lr·m/((1-b1^t)(u+eps))``.

    Args:
        w, g, m, u: weight, gradient, first moment and infinity-norm slots.
        lr, beta_1, beta_2, epsilon: hyperparameters; step: 1-based update count.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
    """
    _check_same(w, g, m, u, q)
    t = w.dtype.type
    _adamax(_flat(w), _flat(g), _flat(m), _flat(u), t(lr), t(1.0 - beta_1), t(beta_2),
            adamax_denominator_scale(beta_1, step, w.dtype), t(epsilon), t(gscale), t(clipvalue), t(wd_lr),
            *moment_args(g, q, gscale, _flat, power=1))


def nadam_coefficients(beta_1: float, beta_2: float, step: int, u_product: float, dtype) -> tuple:
    """(coefficient of m, coefficient of g, 1/(1-beta_2^step)) of Keras 3's Nadam step `step`.

    `u_product` is the product of the momentum schedule ``beta_1·(1 - 0.5·0.96^k)`` for k = 1..step (Keras'
    `_u_product` after this step's update): ``m_hat = u_{t+1}·m/(1 - u_product·u_{t+1}) +
    (1-u_t)·g/(1 - u_product)``.
    """
    t = np.dtype(dtype).type
    u_t = t(beta_1) * (t(1) - t(0.5) * t(0.96) ** t(step))
    u_t1 = t(beta_1) * (t(1) - t(0.5) * t(0.96) ** t(step + 1))
    u_prod = t(u_product)
    c_m = u_t1 / (t(1) - u_prod * u_t1)
    c_g = (t(1) - u_t) / (t(1) - u_prod)
    inv_bc2 = t(1) / (t(1) - t(beta_2) ** t(step))
    return t(c_m), t(c_g), t(inv_bc2)


def nadam_update_cpu(w, g, m, v, lr, beta_1, beta_2, epsilon, step, u_product, gscale=1.0, clipvalue=0.0,
                     wd_lr=0.0, q=None):
    """Nadam step in place (Keras 3): Adam's moments with Nesterov's look-ahead through the momentum
    schedule (see `nadam_coefficients`), ``w -= lr·m_hat/(sqrt(v/(1-b2^t)) + eps)``.

    Args:
        w, g, m, v: weight, gradient, first and second moment slots.
        lr, beta_1, beta_2, epsilon: hyperparameters; step: 1-based update count.
        u_product: the momentum schedule's product up to `step`.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
    """
    _check_same(w, g, m, v, q)
    t = w.dtype.type
    c_m, c_g, inv_bc2 = nadam_coefficients(beta_1, beta_2, step, u_product, w.dtype)
    _nadam(_flat(w), _flat(g), _flat(m), _flat(v), t(lr), t(1.0 - beta_1), t(1.0 - beta_2), c_m, c_g, inv_bc2,
           t(epsilon), t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _flat))


def _ftrl_scalars(t, lr, learning_rate_power, l1, l2, l2_shrinkage, beta):
    l2_total = l2 + beta / (2.0 * lr)
    return (t(lr), t(-learning_rate_power), t(l1), t(2.0 * l2_total), t(2.0 * l2_shrinkage))


def ftrl_update_cpu(w, g, accumulator, linear, lr, learning_rate_power, l1, l2, l2_shrinkage, beta,
                    gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """FTRL-proximal step in place (Keras 3's form).

    ``n' = n + g²; z += g + 2·l2_shrinkage·w - (n'^-p - n^-p)/lr·w; w = (clip(z, -l1, l1) - z) /
    (n'^-p/lr + 2·(l2 + beta/(2·lr))); n = n'`` with p = learning_rate_power.

    Args:
        w, g: weight and gradient; accumulator, linear: the two slots.
        lr, learning_rate_power, l1, l2, l2_shrinkage, beta: hyperparameters.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
    """
    _check_same(w, g, accumulator, linear, q)
    t = w.dtype.type
    _ftrl(_flat(w), _flat(g), _flat(accumulator), _flat(linear),
          *_ftrl_scalars(t, lr, learning_rate_power, l1, l2, l2_shrinkage, beta), t(gscale), t(clipvalue), t(wd_lr),
          *moment_args(g, q, gscale, _flat))


def schedule_free_scalars(lr, beta_1, beta_2, epsilon, step, warmup_steps, dtype) -> tuple:
    """(lr after warmup, beta_1, 1-beta_1, 1-beta_2, 1-beta_2^step, epsilon, 1/step, 1-1/step) in `dtype`, as
    Keras computes them."""
    t = np.dtype(dtype).type
    s = t(step)
    lr = t(lr)
    if warmup_steps > 0:
        lr = t(lr * min(s / t(warmup_steps), t(1)))
    avg = t(t(1) / s)
    return (lr, t(beta_1), t(1.0 - beta_1), t(1.0 - beta_2), t(t(1) - t(beta_2) ** s), t(epsilon), avg, t(t(1) - avg))


def schedule_free_adamw_update_cpu(w, g, z, v, lr, beta_1, beta_2, epsilon, step, warmup_steps=0, gscale=1.0,
                                   clipvalue=0.0, wd_lr=0.0, q=None):
    """Schedule-Free AdamW step in place (Keras 3 on TensorFlow): the weight is ``y``, the momentum slot ``z``
    (it starts as the weight). ``v += (g²-v)(1-b2)``, ``z -= lr·g / (sqrt(v/(1-b2^t)) + eps)``, ``x = (1 - 1/t)·
    (y - (1-b1)·z) / b1 + z/t``, ``y = (1-b1)·z + b1·x``; the rate warms up linearly over `warmup_steps`.
    Keras recovers the average from ``momentum.value``, which on TensorFlow reads the variable after the
    step's own update of z: the updated z is used there too, as TensorFlow computes it (JAX would read the
    old one).

    Args:
        w, g, z, v: weight, gradient, momentum and velocity slots.
        lr, beta_1, beta_2, epsilon, warmup_steps: hyperparameters; step: 1-based update count.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py. q: see `moment_args`.
    """
    _check_same(w, g, z, v, q)
    t = w.dtype.type
    _schedule_free(_flat(w), _flat(g), _flat(z), _flat(v),
                   *schedule_free_scalars(lr, beta_1, beta_2, epsilon, step, warmup_steps, w.dtype), t(gscale),
                   t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _flat))


def lion_update_cpu(w, g, m, lr, beta_1, beta_2, gscale=1.0, clipvalue=0.0, wd_lr=0.0):
    """Lion step in place (Keras 3): ``w -= lr·sign(b1·m + (1-b1)·g); m = b2·m + (1-b2)·g``.

    Args:
        w, g, m: weight, gradient and momentum slot.
        lr, beta_1, beta_2: hyperparameters.
        gscale, clipvalue, wd_lr: see kernels/optimizers.py.
    """
    _check_same(w, g, m)
    t = w.dtype.type
    _lion(_flat(w), _flat(g), _flat(m), t(lr), t(beta_1), t(1.0 - beta_1), t(beta_2), t(1.0 - beta_2), t(gscale),
          t(clipvalue), t(wd_lr))


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

    @cuda.jit
    def adadelta(w, g, acc_g, acc_d, lr, rho, one_m_rho, eps, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            ag = rho * acc_g[i] + one_m_rho * sq(gi, q[i], use_q, qs)
            acc_g[i] = ag
            delta = -(math.sqrt(acc_d[i] + eps) * gi) / math.sqrt(ag + eps)
            d2 = ((acc_d[i] + eps) * (q[i] * qs)) / (ag + eps) if use_q else delta * delta
            acc_d[i] = rho * acc_d[i] + one_m_rho * d2
            wi = w[i] - w[i] * wd
            w[i] = wi + lr * delta

    @cuda.jit
    def adamax(w, g, m, u, lr, one_m_b1, b2, denom_scale, eps, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            mi = m[i] + (gi - m[i]) * one_m_b1
            m[i] = mi
            ui = max(b2 * u[i], q[i] * qs if use_q else abs(gi))
            u[i] = ui
            wi = w[i] - w[i] * wd
            w[i] = wi - (lr * mi) / (denom_scale * (ui + eps))

    @cuda.jit
    def nadam(w, g, m, v, lr, one_m_b1, one_m_b2, c_m, c_g, inv_bc2, eps, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            mi = m[i] + (gi - m[i]) * one_m_b1
            vi = v[i] + (sq(gi, q[i], use_q, qs) - v[i]) * one_m_b2
            m[i] = mi
            v[i] = vi
            wi = w[i] - w[i] * wd
            w[i] = wi - ((c_m * mi + c_g * gi) * lr) / (math.sqrt(vi * inv_bc2) + eps)

    @cuda.jit
    def ftrl(w, g, acc, lin, lr, neg_power, l1, two_l2, two_shrink, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            wi = w[i] - w[i] * wd
            a = acc[i]
            na = a + sq(gi, q[i], use_q, qs)
            pn = na ** neg_power
            li = lin[i] + (gi + two_shrink * wi) - ((pn - a ** neg_power) / lr) * wi
            lin[i] = li
            w[i] = (min(max(li, -l1), l1) - li) / (pn / lr + two_l2)
            acc[i] = na

    @cuda.jit
    def lion(w, g, m, lr, b1, one_m_b1, b2, one_m_b2, gscale, cv, wd):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            wi = w[i] - w[i] * wd
            c = m[i] * b1 + gi * one_m_b1
            one, zero = w.dtype.type(1), w.dtype.type(0)  # typed: a float32 step stays float32
            s = one if c > 0 else (-one if c < 0 else zero)
            w[i] = wi - lr * s
            m[i] = m[i] * b2 + gi * one_m_b2

    @cuda.jit
    def schedule_free(w, g, z, v, lr, b1, one_m_b1, one_m_b2, bc2, eps, avg, keep, gscale, cv, wd, q, use_q, qs):
        i = cuda.grid(1)
        if i < w.size:
            gi = prep(g[i], gscale, cv)
            y = w[i] - w[i] * wd
            vi = v[i] + (sq(gi, q[i], use_q, qs) - v[i]) * one_m_b2
            v[i] = vi
            zi = z[i] - (lr * gi) / (math.sqrt(vi / bc2) + eps)
            z[i] = zi
            x_new = keep * ((y - one_m_b1 * zi) / b1) + avg * zi
            w[i] = one_m_b1 * zi + b1 * x_new

    _cuda_kernels.update(adadelta=adadelta, adamax=adamax, nadam=nadam, ftrl=ftrl, lion=lion,
                         schedule_free=schedule_free)
    return _cuda_kernels


def _launch(name: str, w, *args) -> None:
    from kernels.gpu.launch import launch_grid  # the processor's stream and float32 scalars

    blocks, threads = launch_1d(w.size)
    launch_grid(_build()[name], blocks, threads, *args)


def cuda_kernels() -> dict[str, object]:
    """Every CUDA kernel of this module by name (built on first use; see kernels.gpu.signatures)."""
    return dict(_build())


def adadelta_update_cuda(w, g, accumulated_grad, accumulated_delta, lr, rho, epsilon, gscale=1.0, clipvalue=0.0,
                         wd_lr=0.0, q=None):
    """CUDA variant of `adadelta_update_cpu` on device arrays."""
    _check_same(w, g, accumulated_grad, accumulated_delta, q)
    t = np.dtype(w.dtype).type
    _launch("adadelta", w, _dflat(w), _dflat(g), _dflat(accumulated_grad), _dflat(accumulated_delta), t(lr), t(rho),
            t(1.0 - rho), t(epsilon), t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _dflat))


def adamax_update_cuda(w, g, m, u, lr, beta_1, beta_2, epsilon, step, gscale=1.0, clipvalue=0.0, wd_lr=0.0,
                       q=None):
    """CUDA variant of `adamax_update_cpu` on device arrays."""
    _check_same(w, g, m, u, q)
    t = np.dtype(w.dtype).type
    _launch("adamax", w, _dflat(w), _dflat(g), _dflat(m), _dflat(u), t(lr), t(1.0 - beta_1), t(beta_2),
            adamax_denominator_scale(beta_1, step, w.dtype), t(epsilon), t(gscale), t(clipvalue), t(wd_lr),
            *moment_args(g, q, gscale, _dflat, power=1))


def nadam_update_cuda(w, g, m, v, lr, beta_1, beta_2, epsilon, step, u_product, gscale=1.0, clipvalue=0.0,
                      wd_lr=0.0, q=None):
    """CUDA variant of `nadam_update_cpu` on device arrays."""
    _check_same(w, g, m, v, q)
    t = np.dtype(w.dtype).type
    c_m, c_g, inv_bc2 = nadam_coefficients(beta_1, beta_2, step, u_product, w.dtype)
    _launch("nadam", w, _dflat(w), _dflat(g), _dflat(m), _dflat(v), t(lr), t(1.0 - beta_1), t(1.0 - beta_2), c_m,
            c_g, inv_bc2, t(epsilon), t(gscale), t(clipvalue), t(wd_lr), *moment_args(g, q, gscale, _dflat))


def ftrl_update_cuda(w, g, accumulator, linear, lr, learning_rate_power, l1, l2, l2_shrinkage, beta,
                     gscale=1.0, clipvalue=0.0, wd_lr=0.0, q=None):
    """CUDA variant of `ftrl_update_cpu` on device arrays."""
    _check_same(w, g, accumulator, linear, q)
    t = np.dtype(w.dtype).type
    _launch("ftrl", w, _dflat(w), _dflat(g), _dflat(accumulator), _dflat(linear),
            *_ftrl_scalars(t, lr, learning_rate_power, l1, l2, l2_shrinkage, beta), t(gscale), t(clipvalue),
            t(wd_lr), *moment_args(g, q, gscale, _dflat))


def lion_update_cuda(w, g, m, lr, beta_1, beta_2, gscale=1.0, clipvalue=0.0, wd_lr=0.0):
    """CUDA variant of `lion_update_cpu` on device arrays."""
    _check_same(w, g, m)
    t = np.dtype(w.dtype).type
    _launch("lion", w, _dflat(w), _dflat(g), _dflat(m), t(lr), t(beta_1), t(1.0 - beta_1), t(beta_2),
            t(1.0 - beta_2), t(gscale), t(clipvalue), t(wd_lr))


def schedule_free_adamw_update_cuda(w, g, z, v, lr, beta_1, beta_2, epsilon, step, warmup_steps=0, gscale=1.0,
                                    clipvalue=0.0, wd_lr=0.0, q=None):
    """CUDA variant of `schedule_free_adamw_update_cpu` on device arrays."""
    _check_same(w, g, z, v, q)
    t = np.dtype(w.dtype).type
    _launch("schedule_free", w, _dflat(w), _dflat(g), _dflat(z), _dflat(v),
            *schedule_free_scalars(lr, beta_1, beta_2, epsilon, step, warmup_steps, w.dtype), t(gscale), t(clipvalue),
            t(wd_lr), *moment_args(g, q, gscale, _dflat))
