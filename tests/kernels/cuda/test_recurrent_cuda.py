"""The CUDA recurrent kernels against their CPU twins (tested against the float64 reference), tiny shapes,
forward and BPTT, under NUMBA_ENABLE_CUDASIM=1 (or on a GPU)."""

import numpy as np
import pytest
from cuda_harness import run_pair  # noqa: I001 - test-local helper module

from kernels import _rnn_cells as cells
from kernels import recurrent as krnn
from kernels.activations import resolve_activation

B, T, D, H = 2, 3, 3, 2
G = {"simple_rnn": 1, "lstm": 4, "gru": 3, "gru_reset_before": 3}


def spec(cell, **kw):
    return krnn.RnnSpec(cells.CELL_CODES[cell], resolve_activation("tanh"), resolve_activation("sigmoid"), **kw)


def arrays(cell, masked, dropout, seed=0):
    rng = np.random.default_rng(seed)
    g = G[cell]
    a = dict(x=rng.standard_normal((B, T, D)), W=rng.standard_normal((D, g * H)) * 0.5,
             U=rng.standard_normal((H, g * H)) * 0.5, b=rng.standard_normal(g * H) * 0.3,
             brec=rng.standard_normal(g * H) * 0.3 if cell == "gru" else None,
             mask=np.array([[0, 1, 1], [1, 1, 0]], np.float64) if masked else None,
             h0=rng.standard_normal((B, H)), c0=rng.standard_normal((B, H)) if cell == "lstm" else None,
             xmask=np.array([[1, 0, 1], [1, 1, 0]], np.uint8) if dropout else None,
             hmask=np.array([[1, 0], [1, 1]], np.uint8) if dropout else None)
    return a


CASES = [("simple_rnn", dict(seq_out=True), False, False), ("lstm", dict(), True, True),
         ("lstm", dict(backwards=True, seq_out=True, flip_out=True, zero_out=True), True, False),
         ("gru", dict(seq_out=True, backwards=True), True, True),
         ("gru_reset_before", dict(seq_out=True, backwards=True), True, True),
         ("gru_reset_before", dict(zero_out=True), True, False)]


@pytest.mark.parametrize("cell,kw,masked,dropout", CASES)
def test_recurrent_forward_and_backward_cuda(cell, kw, masked, dropout):
    s = spec(cell, **kw)
    g = G[cell]
    rates = dict(rate=0.25, recurrent_rate=0.5)

    def fwd_args():
        a = arrays(cell, masked, dropout)
        y = np.zeros((B, T, H) if s.seq_out else (B, H))
        C = np.zeros((B, T + 1, H)) if cell == "lstm" else None
        RH = np.zeros((B, T, H)) if cell.startswith("gru") else None
        return [s, a["x"], a["W"], a["U"], a["b"], a["brec"], a["mask"], a["h0"], a["c0"], y, np.zeros((B, H)),
                np.zeros((B, H)) if cell == "lstm" else None, np.zeros((B, T, g * H)), np.zeros((B, T + 1, H)), C,
                RH, a["xmask"], a["hmask"]]

    host = run_pair(lambda *r: krnn.recurrent_forward_cpu(*r, **rates),
                    lambda *r: krnn.recurrent_forward_cuda(*r, **rates), fwd_args)
    saved = host[12:16]
    rng = np.random.default_rng(5)
    dy = rng.standard_normal(host[9].shape)
    dh, dc = rng.standard_normal((B, H)), rng.standard_normal((B, H)) if cell == "lstm" else None

    def bwd_args():
        a = arrays(cell, masked, dropout)
        grads = [np.zeros_like(a["x"]), np.full_like(a["W"], 0.5), np.zeros_like(a["U"]), np.zeros_like(a["b"]),
                 np.zeros_like(a["b"]) if cell == "gru" else None, np.zeros((B, H)),
                 np.zeros((B, H)) if cell == "lstm" else None]
        return [s, a["x"], a["W"], a["U"], a["mask"], *[v.copy() if v is not None else None for v in saved], dy,
                dh, dc, *grads, a["xmask"], a["hmask"]]

    acc = (False, True, False, False, False, False, False)  # dW accumulates into its 0.5s
    run_pair(lambda *r: krnn.recurrent_backward_cpu(*r, accumulate=acc, **rates),
             lambda *r: krnn.recurrent_backward_cuda(*r, accumulate=acc, **rates), bwd_args)
