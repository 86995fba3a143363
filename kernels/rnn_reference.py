"""NumPy float64 references of the recurrent layers' forward pass (tests check the fused kernels against
them, and their gradients against central differences of these).

Written from Keras 3's cell equations step by step, independently of `kernels._rnn_cells`: gate order
LSTM (i, f, c, o), GRU (z, r, h) with ``reset_after`` (bias of shape (2, 3H): input and recurrent) or
without it (bias (3H,), the reset gate applied to the state before the candidate's matmul), masked
steps keeping the previous state and repeating the previous output (zeros with ``zero_output_for_mask``).
"""

from __future__ import annotations

import numpy as np

_ACTS = {
    "tanh": np.tanh,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    "relu": lambda v: np.maximum(v, 0.0),
    "linear": lambda v: v,
    "hard_sigmoid": lambda v: np.clip(v + 3.0, 0.0, 6.0) / 6.0,
}


def rnn_reference(cell: str, x, W, U, b=None, mask=None, h0=None, c0=None, activation="tanh",
                  recurrent_activation="sigmoid", go_backwards=False, return_sequences=False,
                  zero_output_for_mask=False, xscale=None, hscale=None):
    """(y, h_T, c_T) in float64 for `cell` in "simple_rnn", "lstm", "gru", "gru_reset_before" (c_T is None
    but for LSTM). "gru_reset_before" is Keras' ``reset_after=False`` with a (3H,) bias.

    `xscale` (B, D) and `hscale` (B, H) are dropout multipliers applied to the inputs and to the state
    fed to the recurrent kernel. The sequence output is in processing order (reversed with go_backwards),
    as Keras returns it.
    """
    x = np.asarray(x, np.float64)
    B, T, _ = x.shape
    H = U.shape[0]
    act, ract = _ACTS[activation], _ACTS[recurrent_activation]
    W, U = np.asarray(W, np.float64), np.asarray(U, np.float64)
    if xscale is not None:
        x = x * np.asarray(xscale, np.float64)[:, None, :]
    if b is None:
        b_in, b_rec = 0.0, 0.0
    elif cell == "gru":
        b_in, b_rec = np.asarray(b, np.float64)[0], np.asarray(b, np.float64)[1]
    else:
        b_in, b_rec = np.asarray(b, np.float64), 0.0
    h = np.zeros((B, H)) if h0 is None else np.asarray(h0, np.float64).copy()
    c = np.zeros((B, H)) if c0 is None else np.asarray(c0, np.float64).copy()
    prev_out = np.zeros((B, H))
    outs = []
    order = range(T - 1, -1, -1) if go_backwards else range(T)
    for tau in order:
        hd = h if hscale is None else h * hscale
        xt = x[:, tau] @ W + b_in
        if cell == "simple_rnn":
            new_h = act(xt + hd @ U)
            new_c = c
        elif cell == "lstm":
            z = xt + hd @ U
            i, f = ract(z[:, :H]), ract(z[:, H:2 * H])
            g, o = act(z[:, 2 * H:3 * H]), ract(z[:, 3 * H:])
            new_c = f * c + i * g
            new_h = o * act(new_c)
        elif cell == "gru_reset_before":  # Keras' reset_after=False: r applied before the candidate's matmul
            rec = hd @ U[:, :2 * H]
            z = ract(xt[:, :H] + rec[:, :H])
            r = ract(xt[:, H:2 * H] + rec[:, H:])
            hh = act(xt[:, 2 * H:] + (r * hd) @ U[:, 2 * H:])
            new_h = z * h + (1.0 - z) * hh
            new_c = c
        else:
            rec = hd @ U + b_rec
            z = ract(xt[:, :H] + rec[:, :H])
            r = ract(xt[:, H:2 * H] + rec[:, H:2 * H])
            hh = act(xt[:, 2 * H:] + r * rec[:, 2 * H:])
            new_h = z * h + (1.0 - z) * hh
            new_c = c
        if mask is None:
            keep = np.ones((B, 1), bool)
        else:
            keep = (np.asarray(mask)[:, tau] != 0)[:, None]
        out = np.where(keep, new_h, 0.0 if zero_output_for_mask else prev_out)
        h = np.where(keep, new_h, h)
        c = np.where(keep, new_c, c)
        prev_out = out
        outs.append(out)
    y = np.stack(outs, axis=1) if return_sequences else prev_out
    return y, h, (c if cell == "lstm" else None)
