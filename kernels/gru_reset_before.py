"""CPU kernels of the GRU with ``reset_after=False`` (the reset gate applied before the candidate's
recurrent GEMM; one (3H,) bias). `kernels.recurrent.recurrent_forward_cpu` / `recurrent_backward_cpu`
hand a spec with cell `kernels._rnn_cells.GRU_RESET_BEFORE` over to these, with the same arguments.

Per step: two GEMMs (``hd @ U[:, :2H]``, then ``(r * hd) @ U[:, 2H:]``) around two Numba passes
(`kernels._gru_reset_before_cells`; with tanh / sigmoid the gates are whole-array NumPy calls and the
passes only do the arithmetic, `kernels._gru_numpy`); backward the same in reverse, then dW, dx, db and the two column
blocks of dU as GEMMs over all steps at once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels import _gru_numpy as fast
from kernels import _gru_reset_before_cells as elems
from kernels._jit import cpu_jit, store
from kernels.activations import SIGMOID, TANH
from kernels.recurrent import RnnSpec, _add_scaled, _grad, _step_order, _value, scaled_mask

_gates, _state, _state_bwd, _gates_bwd = elems.build(_value, _grad, njit(inline="always"))


@cpu_jit
def _gates_step(t, tau, A, rec, hd, rs, RH, rc, r0, r1, r2):
    B, H = rs.shape
    for b in range(B):
        for j in range(H):
            _gates(b, j, t, tau, A, rec, hd, rs, RH, rc, r0, r1, r2)


@cpu_jit
def _state_step(t, tau, ty, A, rech, m, has_mask, zero_out, S, Y, yprev, h, ac, a0, a1, a2, rc, r0, r1, r2):
    B, H = h.shape
    for b in range(B):
        for j in range(H):
            _state(b, j, t, tau, ty, A, rech, m, has_mask, zero_out, S, Y, yprev, h, ac, a0, a1, a2, rc, r0, r1,
                   r2)


@cpu_jit
def _state_bwd_step(t, tau, ty, last, dY, A, m, has_mask, zero_out, S, gy, gs, dA, dah, direct,
                    ac, a0, a1, a2, rc, r0, r1, r2):
    B, H = gs.shape
    for b in range(B):
        for j in range(H):
            if ty >= 0:
                dyv = dY[b, ty, j]
            elif last:
                dyv = dY[b, 0, j]
            else:
                dyv = 0.0
            _state_bwd(b, j, t, tau, dyv, A, m, has_mask, zero_out, S, gy, gs, dA, dah, direct,
                       ac, a0, a1, a2, rc, r0, r1, r2)


@cpu_jit
def _gates_bwd_step(t, tau, A, m, has_mask, S, keep, has_keep, scale, drs, dA, dz, direct, rc, r0, r1, r2):
    B, H = drs.shape
    for b in range(B):
        for j in range(H):
            _gates_bwd(b, j, t, tau, A, m, has_mask, S, keep, has_keep, scale, drs, dA, dz, direct, rc, r0, r1, r2)


def _fast(spec: RnnSpec, B: int, H: int, dtype) -> fast.GruWork | None:
    """Scratch buffers of the whole-array NumPy gates (tanh / sigmoid), else None (the Numba passes)."""
    if spec.act.code == TANH and spec.ract.code == SIGMOID:
        return fast.GruWork(B, H, dtype)
    return None


def _split_u(U):
    H = U.shape[0]
    return np.ascontiguousarray(U[:, :2 * H]), np.ascontiguousarray(U[:, 2 * H:])


def forward_cpu(spec: RnnSpec, x, W, U, b, mask, h0, y, h_out, A, S, RH, xmask=None, hmask=None, rate=0.0,
                recurrent_rate=0.0) -> None:
    """The layer over the whole sequence (arguments as `kernels.recurrent.recurrent_forward_cpu`; `b` is
    the (3H,) bias or None, RH receives the reset states r * hd)."""
    B, T, D = x.shape
    H = U.shape[0]
    dt = y.dtype
    xs = scaled_mask(xmask, rate, dt)
    xd = x if xs is None else x * xs[:, None, :]
    A2 = A.reshape(B * T, 3 * H)
    np.matmul(np.ascontiguousarray(xd, dtype=dt).reshape(B * T, D), W, out=A2)
    if b is not None:
        A2 += b
    Uzr, Uh = _split_u(U)
    h = np.zeros((B, H), dt) if h0 is None else np.array(h0, dt)
    S[:, 0] = h
    m = np.ascontiguousarray(mask, dtype=dt) if mask is not None else np.ones((1, 1), dt)
    rd = scaled_mask(hmask, recurrent_rate, dt)
    Y = y if spec.seq_out else y.reshape(B, 1, H)
    yprev = np.zeros((B, H), dt)
    rec, rech = np.empty((B, 2 * H), dt), np.empty((B, H), dt)
    hd, rs = np.empty((B, H), dt), np.empty((B, H), dt)
    act, ract = spec.act, spec.ract
    work = _fast(spec, B, H, dt)
    for t, tau, ty in _step_order(spec, T):
        if rd is not None:
            np.multiply(h, rd, out=hd)
        else:
            hd[...] = h
        np.matmul(hd, Uzr, out=rec)
        if work is not None:
            a = A[:, tau]
            with np.errstate(over="ignore"):  # exp(-z) overflowing gives sigmoid(z) = 0, as it should
                fast.reset_before_gates(a, rec, hd, work, rs)
                RH[:, t] = rs
                np.matmul(rs, Uh, out=rech)
                fast.reset_before_candidate(a, rech, work)
            fast.state_forward(work.zr, work.hh, t, ty, m, tau, mask is not None, spec.zero_out, S, Y, yprev, h)
            continue
        _gates_step(t, tau, A, rec, hd, rs, RH, ract.code, ract.p0, ract.p1, ract.p2)
        np.matmul(rs, Uh, out=rech)
        _state_step(t, tau, ty, A, rech, m, mask is not None, spec.zero_out, S, Y, yprev, h,
                    act.code, act.p0, act.p1, act.p2, ract.code, ract.p0, ract.p1, ract.p2)
    if not spec.seq_out:
        y[...] = yprev
    if h_out is not None:
        h_out[...] = h


def backward_cpu(spec: RnnSpec, x, W, U, mask, A, S, RH, dy, dh_out, dx, dW, dU, db, dh0, xmask=None, hmask=None,
                 rate=0.0, recurrent_rate=0.0, accumulate=(False,) * 7) -> None:
    """Gradients of `forward_cpu` (BPTT); any gradient buffer may be None. `accumulate` is indexed as in
    `kernels.recurrent.recurrent_backward_cpu` (dx, dW, dU, db, -, dh0, -)."""
    B, T, D = x.shape
    H = U.shape[0]
    dt = A.dtype
    acc = tuple(accumulate) + (False,) * (7 - len(accumulate))
    Y = dy if spec.seq_out else dy.reshape(B, 1, H)
    gs = np.zeros((B, H), dt) if dh_out is None else np.array(dh_out, dt)
    gy = np.zeros((B, H), dt)
    dA = np.empty((B, T, 3 * H), dt)
    dz, dah = np.empty((B, 2 * H), dt), np.empty((B, H), dt)
    direct, drs, tmp = np.empty((B, H), dt), np.empty((B, H), dt), np.empty((B, H), dt)
    Uzr, Uh = _split_u(U)
    UzrT, UhT = np.ascontiguousarray(Uzr.T), np.ascontiguousarray(Uh.T)
    m = np.ascontiguousarray(mask, dtype=dt) if mask is not None else np.ones((1, 1), dt)
    keep = hmask if hmask is not None else np.ones((1, 1), np.uint8)
    scale = 1.0 / (1.0 - recurrent_rate) if hmask is not None else 1.0
    rd = scaled_mask(hmask, recurrent_rate, dt)
    rd_ = rd if rd is not None else np.ones((1, 1), dt)
    act, ract = spec.act, spec.ract
    work = _fast(spec, B, H, dt)
    for t, tau, ty in reversed(list(_step_order(spec, T))):
        if work is not None:
            with np.errstate(over="ignore"):
                fast.reset_before_recompute(A[:, tau], work)
            fast.reset_before_state_backward(work.zr, work.hh, S, t, tau, Y, ty, t == T - 1, m, mask is not None,
                                             spec.zero_out, gy, gs, dA, dah, direct)
            np.matmul(dah, UhT, out=drs)
            fast.reset_before_gates_backward(work.zr, S, t, tau, m, mask is not None, keep, hmask is not None,
                                             scale, drs, dA, dz, direct)
            np.matmul(dz, UzrT, out=tmp)
            _add_scaled(direct, tmp, rd_, rd is not None, gs)
            continue
        _state_bwd_step(t, tau, ty, t == T - 1, Y, A, m, mask is not None, spec.zero_out, S, gy, gs, dA, dah,
                        direct, act.code, act.p0, act.p1, act.p2, ract.code, ract.p0, ract.p1, ract.p2)
        np.matmul(dah, UhT, out=drs)
        _gates_bwd_step(t, tau, A, m, mask is not None, S, keep, hmask is not None, scale, drs, dA, dz, direct,
                        ract.code, ract.p0, ract.p1, ract.p2)
        np.matmul(dz, UzrT, out=tmp)
        _add_scaled(direct, tmp, rd_, rd is not None, gs)
    dA2 = dA.reshape(B * T, 3 * H)
    xs = scaled_mask(xmask, rate, dt)
    if dW is not None:
        xd = x if xs is None else x * xs[:, None, :]
        store(dW, np.ascontiguousarray(xd, dtype=dt).reshape(B * T, D).T @ dA2, acc[1])
    if dx is not None:
        g = (dA2 @ W.T).reshape(B, T, D)
        if xs is not None:
            g *= xs[:, None, :]
        store(dx, g, acc[0])
    if db is not None:
        store(db, dA2.sum(axis=0), acc[3])
    if dU is not None:
        hp, rs = S[:, :T], RH
        if spec.backwards:  # S and RH are in processing order, dA in natural time order
            hp, rs = hp[:, ::-1], rs[:, ::-1]
        if rd is not None:
            hp = hp * rd[:, None, :]
        full = np.empty((H, 3 * H), dt)
        full[:, :2 * H] = np.ascontiguousarray(hp).reshape(B * T, H).T @ dA2[:, :2 * H]
        full[:, 2 * H:] = np.ascontiguousarray(rs).reshape(B * T, H).T @ dA2[:, 2 * H:]
        store(dU, full, acc[2])
    if dh0 is not None:
        store(dh0, gs, acc[5])
