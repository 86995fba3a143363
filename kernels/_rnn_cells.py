"""The per-element step of the recurrent cells (SimpleRNN, LSTM, GRU), shared by the CPU and CUDA kernels.

One time step of a recurrent layer is a GEMM (the previous state times the recurrent kernel, `rec`)
followed by element-wise work per (sample b, unit j): the gates, the new state, Keras' masking and the
output. That element-wise work is written once here as plain Python over arrays and scalars, and compiled
twice by `build`: for the CPU (Numba, inlined into a loop over all (b, j)) and for CUDA (a device
function that one thread per (b, j) calls). The activation functions are passed in, compiled for the same
target (a CUDA device function cannot call a CPU-compiled helper).

Layouts (batch-major, so a data-parallel split is a split of dim 0 of every buffer):
    A   (B, T, G*H)  in: x @ W + b for each natural time index tau; out: the gates' pre-activations.
    S   (B, T+1, H)  states in processing order: S[:, 0] the initial state, S[:, t+1] after step t.
    C   (B, T+1, H)  LSTM carries, like S (a (1, 1, 1) dummy for other cells).
    RH  (B, T, H)    GRU: the recurrent candidate projection h @ U_h + b_rh at step t (dummy otherwise);
                     the reset-before GRU keeps r * h there instead.
Gate order is Keras 3's: LSTM (i, f, c, o), GRU (z, r, h).

Masking is Keras 3's (`backend.rnn` with a mask): a masked step keeps the previous state, and its output
is the previous *output* (zeros before the first unmasked step), or zeros with ``zero_output_for_mask``.
"""

from __future__ import annotations

SIMPLE, LSTM, GRU, GRU_RESET_BEFORE = 0, 1, 2, 3
# GRU_RESET_BEFORE (reset_after=False) has kernels of its own (`kernels._gru_reset_before_cells`)
CELL_CODES = {"simple_rnn": SIMPLE, "lstm": LSTM, "gru": GRU, "gru_reset_before": GRU_RESET_BEFORE}
GATES = {SIMPLE: 1, LSTM: 4, GRU: 3, GRU_RESET_BEFORE: 3}


def build(value, grad, compile_fn, one=1.0, zero=0.0):
    """(forward_elem, backward_elem) compiled by `compile_fn` over the activation functions `value`
    (``value(code, x, p0, p1, p2)``) and `grad` (``grad(code, x, y, p0, p1, p2)``).

    `one` and `zero` are the constants the element code uses. The CPU keeps Python floats (float64, as
    literals would be); the CUDA build passes ``np.float32(1)`` / ``np.float32(0)`` so a float32 step has
    no f64 instructions, while float64 data still computes in float64 exactly (0 and 1 are exact in
    float32 and float32 (op) float64 promotes), as `kernels.gpu.scalar_source` does for the activations."""

    def forward_elem(cell, b, j, t, tau, ty, A, rec, brec, m, has_mask, zero_out, S, C, RH, Y, yprev, h, c,
                     ac, a0, a1, a2, rc, r0, r1, r2):
        # One (sample, unit) of step t (natural time tau); writes Y[b, ty, j] when ty >= 0.
        H = h.shape[1]
        keep = (not has_mask) or m[b, tau] != 0
        if cell == SIMPLE:
            a = A[b, tau, j] + rec[b, j]
            A[b, tau, j] = a
            hn = value(ac, a, a0, a1, a2)
        elif cell == LSTM:
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
        else:
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
            hn = z * h[b, j] + (one - z) * value(ac, ah, a0, a1, a2)
        if keep:
            h[b, j] = hn
            y = hn
        elif zero_out:
            y = zero
        else:
            y = yprev[b, j]
        yprev[b, j] = y
        S[b, t + 1, j] = h[b, j]
        if ty >= 0:
            Y[b, ty, j] = y

    def backward_elem(cell, b, j, t, tau, dyv, A, m, has_mask, zero_out, S, C, RH, gy, gs, gc, dA, DRH, dz,
                      direct, ac, a0, a1, a2, rc, r0, r1, r2):
        # One (sample, unit) of step t backward. dyv: the loss gradient of this step's output. gy, gs, gc:
        # gradients carried into this step's output, state and carry. Writes dA[b, tau, :] (the input
        # projection's gradient), dz[b, :] (the recurrent GEMM's), `direct` (the part of the previous
        # state's gradient that does not pass through the recurrent kernel) and the new carry gc.
        H = gs.shape[1]
        G = dz.shape[1] // H
        g_out = gy[b, j] + dyv
        if has_mask and m[b, tau] == 0:
            gy[b, j] = zero if zero_out else g_out
            for k in range(G):
                dA[b, tau, k * H + j] = zero
                dz[b, k * H + j] = zero
            if cell == GRU:
                DRH[b, tau, j] = zero
            direct[b, j] = gs[b, j]
            return
        gy[b, j] = zero
        dhn = g_out + gs[b, j]
        if cell == SIMPLE:
            a = A[b, tau, j]
            da = dhn * grad(ac, a, value(ac, a, a0, a1, a2), a0, a1, a2)
            dA[b, tau, j] = da
            dz[b, j] = da
            direct[b, j] = zero
        elif cell == LSTM:
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
            direct[b, j] = zero
        else:
            az = A[b, tau, j]
            ar = A[b, tau, H + j]
            ah = A[b, tau, 2 * H + j]
            z = value(rc, az, r0, r1, r2)
            r = value(rc, ar, r0, r1, r2)
            hh = value(ac, ah, a0, a1, a2)
            rh = RH[b, t, j]
            dah = dhn * (one - z) * grad(ac, ah, hh, a0, a1, a2)
            daz = dhn * (S[b, t, j] - hh) * grad(rc, az, z, r0, r1, r2)
            dar = dah * rh * grad(rc, ar, r, r0, r1, r2)
            drh = dah * r
            dA[b, tau, j] = daz
            dA[b, tau, H + j] = dar
            dA[b, tau, 2 * H + j] = dah
            DRH[b, tau, j] = drh
            dz[b, j] = daz
            dz[b, H + j] = dar
            dz[b, 2 * H + j] = drh
            direct[b, j] = dhn * z

    return compile_fn(forward_elem), compile_fn(backward_elem)
