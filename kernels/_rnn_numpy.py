"""The LSTM step with Keras' default activations (tanh, sigmoid) for the CPU kernels' fast path: the
gates' transcendentals as whole-array NumPy calls, the rest of each step's arithmetic in one Numba pass.

NumPy's SIMD tanh and exp made this ten times faster than the per-element Numba pass of
`kernels._rnn_cells` at imdb_lstm's shape (batch 32, 128 units: 0.23 ms vs 2.3 ms per forward step on this
shared machine; libm's scalar tanh is slow), and the arithmetic in Numba (no temporaries) halved it
again. The arithmetic and the masking rules are those of `_rnn_cells`.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit import cpu_jit


class LstmWork:
    """Scratch buffers of one LSTM call (batch B, units H)."""

    def __init__(self, B: int, H: int, dtype):
        self.gates = np.empty((B, 4 * H), dtype)
        self.tc = np.empty((B, H), dtype)


def _activate(z, H, out):
    # out = sigmoid(z) for i, f, o and tanh(z) for the candidate block
    np.negative(z, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)
    np.tanh(z[:, 2 * H:3 * H], out=out[:, 2 * H:3 * H])


@cpu_jit
def _forward_arith(g, t, ty, m, tau, has_mask, zero_out, S, C, Y, yprev, h, c):
    # The arithmetic of `_rnn_cells.forward_elem` for an LSTM, given the activated gates g; tanh(c_t)
    # through exp (one scalar exp is cheaper than libm's tanh).
    B, H = h.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            if keep:
                cn = g[b, H + j] * c[b, j] + g[b, j] * g[b, 2 * H + j]
                hn = g[b, 3 * H + j] * (1.0 - 2.0 / (math.exp(2.0 * cn) + 1.0))
                c[b, j] = cn
                h[b, j] = hn
                yprev[b, j] = hn
            elif zero_out:
                yprev[b, j] = 0.0
            S[b, t + 1, j] = h[b, j]
            C[b, t + 1, j] = c[b, j]
            if ty >= 0:
                Y[b, ty, j] = yprev[b, j]


def lstm_forward_step(t, tau, ty, A, rec, m, has_mask, zero_out, S, C, Y, yprev, h, c, w: LstmWork) -> None:
    """One step: A[:, tau] += rec (the pre-activations), NumPy's gates, then one Numba pass for the state,
    carry and output."""
    H = h.shape[1]
    z = A[:, tau]
    z += rec
    _activate(z, H, w.gates)
    _forward_arith(w.gates, t, ty, m, tau, has_mask, zero_out, S, C, Y, yprev, h, c)


@cpu_jit
def _backward_arith(g, tc, C, t, tau, dY, ty, last, m, has_mask, zero_out, gy, gs, gc, dA, dz, direct):
    # The arithmetic of `_rnn_cells.backward_elem` for an LSTM, given the activated gates g and tanh(c_t).
    B, H = gs.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            dyv = dY[b, ty, j] if ty >= 0 else (dY[b, 0, j] if last else 0.0)
            g_out = gy[b, j] + dyv
            if not keep:
                gy[b, j] = 0.0 if zero_out else g_out
                direct[b, j] = gs[b, j]
                for k in range(4):
                    dz[b, k * H + j] = 0.0
                    dA[b, tau, k * H + j] = 0.0
                continue
            gy[b, j] = 0.0
            direct[b, j] = 0.0
            dhn = g_out + gs[b, j]
            i, f, gg, o = g[b, j], g[b, H + j], g[b, 2 * H + j], g[b, 3 * H + j]
            tcj = tc[b, j]
            dcn = gc[b, j] + dhn * o * (1.0 - tcj * tcj)
            gc[b, j] = dcn * f
            di = dcn * gg * i * (1.0 - i)
            df = dcn * C[b, t, j] * f * (1.0 - f)
            dg = dcn * i * (1.0 - gg * gg)
            do = dhn * tcj * o * (1.0 - o)
            dz[b, j] = di
            dz[b, H + j] = df
            dz[b, 2 * H + j] = dg
            dz[b, 3 * H + j] = do
            dA[b, tau, j] = di
            dA[b, tau, H + j] = df
            dA[b, tau, 2 * H + j] = dg
            dA[b, tau, 3 * H + j] = do


def lstm_backward_step(t, tau, ty, last, dY, A, m, has_mask, zero_out, C, gy, gs, gc, dA, dz, direct,
                       w: LstmWork) -> None:
    """One step backward (see `_rnn_cells.backward_elem`): NumPy recomputes the gates and tanh(c_t), one
    Numba pass does the arithmetic; writes dA[:, tau], dz, direct; updates gy and gc."""
    H = gs.shape[1]
    _activate(A[:, tau], H, w.gates)
    np.tanh(C[:, t + 1], out=w.tc)
    _backward_arith(w.gates, w.tc, C, t, tau, dY, ty, last, m, has_mask, zero_out, gy, gs, gc, dA, dz, direct)
