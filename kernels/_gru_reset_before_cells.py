"""The per-element work of a GRU with ``reset_after=False`` (Keras 2's default, Keras 3's option), shared
by the CPU and CUDA kernels (`kernels.gru_reset_before`, `kernels.gpu.gru_reset_before`).

With the reset gate applied *before* the candidate's recurrent GEMM, one step is two GEMMs with
element-wise work around them:

    rec   = hd @ U[:, :2H]                  hd: the previous state (times the recurrent dropout multiplier)
    z, r  = ract(A_z + rec_z), ract(A_r + rec_r)
    rs    = r * hd                          (`gates`: writes rs and keeps it in RH for the backward pass)
    rech  = rs @ U[:, 2H:]
    hh    = act(A_h + rech);  h = z * h_prev + (1 - z) * hh     (`state`: masking and outputs as in
                                                                  `kernels._rnn_cells`)

The bias is one (3H,) vector, added to A with the input projection. Backward mirrors it: `state_backward`
(the update gate and candidate gradients, and the candidate's pre-activation gradient `dah` for the GEMM
``drs = dah @ U[:, 2H:].T``), then `gates_backward` (the reset gate's gradient and the part of the previous
state's gradient that went through ``rs``), then the caller's GEMM ``dz @ U[:, :2H].T``.

Buffers (batch-major): A (B, T, 3H) pre-activations by natural time tau; S (B, T+1, H) states in
processing order; RH (B, T, H) the reset state rs of each processing step t.
"""

from __future__ import annotations


def build(value, grad, compile_fn, one=1.0, zero=0.0):
    """(gates, state, state_backward, gates_backward) compiled by `compile_fn` over the activation
    functions (see `kernels._rnn_cells.build` for `value`, `grad`, `one` and `zero`)."""

    def gates(b, j, t, tau, A, rec, hd, rs, RH, rc, r0, r1, r2):
        H = rs.shape[1]
        az = A[b, tau, j] + rec[b, j]
        ar = A[b, tau, H + j] + rec[b, H + j]
        A[b, tau, j] = az
        A[b, tau, H + j] = ar
        v = value(rc, ar, r0, r1, r2) * hd[b, j]
        rs[b, j] = v
        RH[b, t, j] = v

    def state(b, j, t, tau, ty, A, rech, m, has_mask, zero_out, S, Y, yprev, h, ac, a0, a1, a2, rc, r0, r1, r2):
        H = h.shape[1]
        ah = A[b, tau, 2 * H + j] + rech[b, j]
        A[b, tau, 2 * H + j] = ah
        z = value(rc, A[b, tau, j], r0, r1, r2)
        hn = z * h[b, j] + (one - z) * value(ac, ah, a0, a1, a2)
        if (not has_mask) or m[b, tau] != 0:
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

    def state_backward(b, j, t, tau, dyv, A, m, has_mask, zero_out, S, gy, gs, dA, dah, direct,
                       ac, a0, a1, a2, rc, r0, r1, r2):
        # gy, gs: the gradients carried into this step's output and state; writes dA's z and h blocks (all
        # three when the step is masked), dah (the candidate pre-activation's gradient) and `direct` (the
        # previous state's gradient through z * h_prev, or all of gs on a masked step).
        H = gs.shape[1]
        g_out = gy[b, j] + dyv
        if has_mask and m[b, tau] == 0:
            gy[b, j] = zero if zero_out else g_out
            dA[b, tau, j] = zero
            dA[b, tau, H + j] = zero
            dA[b, tau, 2 * H + j] = zero
            dah[b, j] = zero
            direct[b, j] = gs[b, j]
            return
        gy[b, j] = zero
        dhn = g_out + gs[b, j]
        az = A[b, tau, j]
        ah = A[b, tau, 2 * H + j]
        z = value(rc, az, r0, r1, r2)
        hh = value(ac, ah, a0, a1, a2)
        d_ah = dhn * (one - z) * grad(ac, ah, hh, a0, a1, a2)
        dA[b, tau, j] = dhn * (S[b, t, j] - hh) * grad(rc, az, z, r0, r1, r2)
        dA[b, tau, 2 * H + j] = d_ah
        dah[b, j] = d_ah
        direct[b, j] = dhn * z

    def gates_backward(b, j, t, tau, A, m, has_mask, S, keep, has_keep, scale, drs, dA, dz, direct,
                       rc, r0, r1, r2):
        # drs = dah @ U_h.T: the gradient of rs = r * hd. Writes dA's r block, dz (B, 2H) for the z / r
        # recurrent GEMM, and adds the previous state's gradient through rs to `direct`.
        H = drs.shape[1]
        if has_mask and m[b, tau] == 0:
            dz[b, j] = zero
            dz[b, H + j] = zero
            return
        ar = A[b, tau, H + j]
        r = value(rc, ar, r0, r1, r2)
        hdp = S[b, t, j] * keep[b, j] * scale if has_keep else S[b, t, j]
        dar = drs[b, j] * hdp * grad(rc, ar, r, r0, r1, r2)
        dA[b, tau, H + j] = dar
        dz[b, j] = dA[b, tau, j]
        dz[b, H + j] = dar
        q = drs[b, j] * r
        direct[b, j] = direct[b, j] + (q * keep[b, j] * scale if has_keep else q)

    return compile_fn(gates), compile_fn(state), compile_fn(state_backward), compile_fn(gates_backward)
