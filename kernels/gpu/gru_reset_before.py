"""CUDA twin of `kernels.gru_reset_before` (GRU with ``reset_after=False``): per step two device GEMMs
around two element-wise launches (one thread per (sample, unit), the shared
`kernels._gru_reset_before_cells` sources compiled as device functions); `kernels.gpu.recurrent` hands
the reset-before cell over to these with the same arguments.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from kernels import _gru_reset_before_cells as elems
from kernels.gpu import empty, launch, reshaped, zeros
from kernels.gpu.activations import scalar_functions
from kernels.gpu.linear import _column_sums, gemm_cuda
from kernels.gpu.recurrent import (
    _add_row,
    _add_scaled,
    _init_state,
    _last_output,
    _mul_keep,
    _prev_states,
    _scale_rows,
    _steps,
    _store,
    _xd,
)
from kernels.recurrent import RnnSpec

_gates, _state, _state_bwd, _gates_bwd = elems.build(*scalar_functions("float32"), cuda.jit(device=True),
                                                     one=np.float32(1), zero=np.float32(0))


@cuda.jit
def _gates_step(t, tau, A, rec, hd, rs, RH, rc, r0, r1, r2):
    i = cuda.grid(1)
    if i < rs.size:
        H = rs.shape[1]
        _gates(i // H, i % H, t, tau, A, rec, hd, rs, RH, rc, r0, r1, r2)


@cuda.jit
def _state_step(t, tau, ty, A, rech, m, has_mask, zero_out, S, Y, yprev, h, ac, a0, a1, a2, rc, r0, r1, r2):
    i = cuda.grid(1)
    if i < h.size:
        H = h.shape[1]
        _state(i // H, i % H, t, tau, ty, A, rech, m, has_mask, zero_out, S, Y, yprev, h, ac, a0, a1, a2, rc, r0,
               r1, r2)


@cuda.jit
def _state_bwd_step(t, tau, ty, last, dY, A, m, has_mask, zero_out, S, gy, gs, dA, dah, direct,
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
        _state_bwd(b, j, t, tau, dyv, A, m, has_mask, zero_out, S, gy, gs, dA, dah, direct,
                   ac, a0, a1, a2, rc, r0, r1, r2)


@cuda.jit
def _gates_bwd_step(t, tau, A, m, has_mask, S, keep, has_keep, scale, drs, dA, dz, direct, rc, r0, r1, r2):
    i = cuda.grid(1)
    if i < drs.size:
        H = drs.shape[1]
        _gates_bwd(i // H, i % H, t, tau, A, m, has_mask, S, keep, has_keep, scale, drs, dA, dz, direct, rc, r0,
                   r1, r2)


@cuda.jit
def _split_columns(U, left, right):
    # left = U[:, :k], right = U[:, k:] (k = left's columns), as contiguous arrays
    i = cuda.grid(1)
    if i < U.size:
        cols, k = U.shape[1], left.shape[1]
        r, c = i // cols, i % cols
        if c < k:
            left[r, c] = U[r, c]
        else:
            right[r, c - k] = U[r, c]


@cuda.jit
def _join_columns(left, right, out, accumulate):
    # out[:, :k] (+)= left, out[:, k:] (+)= right
    i = cuda.grid(1)
    if i < out.size:
        cols, k = out.shape[1], left.shape[1]
        r, c = i // cols, i % cols
        v = left[r, c] if c < k else right[r, c - k]
        out[r, c] = out[r, c] + v if accumulate else v


@cuda.jit
def _in_time_order(RH, backwards, out):
    # out[b, tau] = RH[b, t] for the processing step t of natural time tau
    i = cuda.grid(1)
    if i < out.size:
        T, H = out.shape[1], out.shape[2]
        b, r = i // (T * H), i % (T * H)
        tau, j = r // H, r % H
        out[b, tau, j] = RH[b, T - 1 - tau if backwards else tau, j]


def _split_u(U, dt):
    H = U.shape[0]
    Uzr, Uh = empty((H, 2 * H), dt), empty((H, H), dt)
    launch(_split_columns, U.size, U, Uzr, Uh)
    return Uzr, Uh


def forward_cuda(spec: RnnSpec, x, W, U, b, mask, h0, y, h_out, A, S, RH, xmask=None, hmask=None, rate=0.0,
                 recurrent_rate=0.0) -> None:
    """Device-array twin of `kernels.gru_reset_before.forward_cpu` (the mask a float device array)."""
    B, T, D = x.shape
    H = U.shape[0]
    dt = y.dtype
    A2 = reshaped(A, B * T, 3 * H)
    gemm_cuda(_xd(x, xmask, rate).reshape(B * T, D), W, A2)
    if b is not None:
        launch(_add_row, A2.size, A2, b)
    Uzr, Uh = _split_u(U, dt)
    h = empty((B, H), dt)
    launch(_init_state, h.size, h0 if h0 is not None else h, h0 is not None, h, S)
    m = mask if mask is not None else zeros((1, 1), dt)
    Y = y if spec.seq_out else reshaped(y, B, 1, H)
    yprev = zeros((B, H), dt)
    rec, rech, hd, rs = empty((B, 2 * H), dt), empty((B, H), dt), empty((B, H), dt), empty((B, H), dt)
    act, ract = spec.act, spec.ract
    for t, tau, ty in _steps(spec, T):
        src = h
        if hmask is not None:
            launch(_mul_keep, h.size, h, hmask, 1.0 / (1.0 - recurrent_rate), hd)
            src = hd
        gemm_cuda(src, Uzr, rec)
        launch(_gates_step, B * H, t, tau, A, rec, src, rs, RH, ract.code, ract.p0, ract.p1, ract.p2)
        gemm_cuda(rs, Uh, rech)
        launch(_state_step, B * H, t, tau, ty, A, rech, m, mask is not None, spec.zero_out, S, Y, yprev, h,
               act.code, act.p0, act.p1, act.p2, ract.code, ract.p0, ract.p1, ract.p2)
    if not spec.seq_out:
        launch(_last_output, y.size, yprev, y)
    if h_out is not None:
        launch(_store, h.size, h, h_out, False)


def backward_cuda(spec: RnnSpec, x, W, U, mask, A, S, RH, dy, dh_out, dx, dW, dU, db, dh0, xmask=None, hmask=None,
                  rate=0.0, recurrent_rate=0.0, accumulate=(False,) * 7) -> None:
    """Device-array twin of `kernels.gru_reset_before.backward_cpu` (same arguments)."""
    B, T, D = x.shape
    H = U.shape[0]
    dt = A.dtype
    acc = tuple(accumulate) + (False,) * (7 - len(accumulate))
    Y = dy if spec.seq_out else reshaped(dy, B, 1, H)
    gs, gy = zeros((B, H), dt), zeros((B, H), dt)
    if dh_out is not None:
        launch(_store, gs.size, dh_out, gs, False)
    dA = empty((B, T, 3 * H), dt)
    dz, dah = empty((B, 2 * H), dt), empty((B, H), dt)
    direct, drs, tmp = empty((B, H), dt), empty((B, H), dt), empty((B, H), dt)
    Uzr, Uh = _split_u(U, dt)
    m = mask if mask is not None else zeros((1, 1), dt)
    keep = hmask if hmask is not None else zeros((1, 1), "uint8")
    scale = 1.0 / (1.0 - recurrent_rate) if hmask is not None else 1.0
    act, ract = spec.act, spec.ract
    for t, tau, ty in reversed(list(_steps(spec, T))):
        launch(_state_bwd_step, B * H, t, tau, ty, t == T - 1, Y, A, m, mask is not None, spec.zero_out, S, gy, gs,
               dA, dah, direct, act.code, act.p0, act.p1, act.p2, ract.code, ract.p0, ract.p1, ract.p2)
        gemm_cuda(dah, Uh, drs, trans_b=True)
        launch(_gates_bwd_step, B * H, t, tau, A, m, mask is not None, S, keep, hmask is not None, scale, drs, dA,
               dz, direct, ract.code, ract.p0, ract.p1, ract.p2)
        gemm_cuda(dz, Uzr, tmp, trans_b=True)
        launch(_add_scaled, gs.size, direct, tmp, keep, hmask is not None, scale, gs)
    dA2 = reshaped(dA, B * T, 3 * H)
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
        launch(_column_sums, 3 * H, dA2, db, acc[3])
    if dU is not None:
        dzr, dh = empty((B * T, 2 * H), dt), empty((B * T, H), dt)
        launch(_split_columns, dA2.size, dA2, dzr, dh)
        hp, rs = empty((B, T, H), dt), empty((B, T, H), dt)
        launch(_prev_states, hp.size, S, keep, hmask is not None, scale, spec.backwards, hp)
        launch(_in_time_order, rs.size, RH, spec.backwards, rs)
        gzr, gh = empty((H, 2 * H), dt), empty((H, H), dt)
        gemm_cuda(reshaped(hp, B * T, H), dzr, gzr, trans_a=True)
        gemm_cuda(reshaped(rs, B * T, H), dh, gh, trans_a=True)
        launch(_join_columns, dU.size, gzr, gh, dU, acc[2])
    if dh0 is not None:
        launch(_store, gs.size, gs, dh0, acc[5])
