"""The fused recurrent kernels against the float64 reference: forward outputs, and every gradient of BPTT
against central differences of the reference (kernels run in float64 here, so the tolerance is tight)."""

import numpy as np
import pytest

from kernels import _rnn_cells as cells
from kernels import recurrent as krnn
from kernels.activations import resolve_activation
from kernels.rnn_reference import rnn_reference

B, T, D, H = 3, 4, 3, 2
G = {"simple_rnn": 1, "lstm": 4, "gru": 3, "gru_reset_before": 3}


def make_case(cell, seed=0, masked=False, with_state=False, dropout=False):
    rng = np.random.default_rng(seed)
    g = G[cell]
    case = dict(
        x=rng.standard_normal((B, T, D)), W=rng.standard_normal((D, g * H)) * 0.5,
        U=rng.standard_normal((H, g * H)) * 0.5,
        b=rng.standard_normal((2, g * H) if cell == "gru" else (g * H,)) * 0.3,
        mask=None, h0=None, c0=None, xmask=None, hmask=None)
    if masked:
        mask = np.ones((B, T))
        mask[0, 0] = 0  # first step masked: output zeros before the first kept step
        mask[1, 2:] = 0  # trailing steps masked: the state and output carry over
        mask[2, 1] = 0
        case["mask"] = mask
    if with_state:
        case["h0"] = rng.standard_normal((B, H))
        if cell == "lstm":
            case["c0"] = rng.standard_normal((B, H))
    if dropout:
        case["xmask"] = (rng.random((B, D)) > 0.3).astype(np.uint8)
        case["hmask"] = (rng.random((B, H)) > 0.3).astype(np.uint8)
    return case


def run_kernel(cell, case, backwards=False, seq=True, zero_out=False, flip=False, grads=None, rate=0.25,
               acts=("tanh", "sigmoid")):
    spec = krnn.RnnSpec(cells.CELL_CODES[cell], resolve_activation(acts[0]), resolve_activation(acts[1]),
                        backwards, zero_out, seq, flip)
    g = G[cell]
    b = case["b"]
    b_in, b_rec = (b[0], b[1]) if cell == "gru" else (b, None)
    y = np.empty((B, T, H) if seq else (B, H))
    h_out, c_out = np.empty((B, H)), np.empty((B, H))
    A, S = np.empty((B, T, g * H)), np.empty((B, T + 1, H))
    C = np.empty((B, T + 1, H)) if cell == "lstm" else None
    RH = np.empty((B, T, H)) if cell.startswith("gru") else None
    kw = dict(xmask=case["xmask"], hmask=case["hmask"], rate=rate, recurrent_rate=rate)
    krnn.recurrent_forward_cpu(spec, case["x"], case["W"], case["U"], b_in, b_rec, case["mask"], case["h0"],
                               case["c0"], y, h_out, c_out if cell == "lstm" else None, A, S, C, RH, **kw)
    out = dict(y=y, h=h_out, c=c_out if cell == "lstm" else None)
    if grads is not None:
        dy, dh, dc = grads
        bufs = {k: np.empty_like(case[k]) for k in ("x", "W", "U", "b")}
        dh0, dc0 = np.empty((B, H)), np.empty((B, H))
        db_in, db_rec = (bufs["b"][0], bufs["b"][1]) if cell == "gru" else (bufs["b"], None)
        krnn.recurrent_backward_cpu(spec, case["x"], case["W"], case["U"], case["mask"], A, S, C, RH, dy, dh,
                                    dc if cell == "lstm" else None, bufs["x"], bufs["W"], bufs["U"], db_in,
                                    db_rec, dh0, dc0 if cell == "lstm" else None, **kw)
        out["grads"] = dict(bufs, h0=dh0, c0=dc0)
    return out


def reference(cell, case, backwards=False, seq=True, zero_out=False, flip=False, rate=0.25,
              acts=("tanh", "sigmoid")):
    scale = 1.0 / (1.0 - rate)
    y, h, c = rnn_reference(cell, case["x"], case["W"], case["U"], case["b"], case["mask"], case["h0"],
                            case["c0"], activation=acts[0], recurrent_activation=acts[1],
                            go_backwards=backwards, return_sequences=seq,
                            zero_output_for_mask=zero_out,
                            xscale=None if case["xmask"] is None else case["xmask"] * scale,
                            hscale=None if case["hmask"] is None else case["hmask"] * scale)
    if seq and flip and backwards:
        y = y[:, ::-1]
    return y, h, c


# LSTM with tanh / sigmoid takes the NumPy step (kernels._rnn_numpy); other activations the Numba pass (with a
# nonzero initial carry: relu(c) at c = 0 exactly is a kink central differences cannot check).
CONFIGS = [dict(), dict(acts=("relu", "hard_sigmoid"), masked=True, backwards=True, with_state=True),
           dict(backwards=True), dict(seq=False), dict(masked=True), dict(masked=True, zero_out=True),
           dict(masked=True, backwards=True, flip=True), dict(with_state=True, seq=False),
           dict(dropout=True, masked=True, with_state=True)]


@pytest.mark.parametrize("cell", ["simple_rnn", "lstm", "gru", "gru_reset_before"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(c) or "plain")
def test_forward_and_bptt_match_reference(cell, cfg):
    cfg = dict(cfg)
    case = make_case(cell, masked=cfg.pop("masked", False), with_state=cfg.pop("with_state", False),
                     dropout=cfg.pop("dropout", False))
    if case["h0"] is None:
        case["h0"] = np.zeros((B, H))  # so the state's gradient is checked too
    if cell == "lstm" and case["c0"] is None:
        case["c0"] = np.zeros((B, H))
    rng = np.random.default_rng(1)
    y_ref, h_ref, c_ref = reference(cell, case, **cfg)
    dy, dh, dc = rng.standard_normal(y_ref.shape), rng.standard_normal((B, H)), rng.standard_normal((B, H))
    out = run_kernel(cell, case, grads=(dy, dh, dc), **cfg)
    np.testing.assert_allclose(out["y"], y_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["h"], h_ref, rtol=1e-10, atol=1e-12)
    if cell == "lstm":
        np.testing.assert_allclose(out["c"], c_ref, rtol=1e-10, atol=1e-12)

    def loss():
        y, h, c = reference(cell, case, **cfg)
        total = np.sum(y * dy) + np.sum(h * dh)
        return total + (np.sum(c * dc) if c is not None else 0.0)

    names = ["x", "W", "U", "b", "h0"] + (["c0"] if cell == "lstm" else [])
    eps = 1e-6
    for name in names:
        arr = case[name]
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = loss()
            arr[idx] = old - eps
            down = loss()
            arr[idx] = old
            num[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(out["grads"][name], num, rtol=1e-5, atol=1e-7, err_msg=f"{cell} d{name}")


def test_float32_kernel_matches_reference():
    case = make_case("lstm", masked=True)
    c32 = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v)
           for k, v in case.items()}
    spec = krnn.RnnSpec(cells.LSTM, resolve_activation("tanh"), resolve_activation("sigmoid"), seq_out=True)
    y = np.empty((B, T, H), np.float32)
    krnn.recurrent_forward_cpu(spec, c32["x"], c32["W"], c32["U"], c32["b"], None, c32["mask"], None, None, y,
                               None, None, np.empty((B, T, 4 * H), np.float32),
                               np.empty((B, T + 1, H), np.float32), np.empty((B, T + 1, H), np.float32), None)
    y_ref, _, _ = reference("lstm", case)
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-6)
