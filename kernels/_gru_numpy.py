"""The GRU step (``reset_after=True``) with Keras' default activations (tanh, sigmoid) for the CPU kernels'
fast path, as `kernels._rnn_numpy` does for the LSTM: the gates' transcendentals as whole-array NumPy calls
(SIMD exp and tanh), the rest of the step's arithmetic in one Numba pass. The arithmetic, the saved
buffers (A holds the pre-activations, RH the recurrent candidate projection) and the masking rules are
those of `kernels._rnn_cells`.
"""

from __future__ import annotations

import numpy as np

from kernels._jit import cpu_jit


class GruWork:
    """Scratch buffers of one GRU call (batch B, units H)."""

    def __init__(self, B: int, H: int, dtype):
        self.zr = np.empty((B, 2 * H), dtype)
        self.hh = np.empty((B, H), dtype)


def _sigmoid(z, out):
    np.negative(z, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


@cpu_jit
def state_forward(zr, hh, t, ty, m, tau, has_mask, zero_out, S, Y, yprev, h):
    """The new state ``z * h + (1 - z) * hh`` of a step over the batch (either GRU variant), with masking
    and the output, given the activated gates (zr) and candidate (hh)."""
    B, H = h.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            if keep:
                z = zr[b, j]
                hn = z * h[b, j] + (1.0 - z) * hh[b, j]
                h[b, j] = hn
                yprev[b, j] = hn
            elif zero_out:
                yprev[b, j] = 0.0
            S[b, t + 1, j] = h[b, j]
            if ty >= 0:
                Y[b, ty, j] = yprev[b, j]


def gru_forward_step(t, tau, ty, A, rec, brec, m, has_mask, zero_out, S, RH, Y, yprev, h, w: GruWork) -> None:
    """One step: the pre-activations into A[:, tau] and the candidate projection into RH[:, t] (NumPy),
    the gates, then one Numba pass for the state and output."""
    H = h.shape[1]
    rec += brec
    a = A[:, tau]
    a[:, :2 * H] += rec[:, :2 * H]
    _sigmoid(a[:, :2 * H], w.zr)
    RH[:, t] = rec[:, 2 * H:]
    ah = a[:, 2 * H:]
    ah += w.zr[:, H:] * rec[:, 2 * H:]
    np.tanh(ah, out=w.hh)
    state_forward(w.zr, w.hh, t, ty, m, tau, has_mask, zero_out, S, Y, yprev, h)


@cpu_jit
def _backward_arith(zr, hh, RH, S, t, tau, dY, ty, last, m, has_mask, zero_out, gy, gs, dA, DRH, dz, direct):
    B, H = gs.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            dyv = dY[b, ty, j] if ty >= 0 else (dY[b, 0, j] if last else 0.0)
            g_out = gy[b, j] + dyv
            if not keep:
                gy[b, j] = 0.0 if zero_out else g_out
                direct[b, j] = gs[b, j]
                for k in range(3):
                    dz[b, k * H + j] = 0.0
                    dA[b, tau, k * H + j] = 0.0
                DRH[b, tau, j] = 0.0
                continue
            gy[b, j] = 0.0
            dhn = g_out + gs[b, j]
            z, r, hv = zr[b, j], zr[b, H + j], hh[b, j]
            rh = RH[b, t, j]
            dah = dhn * (1.0 - z) * (1.0 - hv * hv)
            daz = dhn * (S[b, t, j] - hv) * z * (1.0 - z)
            dar = dah * rh * r * (1.0 - r)
            drh = dah * r
            dA[b, tau, j] = daz
            dA[b, tau, H + j] = dar
            dA[b, tau, 2 * H + j] = dah
            DRH[b, tau, j] = drh
            dz[b, j] = daz
            dz[b, H + j] = dar
            dz[b, 2 * H + j] = drh
            direct[b, j] = dhn * z


def gru_backward_step(t, tau, ty, last, dY, A, RH, S, m, has_mask, zero_out, gy, gs, dA, DRH, dz, direct,
                      w: GruWork) -> None:
    """One step backward (see `_rnn_cells.backward_elem`): NumPy recomputes the gates and the candidate,
    one Numba pass does the arithmetic; writes dA[:, tau], DRH[:, tau], dz, direct; updates gy."""
    H = gs.shape[1]
    a = A[:, tau]
    _sigmoid(a[:, :2 * H], w.zr)
    np.tanh(a[:, 2 * H:], out=w.hh)
    _backward_arith(w.zr, w.hh, RH, S, t, tau, dY, ty, last, m, has_mask, zero_out, gy, gs, dA, DRH, dz, direct)


# --- the reset-before GRU (reset_after=False): see kernels._gru_reset_before_cells for the step's layout ---
def reset_before_gates(a, rec, hd, w: GruWork, rs) -> None:
    """The update / reset gates of one step into w.zr (A's z and r blocks get their pre-activations) and
    the reset state ``rs = r * hd``."""
    H = hd.shape[1]
    a[:, :2 * H] += rec
    _sigmoid(a[:, :2 * H], w.zr)
    np.multiply(w.zr[:, H:], hd, out=rs)


def reset_before_candidate(a, rech, w: GruWork) -> None:
    """The candidate's pre-activation into A's h block and its tanh into w.hh."""
    H = rech.shape[1]
    ah = a[:, 2 * H:]
    ah += rech
    np.tanh(ah, out=w.hh)


def reset_before_recompute(a, w: GruWork) -> None:
    """The gates and the candidate of a step from its saved pre-activations (backward)."""
    H = w.hh.shape[1]
    _sigmoid(a[:, :2 * H], w.zr)
    np.tanh(a[:, 2 * H:], out=w.hh)


@cpu_jit
def reset_before_state_backward(zr, hh, S, t, tau, dY, ty, last, m, has_mask, zero_out, gy, gs, dA, dah, direct):
    """`_gru_reset_before_cells.state_backward` over the batch, given the activated gates and candidate."""
    B, H = gs.shape
    for b in range(B):
        keep = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            dyv = dY[b, ty, j] if ty >= 0 else (dY[b, 0, j] if last else 0.0)
            g_out = gy[b, j] + dyv
            if not keep:
                gy[b, j] = 0.0 if zero_out else g_out
                for k in range(3):
                    dA[b, tau, k * H + j] = 0.0
                dah[b, j] = 0.0
                direct[b, j] = gs[b, j]
                continue
            gy[b, j] = 0.0
            dhn = g_out + gs[b, j]
            z, hv = zr[b, j], hh[b, j]
            d_ah = dhn * (1.0 - z) * (1.0 - hv * hv)
            dA[b, tau, j] = dhn * (S[b, t, j] - hv) * z * (1.0 - z)
            dA[b, tau, 2 * H + j] = d_ah
            dah[b, j] = d_ah
            direct[b, j] = dhn * z


@cpu_jit
def reset_before_gates_backward(zr, S, t, tau, m, has_mask, keep, has_keep, scale, drs, dA, dz, direct):
    """`_gru_reset_before_cells.gates_backward` over the batch, given the activated gates."""
    B, H = drs.shape
    for b in range(B):
        kept = (not has_mask) or m[b, tau] != 0
        for j in range(H):
            if not kept:
                dz[b, j] = 0.0
                dz[b, H + j] = 0.0
                continue
            r = zr[b, H + j]
            mult = keep[b, j] * scale if has_keep else 1.0
            dar = drs[b, j] * S[b, t, j] * mult * r * (1.0 - r)
            dA[b, tau, H + j] = dar
            dz[b, j] = dA[b, tau, j]
            dz[b, H + j] = dar
            direct[b, j] = direct[b, j] + drs[b, j] * r * mult
