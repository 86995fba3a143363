"""Fused recurrent kernels (SimpleRNN, LSTM, GRU with reset_after): the whole sequence in one call (the
GRU with reset_after=False hands over to `kernels.gru_reset_before`).

Forward: the input projection of every time step is one GEMM (``x (B*T, D) @ W + b`` into the saved
pre-activation buffer A); then, step by step, one GEMM of the previous state by the recurrent kernel
(``h @ U``, NumPy's BLAS) and one Numba pass over (sample, unit) for the gates, the state, the mask and the
output (`kernels._rnn_cells`); an LSTM or a reset-after GRU with tanh / sigmoid takes whole-array NumPy
steps instead (`kernels._rnn_numpy`, `kernels._gru_numpy`: NumPy's SIMD tanh and exp beat the scalar
Numba pass tenfold). Backward (BPTT) walks the steps in reverse with one Numba pass and one GEMM
(``dz @ U.T``) per step, then finishes with three GEMMs over all steps at once: dW, dx and dU.

A per-step GEMM in NumPy beat a Numba loop calling ``np.dot`` tenfold here (Numba's BLAS binding went
through a slower path: 1.2 ms vs 0.1 ms for (32, 128) @ (128, 512)), so the step loop is in Python and the
element-wise work in Numba.

Dropout (training only) is Keras 3's: one mask per sequence on the inputs (B, D) and one on the state fed
to the recurrent GEMM (B, H), the same at every step; the masks are uint8 keep bits and the kernels scale
by 1 / (1 - rate). The buffers' layouts are described in `kernels._rnn_cells`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernels import _rnn_cells as cells
from kernels import _rnn_written as written
from kernels._gru_numpy import GruWork, gru_backward_step, gru_forward_step
from kernels._jit import cpu_jit, store
from kernels._rnn_numpy import LstmWork, lstm_backward_step, lstm_forward_step
from kernels.activations import SIGMOID, TANH, Activation

_value, _grad = written.value, written.grad  # the activations of the written-out steps (gru_reset_before uses them)


class RnnSpec(NamedTuple):
    """What one recurrent call computes.

    cell: a `kernels._rnn_cells` code. act / ract: the activation and recurrent activation. backwards:
    process time in reverse (Keras' go_backwards). zero_out: masked steps output zeros. seq_out: y is the
    whole sequence (B, T, H), else the last output (B, H). flip_out: write the sequence in natural time
    order even when going backwards (Bidirectional's backward half).
    """

    cell: int
    act: Activation
    ract: Activation
    backwards: bool = False
    zero_out: bool = False
    seq_out: bool = False
    flip_out: bool = False


@cpu_jit
def _add_scaled(direct, tmp, rd, has_rd, gs):
    # gs = direct + tmp * rd (the previous state's gradient: direct part plus the recurrent GEMM's)
    B, H = gs.shape
    for b in range(B):
        for j in range(H):
            gs[b, j] = direct[b, j] + (tmp[b, j] * rd[b, j] if has_rd else tmp[b, j])


def scaled_mask(mask, rate: float, dtype) -> np.ndarray | None:
    """The float dropout multiplier ``mask / (1 - rate)`` of uint8 keep bits (None when no mask)."""
    if mask is None:
        return None
    return mask.astype(dtype) * dtype.type(1.0 / (1.0 - rate))


def _dummy(dtype) -> np.ndarray:
    return np.zeros((1, 1, 1), dtype)


def _numpy_path(spec: RnnSpec, B: int, H: int, dtype) -> LstmWork | GruWork | None:
    """Scratch buffers when the whole-array NumPy step applies (LSTM or reset-after GRU with tanh /
    sigmoid), else None."""
    if spec.act.code != TANH or spec.ract.code != SIGMOID:
        return None
    if spec.cell == cells.LSTM:
        return LstmWork(B, H, dtype)
    if spec.cell == cells.GRU:
        return GruWork(B, H, dtype)
    return None


def _step_order(spec: RnnSpec, T: int):
    for t in range(T):
        tau = T - 1 - t if spec.backwards else t
        ty = (tau if spec.flip_out else t) if spec.seq_out else -1
        yield t, tau, ty


def recurrent_forward_cpu(spec: RnnSpec, x, W, U, b, brec, mask, h0, c0, y, h_out, c_out, A, S, C, RH,
                          xmask=None, hmask=None, rate=0.0, recurrent_rate=0.0) -> None:
    """Run the layer over the whole sequence.

    Args:
        spec: an `RnnSpec`. x: (B, T, D). W: (D, G*H). U: (H, G*H). b: input bias (G*H,) or None. brec:
            the GRU's recurrent bias (G*H,) or None. mask: (B, T) (nonzero: keep the step) or None. h0, c0:
            initial state and (LSTM) carry (B, H) or None (zeros).
        y: (B, T, H) with `spec.seq_out`, else (B, H). h_out, c_out: final state / carry or None.
        A, S, C, RH: saved buffers (see `kernels._rnn_cells`; C and RH may be None when unused).
        xmask, hmask: uint8 dropout keep bits (B, D) / (B, H) with their rates, or None.
    """
    if spec.cell == cells.GRU_RESET_BEFORE:
        from kernels import gru_reset_before

        return gru_reset_before.forward_cpu(spec, x, W, U, b, mask, h0, y, h_out, A, S, RH, xmask, hmask, rate,
                                            recurrent_rate)
    B, T, D = x.shape
    H = U.shape[0]
    dt = y.dtype
    xs = scaled_mask(xmask, rate, dt)
    xd = x if xs is None else x * xs[:, None, :]
    A2 = A.reshape(B * T, -1)
    np.matmul(np.ascontiguousarray(xd, dtype=dt).reshape(B * T, D), W, out=A2)
    if b is not None:
        A2 += b
    h = np.zeros((B, H), dt) if h0 is None else np.array(h0, dt)
    c = np.zeros((B, H), dt) if c0 is None else np.array(c0, dt)
    S[:, 0] = h
    if C is not None:
        C[:, 0] = c
    brec_ = brec if brec is not None else np.zeros(U.shape[1], dt)
    m = np.ascontiguousarray(mask, dtype=dt) if mask is not None else np.ones((1, 1), dt)
    rd = scaled_mask(hmask, recurrent_rate, dt)
    Y = y if spec.seq_out else y.reshape(B, 1, H)
    yprev = np.zeros((B, H), dt)
    rec = np.empty((B, U.shape[1]), dt)
    hd = np.empty((B, H), dt)
    act, ract = spec.act, spec.ract
    work = _numpy_path(spec, B, H, dt)
    for t, tau, ty in _step_order(spec, T):
        if rd is not None:
            np.multiply(h, rd, out=hd)
            np.matmul(hd, U, out=rec)
        else:
            np.matmul(h, U, out=rec)
        if isinstance(work, GruWork):
            with np.errstate(over="ignore"):  # exp(-z) overflowing gives sigmoid(z) = 0, as it should
                gru_forward_step(t, tau, ty, A, rec, brec_, m, mask is not None, spec.zero_out, S, RH, Y, yprev, h,
                                 work)
            continue
        if work is not None:
            with np.errstate(over="ignore"):  # exp(-z) overflowing gives sigmoid(z) = 0, as it should
                lstm_forward_step(t, tau, ty, A, rec, m, mask is not None, spec.zero_out, S, C, Y, yprev, h, c,
                                  work)
            continue
        a, r = (act.code, act.p0, act.p1, act.p2), (ract.code, ract.p0, ract.p1, ract.p2)
        if spec.cell == cells.SIMPLE:
            written.simple_forward_step(t, tau, ty, A, rec, m, mask is not None, spec.zero_out, S, Y, yprev, h, *a)
        elif spec.cell == cells.LSTM:
            written.lstm_forward_step(t, tau, ty, A, rec, m, mask is not None, spec.zero_out, S, C, Y, yprev, h, c, *a, *r)
        else:
            written.gru_forward_step(t, tau, ty, A, rec, brec_, m, mask is not None, spec.zero_out, S, RH, Y, yprev, h, *a,
                               *r)
    if not spec.seq_out:
        y[...] = yprev
    if h_out is not None:
        h_out[...] = h
    if c_out is not None:
        c_out[...] = c


def recurrent_backward_cpu(spec: RnnSpec, x, W, U, mask, A, S, C, RH, dy, dh_out, dc_out, dx, dW, dU, db,
                           dbrec, dh0, dc0, xmask=None, hmask=None, rate=0.0, recurrent_rate=0.0,
                           accumulate=(False,) * 7) -> None:
    """Gradients of `recurrent_forward_cpu` (BPTT). Any gradient buffer may be None (not wanted).

    Args:
        dy: the gradient of y. dh_out, dc_out: of the final state / carry (or None: zero).
        dx, dW, dU, db, dbrec, dh0, dc0: the gradients to write (``accumulate[k]`` adds into the k-th).
        The other arguments are those of the forward call and its saved buffers.
    """
    if spec.cell == cells.GRU_RESET_BEFORE:
        from kernels import gru_reset_before

        return gru_reset_before.backward_cpu(spec, x, W, U, mask, A, S, RH, dy, dh_out, dx, dW, dU, db, dh0, xmask,
                                             hmask, rate, recurrent_rate, accumulate)
    B, T, D = x.shape
    H = U.shape[0]
    GH = U.shape[1]
    dt = A.dtype
    Y = dy if spec.seq_out else dy.reshape(B, 1, H)
    gs = np.zeros((B, H), dt) if dh_out is None else np.array(dh_out, dt)
    gc = np.zeros((B, H), dt) if dc_out is None else np.array(dc_out, dt)
    gy = np.zeros((B, H), dt)
    dA = np.empty((B, T, GH), dt)
    DRH = np.empty((B, T, H), dt) if spec.cell == cells.GRU else _dummy(dt)
    dz = np.empty((B, GH), dt)
    direct = np.empty((B, H), dt)
    tmp = np.empty((B, H), dt)
    UT = np.ascontiguousarray(U.T)
    m = np.ascontiguousarray(mask, dtype=dt) if mask is not None else np.ones((1, 1), dt)
    rd = scaled_mask(hmask, recurrent_rate, dt)
    rd_ = rd if rd is not None else np.ones((1, 1), dt)
    act, ract = spec.act, spec.ract
    work = _numpy_path(spec, B, H, dt)
    for t, tau, ty in reversed(list(_step_order(spec, T))):
        if isinstance(work, GruWork):
            with np.errstate(over="ignore"):
                gru_backward_step(t, tau, ty, t == T - 1, Y, A, RH, S, m, mask is not None, spec.zero_out, gy, gs,
                                  dA, DRH, dz, direct, work)
            np.matmul(dz, UT, out=tmp)
            _add_scaled(direct, tmp, rd_, rd is not None, gs)
            continue
        if work is not None:
            with np.errstate(over="ignore"):
                lstm_backward_step(t, tau, ty, t == T - 1, Y, A, m, mask is not None, spec.zero_out, C, gy, gs,
                                   gc, dA, dz, direct, work)
            np.matmul(dz, UT, out=tmp)
            _add_scaled(direct, tmp, rd_, rd is not None, gs)
            continue
        a, r = (act.code, act.p0, act.p1, act.p2), (ract.code, ract.p0, ract.p1, ract.p2)
        last = t == T - 1
        if spec.cell == cells.SIMPLE:
            written.simple_backward_step(tau, ty, last, Y, A, m, mask is not None, spec.zero_out, gy, gs, dA, dz, direct, *a)
        elif spec.cell == cells.LSTM:
            written.lstm_backward_step(t, tau, ty, last, Y, A, m, mask is not None, spec.zero_out, C, gy, gs, gc, dA, dz,
                                 direct, *a, *r)
        else:
            written.gru_backward_step(t, tau, ty, last, Y, A, m, mask is not None, spec.zero_out, S, RH, gy, gs, dA, DRH,
                                dz, direct, *a, *r)
        np.matmul(dz, UT, out=tmp)
        _add_scaled(direct, tmp, rd_, rd is not None, gs)
    acc = tuple(accumulate) + (False,) * (7 - len(accumulate))
    dA2 = dA.reshape(B * T, GH)
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
    if dU is not None or dbrec is not None:
        dR = dA
        if spec.cell == cells.GRU:
            dR = dA.copy()
            dR[:, :, 2 * H:] = DRH
        dR2 = dR.reshape(B * T, GH)
        if dU is not None:
            hp = S[:, :T]
            if spec.backwards:  # S is in processing order, dR in natural time order
                hp = hp[:, ::-1]
            if rd is not None:
                hp = hp * rd[:, None, :]
            store(dU, np.ascontiguousarray(hp).reshape(B * T, H).T @ dR2, acc[2])
        if dbrec is not None:
            store(dbrec, dR2.sum(axis=0), acc[4])
    if dh0 is not None:
        store(dh0, gs, acc[5])
    if dc0 is not None:
        store(dc0, gc, acc[6])


def __getattr__(name: str):
    if name.endswith("_cuda"):
        from kernels.gpu import recurrent as gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
