"""CUDA twins of `kernels.recurrent`: the same algorithm with device GEMMs and one thread per (sample,
unit) for each step's element-wise pass (the shared `kernels._rnn_cells` sources compiled as device
functions). Per step: one GEMM and one element-wise launch forward; one element-wise launch, one GEMM and
one add backward. The input projection and the dW / dx / dU products cover all steps in one GEMM each.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels import _rnn_cells as cells
from kernels.gpu import empty, launch, reshaped, zeros
from kernels.gpu.activations import scalar_functions
from kernels.gpu.linear import _column_sums, gemm_cuda
from kernels.recurrent import RnnSpec

# The activations with float32 constants (kernels/gpu/scalar_source.py), and the cells' own 1 and 0 as
# float32 too, so a float32 step has no f64 instructions; the recurrent layers' activations (tanh, sigmoid,
# relu, ...) have constants exact in float32, so float64 steps are unchanged.
_fwd_elem, _bwd_elem = cells.build(*scalar_functions("float32"), cuda.jit(device=True), one=np.float32(1),
                                   zero=np.float32(0))


@cuda.jit
def _forward_step(cell, t, tau, ty, A, rec, brec, m, has_mask, zero_out, S, C, RH, Y, yprev, h, c,
                  ac, a0, a1, a2, rc, r0, r1, r2):
    i = cuda.grid(1)
    if i < h.size:
        H = h.shape[1]
        _fwd_elem(cell, i // H, i % H, t, tau, ty, A, rec, brec, m, has_mask, zero_out, S, C, RH, Y, yprev, h, c,
                  ac, a0, a1, a2, rc, r0, r1, r2)


@cuda.jit
def _backward_step(cell, t, tau, ty, last, dY, A, m, has_mask, zero_out, S, C, RH, gy, gs, gc, dA, DRH, dz, direct,
                   ac, a0, a1, a2, rc, r0, r1, r2):
    i = cuda.grid(1)
    if i < gs.size:
        H = gs.shape[1]
        b, j = i // H, i % H
        if ty >= 0:
            dyv = dY[b, ty, j]
        elif last:
            dyv = dY[b, 0, j]
        else:
            dyv = dY.dtype.type(0)  # typed zero: a float32 step stays float32
        _bwd_elem(cell, b, j, t, tau, dyv, A, m, has_mask, zero_out, S, C, RH, gy, gs, gc, dA, DRH, dz, direct,
                  ac, a0, a1, a2, rc, r0, r1, r2)


@cuda.jit
def _scale_rows(x, keep, scale, out, accumulate):
    # out[b, t, d] (+)= x[b, t, d] * keep[b, d] * scale (x, out: (B, T, D))
    i = cuda.grid(1)
    if i < x.size:
        T, D = x.shape[1], x.shape[2]
        b, r = i // (T * D), i % (T * D)
        t, d = r // D, r % D
        v = x[b, t, d] * keep[b, d] * scale
        out[b, t, d] = out[b, t, d] + v if accumulate else v


@cuda.jit
def _add_row(a, v):
    i = cuda.grid(1)
    if i < a.size:
        cols = v.size
        a[i // cols, i % cols] += v[i % cols]


@cuda.jit
def _init_state(src, has_src, work, S):
    # work = src or 0; S[:, 0] = work
    i = cuda.grid(1)
    if i < work.size:
        H = work.shape[1]
        b, j = i // H, i % H
        v = src[b, j] if has_src else 0.0
        work[b, j] = v
        S[b, 0, j] = v


@cuda.jit
def _mul_keep(h, keep, scale, out):
    i = cuda.grid(1)
    if i < h.size:
        H = h.shape[1]
        b, j = i // H, i % H
        out[b, j] = h[b, j] * keep[b, j] * scale


@cuda.jit
def _add_scaled(direct, tmp, keep, has_keep, scale, gs):
    i = cuda.grid(1)
    if i < gs.size:
        H = gs.shape[1]
        b, j = i // H, i % H
        gs[b, j] = direct[b, j] + (tmp[b, j] * keep[b, j] * scale if has_keep else tmp[b, j])


@cuda.jit
def _store(src, dst, accumulate):
    i = cuda.grid(1)
    if i < src.size:
        H = src.shape[1]
        b, j = i // H, i % H
        dst[b, j] = dst[b, j] + src[b, j] if accumulate else src[b, j]


@cuda.jit
def _prev_states(S, keep, has_keep, scale, backwards, out):
    # out[b, tau] = the state before natural step tau (times the recurrent dropout multiplier)
    i = cuda.grid(1)
    if i < out.size:
        T, H = out.shape[1], out.shape[2]
        b, r = i // (T * H), i % (T * H)
        tau, j = r // H, r % H
        t = T - 1 - tau if backwards else tau
        v = S[b, t, j]
        out[b, tau, j] = v * keep[b, j] * scale if has_keep else v


@cuda.jit
def _recurrent_grad(dA, DRH, out):
    # out = dA with the GRU candidate block replaced by the recurrent projection's gradient
    i = cuda.grid(1)
    if i < out.size:
        T, GH = out.shape[1], out.shape[2]
        H = DRH.shape[2]
        b, r = i // (T * GH), i % (T * GH)
        t, k = r // GH, r % GH
        out[b, t, k] = DRH[b, t, k - 2 * H] if k >= 2 * H else dA[b, t, k]


@cuda.jit
def _last_output(yprev, y):
    i = cuda.grid(1)
    if i < y.size:
        H = y.shape[1]
        y[i // H, i % H] = yprev[i // H, i % H]


def _dummy(dtype):
    return zeros((1, 1, 1), dtype)


def _steps(spec: RnnSpec, T: int):
    for t in range(T):
        tau = T - 1 - t if spec.backwards else t
        yield t, tau, ((tau if spec.flip_out else t) if spec.seq_out else -1)


def _xd(x, xmask, rate):
    """x times the input dropout multiplier (a new device array), or x."""
    if xmask is None:
        return x
    out = empty(x.shape, x.dtype)
    launch(_scale_rows, x.size, x, xmask, 1.0 / (1.0 - rate), out, False)
    return out


def recurrent_forward_cuda(spec: RnnSpec, x, W, U, b, brec, mask, h0, c0, y, h_out, c_out, A, S, C, RH,
                           xmask=None, hmask=None, rate=0.0, recurrent_rate=0.0) -> None:
    """Device-array twin of `kernels.recurrent.recurrent_forward_cpu` (same arguments). The mask must be
    a float device array of x's dtype (the op casts it)."""
    if spec.cell == cells.GRU_RESET_BEFORE:
        from kernels.gpu import gru_reset_before

        return gru_reset_before.forward_cuda(spec, x, W, U, b, mask, h0, y, h_out, A, S, RH, xmask, hmask, rate,
                                             recurrent_rate)
    B, T, D = x.shape
    H, GH = U.shape
    dt = y.dtype
    xd = _xd(x, xmask, rate)
    A2 = reshaped(A, B * T, GH)
    gemm_cuda(reshaped(xd, B * T, D), W, A2)
    if b is not None:
        launch(_add_row, A2.size, A2, b)
    h, c = empty((B, H), dt), zeros((B, H), dt)
    launch(_init_state, h.size, h0 if h0 is not None else h, h0 is not None, h, S)
    C_ = C if C is not None else _dummy(dt)
    if C is not None:
        launch(_init_state, c.size, c0 if c0 is not None else c, c0 is not None, c, C)
    RH_ = RH if RH is not None else _dummy(dt)
    brec_ = brec if brec is not None else zeros((GH,), dt)
    m = mask if mask is not None else zeros((1, 1), dt)
    Y = y if spec.seq_out else reshaped(y, B, 1, H)
    yprev = zeros((B, H), dt)
    rec, hd = empty((B, GH), dt), empty((B, H), dt)
    act, ract = spec.act, spec.ract
    for t, tau, ty in _steps(spec, T):
        if hmask is not None:
            launch(_mul_keep, h.size, h, hmask, 1.0 / (1.0 - recurrent_rate), hd)
            gemm_cuda(hd, U, rec)
        else:
            gemm_cuda(h, U, rec)
        launch(_forward_step, B * H, spec.cell, t, tau, ty, A, rec, brec_, m, mask is not None, spec.zero_out, S,
               C_, RH_, Y, yprev, h, c, act.code, act.p0, act.p1, act.p2, ract.code, ract.p0, ract.p1, ract.p2)
    if not spec.seq_out:
        launch(_last_output, y.size, yprev, y)
    if h_out is not None:
        launch(_store, h.size, h, h_out, False)
    if c_out is not None:
        launch(_store, c.size, c, c_out, False)


def recurrent_backward_cuda(spec: RnnSpec, x, W, U, mask, A, S, C, RH, dy, dh_out, dc_out, dx, dW, dU, db, dbrec,
                            dh0, dc0, xmask=None, hmask=None, rate=0.0, recurrent_rate=0.0,
                            accumulate=(False,) * 7) -> None:
    """Device-array twin of `kernels.recurrent.recurrent_backward_cpu` (same arguments)."""
    if spec.cell == cells.GRU_RESET_BEFORE:
        from kernels.gpu import gru_reset_before

        return gru_reset_before.backward_cuda(spec, x, W, U, mask, A, S, RH, dy, dh_out, dx, dW, dU, db, dh0,
                                              xmask, hmask, rate, recurrent_rate, accumulate)
    B, T, D = x.shape
    H, GH = U.shape
    dt = A.dtype
    acc = tuple(accumulate) + (False,) * (7 - len(accumulate))
    Y = dy if spec.seq_out else reshaped(dy, B, 1, H)
    gs, gc, gy = zeros((B, H), dt), zeros((B, H), dt), zeros((B, H), dt)
    if dh_out is not None:
        launch(_store, gs.size, dh_out, gs, False)
    if dc_out is not None:
        launch(_store, gc.size, dc_out, gc, False)
    dA = empty((B, T, GH), dt)
    DRH = empty((B, T, H), dt) if spec.cell == cells.GRU else _dummy(dt)
    dz, direct, tmp = empty((B, GH), dt), empty((B, H), dt), empty((B, H), dt)
    m = mask if mask is not None else zeros((1, 1), dt)
    keep = hmask if hmask is not None else zeros((1, 1), "uint8")
    hscale = 1.0 / (1.0 - recurrent_rate) if hmask is not None else 1.0
    C_ = C if C is not None else _dummy(dt)
    RH_ = RH if RH is not None else _dummy(dt)
    act, ract = spec.act, spec.ract
    for t, tau, ty in reversed(list(_steps(spec, T))):
        launch(_backward_step, B * H, spec.cell, t, tau, ty, t == T - 1, Y, A, m, mask is not None, spec.zero_out,
               S, C_, RH_, gy, gs, gc, dA, DRH, dz, direct, act.code, act.p0, act.p1, act.p2, ract.code, ract.p0,
               ract.p1, ract.p2)
        gemm_cuda(dz, U, tmp, trans_b=True)
        launch(_add_scaled, gs.size, direct, tmp, keep, hmask is not None, hscale, gs)
    dA2 = reshaped(dA, B * T, GH)
    if dW is not None:
        gemm_cuda(_xd(x, xmask, rate).reshape(B * T, D), dA2, dW, trans_a=True, accumulate=acc[1])
    if dx is not None:
        if xmask is None:
            gemm_cuda(dA2, W, reshaped(dx, B * T, D), trans_b=True, accumulate=acc[0])
        else:
            g = empty((B, T, D), dt)
            gemm_cuda(dA2, W, reshaped(g, B * T, D), trans_b=True)
            launch(_scale_rows, g.size, g, xmask, 1.0 / (1.0 - rate), dx, acc[0])
    if db is not None:
        launch(_column_sums, GH, dA2, db, acc[3])
    if dU is not None or dbrec is not None:
        dR = dA
        if spec.cell == cells.GRU:
            dR = empty((B, T, GH), dt)
            launch(_recurrent_grad, dR.size, dA, DRH, dR)
        dR2 = reshaped(dR, B * T, GH)
        if dU is not None:
            hp = empty((B, T, H), dt)
            launch(_prev_states, hp.size, S, keep, hmask is not None, hscale, spec.backwards, hp)
            gemm_cuda(reshaped(hp, B * T, H), dR2, dU, trans_a=True, accumulate=acc[2])
        if dbrec is not None:
            launch(_column_sums, GH, dR2, dbrec, acc[4])
    if dh0 is not None:
        launch(_store, gs.size, gs, dh0, acc[5])
    if dc0 is not None:
        launch(_store, gc.size, gc, dc0, acc[6])
