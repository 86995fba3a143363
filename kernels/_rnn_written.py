"""The CPU's recurrent steps with the per-(sample, unit) math written out in the loop, for the cells and
activations that take no whole-array NumPy step (SimpleRNN; LSTM and reset-after GRU with activations other
than tanh / sigmoid).

The CUDA kernels share one per-element function (`kernels._rnn_cells`), which takes 17 arrays. Called from
a Numba loop on the CPU, those arrays cost ~120 ns of reference counting per element, 25 times the
arithmetic: 0.4 ms a step at batch 32 x 100 units. These loops pass scalars only, to the activations. The
maths, the buffers and their layouts are `kernels._rnn_cells`'s, element for element.
"""

from __future__ import annotations

import math

from numba import njit

from kernels._jit import cpu_jit
from kernels.activations import SIGMOID, TANH, _act_grad, _act_value

# The 27-way activation switch is a call (inlined at every call site it made the first compilation take
# minutes); the default tanh / sigmoid are inlined in front of it.
_value_any = njit(cache=True)(_act_value)
_grad_any = njit(cache=True)(_act_grad)


@njit(inline="always")
def value(code, x, p0, p1, p2):
    if code == TANH:  # through exp: libm's scalar tanh cost 4x an exp here
        return 1.0 - 2.0 / (math.exp(2.0 * x) + 1.0)
    if code == SIGMOID:
        return 1.0 / (1.0 + math.exp(-x))
    return _value_any(code, x, p0, p1, p2)


@njit(inline="always")
def grad(code, x, y, p0, p1, p2):
    if code == TANH:
        return 1.0 - y * y
    if code == SIGMOID:
        return y * (1.0 - y)
    return _grad_any(code, x, y, p0, p1, p2)


@njit(inline="always")
def _out_grad(gy, dY, b, j, ty, last):
    """The gradient reaching this step's output: carried (gy) plus the loss's at this step."""
    if ty >= 0:
        return gy[b, j] + dY[b, ty, j]
    if last:
        return gy[b, j] + dY[b, 0, j]
    return gy[b, j]


@njit(inline="always")
def _emit(b, j, t, ty, keep, zero_out, hn, S, Y, yprev, h):
    """The state, the output (kept, zero or repeated for a masked step) and the saved state."""
    if keep:
        h[b, j] = hn
        y = hn
    elif zero_out:
        y = 0.0
    else:
        y = yprev[b, j]
    yprev[b, j] = y
    S[b, t + 1, j] = h[b, j]
    if ty >= 0:
        Y[b, ty, j] = y


@cpu_jit
def simple_forward_step(t, tau, ty, A, rec, m, has_mask, zero_out, S, Y, yprev, h, ac, a0, a1, a2):
    B, H = h.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            a = A[b, tau, j] + rec[b, j]
            A[b, tau, j] = a
            _emit(b, j, t, ty, keep, zero_out, value(ac, a, a0, a1, a2), S, Y, yprev, h)


@cpu_jit
def simple_backward_step(tau, ty, last, dY, A, m, has_mask, zero_out, gy, gs, dA, dz, direct, ac, a0, a1, a2):
    B, H = gs.shape
    for b in range(B):
        masked = has_mask and m[b, tau] == 0
        for j in range(H):
            g_out = _out_grad(gy, dY, b, j, ty, last)
            if masked:
                gy[b, j] = 0.0 if zero_out else g_out
                dA[b, tau, j] = 0.0
                dz[b, j] = 0.0
                direct[b, j] = gs[b, j]
                continue
            gy[b, j] = 0.0
            a = A[b, tau, j]
            da = (g_out + gs[b, j]) * grad(ac, a, value(ac, a, a0, a1, a2), a0, a1, a2)
            dA[b, tau, j] = da
            dz[b, j] = da
            direct[b, j] = 0.0


@cpu_jit
def lstm_forward_step(t, tau, ty, A, rec, m, has_mask, zero_out, S, C, Y, yprev, h, c, ac, a0, a1, a2, rc, r0, r1,
                      r2):
    B, H = h.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            ai = A[b, tau, j] + rec[b, j]
            af = A[b, tau, H + j] + rec[b, H + j]
            ag = A[b, tau, 2 * H + j] + rec[b, 2 * H + j]
            ao = A[b, tau, 3 * H + j] + rec[b, 3 * H + j]
            A[b, tau, j] = ai
            A[b, tau, H + j] = af
            A[b, tau, 2 * H + j] = ag
            A[b, tau, 3 * H + j] = ao
            i = value(rc, ai, r0, r1, r2)
            f = value(rc, af, r0, r1, r2)
            g = value(ac, ag, a0, a1, a2)
            o = value(rc, ao, r0, r1, r2)
            cn = f * c[b, j] + i * g
            hn = o * value(ac, cn, a0, a1, a2)
            if keep:
                c[b, j] = cn
            C[b, t + 1, j] = c[b, j]
            _emit(b, j, t, ty, keep, zero_out, hn, S, Y, yprev, h)


@cpu_jit
def lstm_backward_step(t, tau, ty, last, dY, A, m, has_mask, zero_out, C, gy, gs, gc, dA, dz, direct, ac, a0, a1,
                       a2, rc, r0, r1, r2):
    B, H = gs.shape
    for b in range(B):
        masked = has_mask and m[b, tau] == 0
        for j in range(H):
            g_out = _out_grad(gy, dY, b, j, ty, last)
            if masked:
                gy[b, j] = 0.0 if zero_out else g_out
                for k in range(4):
                    dA[b, tau, k * H + j] = 0.0
                    dz[b, k * H + j] = 0.0
                direct[b, j] = gs[b, j]
                continue
            gy[b, j] = 0.0
            dhn = g_out + gs[b, j]
            ai = A[b, tau, j]
            af = A[b, tau, H + j]
            ag = A[b, tau, 2 * H + j]
            ao = A[b, tau, 3 * H + j]
            i = value(rc, ai, r0, r1, r2)
            f = value(rc, af, r0, r1, r2)
            g = value(ac, ag, a0, a1, a2)
            o = value(rc, ao, r0, r1, r2)
            cn = C[b, t + 1, j]
            tc = value(ac, cn, a0, a1, a2)
            dcn = gc[b, j] + dhn * o * grad(ac, cn, tc, a0, a1, a2)
            di = dcn * g * grad(rc, ai, i, r0, r1, r2)
            df = dcn * C[b, t, j] * grad(rc, af, f, r0, r1, r2)
            dg = dcn * i * grad(ac, ag, g, a0, a1, a2)
            do = dhn * tc * grad(rc, ao, o, r0, r1, r2)
            gc[b, j] = dcn * f
            dA[b, tau, j] = di
            dA[b, tau, H + j] = df
            dA[b, tau, 2 * H + j] = dg
            dA[b, tau, 3 * H + j] = do
            dz[b, j] = di
            dz[b, H + j] = df
            dz[b, 2 * H + j] = dg
            dz[b, 3 * H + j] = do
            direct[b, j] = 0.0


@cpu_jit
def gru_forward_step(t, tau, ty, A, rec, brec, m, has_mask, zero_out, S, RH, Y, yprev, h, ac, a0, a1, a2, rc, r0,
                     r1, r2):
    B, H = h.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            rz = rec[b, j] + brec[j]
            rr = rec[b, H + j] + brec[H + j]
            rh = rec[b, 2 * H + j] + brec[2 * H + j]
            az = A[b, tau, j] + rz
            ar = A[b, tau, H + j] + rr
            z = value(rc, az, r0, r1, r2)
            r = value(rc, ar, r0, r1, r2)
            ah = A[b, tau, 2 * H + j] + r * rh
            A[b, tau, j] = az
            A[b, tau, H + j] = ar
            A[b, tau, 2 * H + j] = ah
            RH[b, t, j] = rh
            hn = z * h[b, j] + (1.0 - z) * value(ac, ah, a0, a1, a2)
            _emit(b, j, t, ty, keep, zero_out, hn, S, Y, yprev, h)


@cpu_jit
def gru_backward_step(t, tau, ty, last, dY, A, m, has_mask, zero_out, S, RH, gy, gs, dA, DRH, dz, direct, ac, a0,
                      a1, a2, rc, r0, r1, r2):
    B, H = gs.shape
    for b in range(B):
        masked = has_mask and m[b, tau] == 0
        for j in range(H):
            g_out = _out_grad(gy, dY, b, j, ty, last)
            if masked:
                gy[b, j] = 0.0 if zero_out else g_out
                for k in range(3):
                    dA[b, tau, k * H + j] = 0.0
                    dz[b, k * H + j] = 0.0
                DRH[b, tau, j] = 0.0
                direct[b, j] = gs[b, j]
                continue
            gy[b, j] = 0.0
            dhn = g_out + gs[b, j]
            az = A[b, tau, j]
            ar = A[b, tau, H + j]
            ah = A[b, tau, 2 * H + j]
            z = value(rc, az, r0, r1, r2)
            r = value(rc, ar, r0, r1, r2)
            hh = value(ac, ah, a0, a1, a2)
            rh = RH[b, t, j]
            dah = dhn * (1.0 - z) * grad(ac, ah, hh, a0, a1, a2)
            daz = dhn * (S[b, t, j] - hh) * grad(rc, az, z, r0, r1, r2)
            dar = dah * rh * grad(rc, ar, r, r0, r1, r2)
            dA[b, tau, j] = daz
            dA[b, tau, H + j] = dar
            dA[b, tau, 2 * H + j] = dah
            DRH[b, tau, j] = dah * r
            dz[b, j] = daz
            dz[b, H + j] = dar
            dz[b, 2 * H + j] = dah * r
            direct[b, j] = dhn * z
