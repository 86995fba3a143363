"""`RecurrentOp`: one fused op per recurrent layer (SimpleRNN, LSTM, GRU) over all time steps, and
`recurrent`, the function layers call.

The op runs the whole sequence in one kernel call forward and one backward (BPTT), not an unrolled graph
of per-step ops (see `kernels.recurrent`). Inputs: ``x`` (B, T, D), then an optional mask (B, T) (not
differentiable), then optional initial states h0 (and c0 for LSTM) (B, H). Weights: kernel (D, G*H),
recurrent_kernel (H, G*H) and optionally bias ((G*H,), or (2, 3H) for the reset-after GRU's input and
recurrent biases).
Outputs: y ((B, T, H) with return_sequences, else (B, H)), then with return_state the final state (and
carry). Parallel rules: only the batch splits (time steps depend on each other, units on the whole
previous state through the recurrent GEMM).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import ShapeError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops._util import fmt, kernel
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import KerasTensor, TensorSpec
from kernels import _rnn_cells as cells
from kernels import dropout as kdrop
from kernels import recurrent as krnn
from kernels.activations import resolve_activation

_RECURRENT_SEED_SALT = 0x5BD1E995  # the recurrent-dropout mask's stream differs from the input one's


@dataclass(frozen=True)
class RecurrentOp(Op):
    """A recurrent layer over the whole sequence.

    Attributes:
        cell: "simple_rnn", "lstm", "gru" (GRU with reset_after=True, a (2, 3H) bias) or "gru_reset_before"
            (reset_after=False, a (3H,) bias). units: H.
        activation, recurrent_activation: `kernels.activations` names.
        go_backwards: process time in reverse. return_sequences, return_state: as in Keras.
        flip_output: with go_backwards, write the sequence in natural time order (Bidirectional).
        zero_output_for_mask: masked steps output zeros instead of the previous output.
        has_mask: input 1 is a (B, T) mask. n_initial: how many initial states follow (0, 1, or 2).
        dropout, recurrent_dropout: rates (training only); seed: the masks' stream.
    """

    type_name: ClassVar[str] = "recurrent"
    cell: str = "lstm"
    units: int = 1
    activation: str = "tanh"
    recurrent_activation: str = "sigmoid"
    go_backwards: bool = False
    return_sequences: bool = False
    return_state: bool = False
    flip_output: bool = False
    zero_output_for_mask: bool = False
    has_mask: bool = False
    n_initial: int = 0
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    seed: int = 0

    def __post_init__(self):
        if self.cell not in cells.CELL_CODES:
            raise ValueError(f"recurrent: cell must be one of {sorted(cells.CELL_CODES)}, received {self.cell!r}.")
        n_states = 2 if self.cell == "lstm" else 1
        if self.n_initial not in (0, n_states):
            raise ValueError(f"recurrent: a {self.cell} takes {n_states} initial state tensor(s), received "
                             f"{self.n_initial}.")
        _ = self.spec  # validate the activations now, where the layer builds the op

    @cached_property
    def spec(self) -> krnn.RnnSpec:
        return krnn.RnnSpec(cells.CELL_CODES[self.cell], resolve_activation(self.activation),
                            resolve_activation(self.recurrent_activation), bool(self.go_backwards),
                            bool(self.zero_output_for_mask), bool(self.return_sequences), bool(self.flip_output))

    @property
    def gates(self) -> int:
        return cells.GATES[cells.CELL_CODES[self.cell]]

    def is_differentiable(self, i: int) -> bool:
        return not (self.has_mask and i == 1)

    # --- shapes ---------------------------------------------------------------------------------------
    def output_specs(self, inputs, weights):
        who = f"recurrent ({self.cell})"
        n_in = 1 + int(self.has_mask) + self.n_initial
        if len(inputs) != n_in or len(weights) not in (2, 3):
            raise ShapeError(f"{who} takes {n_in} inputs and 2 or 3 weights, received {len(inputs)} inputs and "
                             f"{len(weights)} weights.")
        x = inputs[0]
        H, GH = self.units, self.gates * self.units
        if x.ndim != 3:
            raise ShapeError(f"{who} expects a 3-D input (batch, timesteps, features), received shape "
                             f"{fmt(x.shape)}.")
        # timesteps may be None while a functional model is recorded on Input(shape=(None, ...)); the
        # model runs a copy of its graph recorded at the data's sample shape (models/variable_dims.py)
        D = x.shape[2]
        expect = [(D, GH), (H, GH)]
        if len(weights) == 3:
            expect.append((2, GH) if self.cell == "gru" else (GH,))
        for w, want, name in zip(weights, expect, ("kernel", "recurrent_kernel", "bias"), strict=False):
            if tuple(w.shape) != want:
                raise ShapeError(f"{who} expects {name} of shape {fmt(want)} for {D} input features and {H} "
                                 f"units, received {fmt(w.shape)}.")
        if self.has_mask and tuple(inputs[1].shape[1:]) != (x.shape[1],):
            raise ShapeError(f"{who} expects a mask of shape (batch, {x.shape[1]}), received "
                             f"{fmt(inputs[1].shape)}.")
        for s in inputs[1 + int(self.has_mask):]:
            if tuple(s.shape[1:]) != (H,):
                raise ShapeError(f"{who} expects initial states of shape (batch, {H}), received {fmt(s.shape)}.")
        dt = x.dtype
        y = (x.shape[0], x.shape[1], H) if self.return_sequences else (x.shape[0], H)
        out = [TensorSpec(y, dt)]
        if self.return_state:
            out += [TensorSpec((x.shape[0], H), dt)] * (2 if self.cell == "lstm" else 1)
        return tuple(out)

    def saved_specs(self, inputs, weights):
        x = inputs[0]
        B, T, D = x.shape
        H, dt = self.units, x.dtype
        saved = [TensorSpec((B, T, self.gates * H), dt), TensorSpec((B, T + 1, H), dt)]
        if self.cell == "lstm":
            saved.append(TensorSpec((B, T + 1, H), dt))
        if self.cell.startswith("gru"):
            saved.append(TensorSpec((B, T, H), dt))
        if self.dropout > 0:
            saved.append(TensorSpec((B, D), "uint8"))
        if self.recurrent_dropout > 0:
            saved.append(TensorSpec((B, H), "uint8"))
        return tuple(saved)

    # --- parallel rules: the batch only -----------------------------------------------------------------
    def parallel_space(self, inputs, weights):
        extents = tuple(self.output_specs(inputs, weights)[0].shape)
        why = "a recurrent layer splits only along the batch (each step needs the whole previous state)"
        dims = tuple(par.DimRule(par.SAMPLE, True) if e is None else par.DimRule(par.ATTRIBUTE, False, why)
                     for e in extents)
        return par.ParallelSpace(dims, extents)

    def tile(self, shapes, out_box, part=0, parts=1):
        b0, b1 = out_box[0][0], out_box[1][0]

        def rows(shape):
            return ((b0,) + (0,) * (len(shape) - 1), (b1,) + tuple(shape[1:]))

        return par.Tile(tuple(rows(s) for s in shapes.inputs), tuple(par.whole(s) for s in shapes.weights),
                        tuple(rows(s) for s in shapes.outputs), tuple(rows(s) for s in shapes.saved), ())

    # --- compute --------------------------------------------------------------------------------------
    def _parts(self, inputs, weights, saved):
        k = 1
        mask = inputs[1] if self.has_mask else None
        k += int(self.has_mask)
        h0 = inputs[k] if self.n_initial else None
        c0 = inputs[k + 1] if self.n_initial == 2 else None
        b = weights[2] if len(weights) == 3 else None
        b_in, b_rec = (b[0], b[1]) if (b is not None and self.cell == "gru") else (b, None)
        A, S = saved[0], saved[1]
        i = 2
        C = RH = None
        if self.cell == "lstm":
            C, i = saved[i], i + 1
        if self.cell.startswith("gru"):
            RH, i = saved[i], i + 1
        xmask = hmask = None
        if self.dropout > 0:
            xmask, i = saved[i], i + 1
        if self.recurrent_dropout > 0:
            hmask = saved[i]
        return mask, h0, c0, b_in, b_rec, A, S, C, RH, xmask, hmask

    def _dropout_kwargs(self, ctx, xmask, hmask, make: bool):
        active_x = bool(ctx.training) and self.dropout > 0
        active_h = bool(ctx.training) and self.recurrent_dropout > 0
        if make and (active_x or active_h):
            offset = ctx.tile.origin(0) if ctx.tile is not None else ctx.batch_offset
            fn = kernel(kdrop, "dropout_mask", ctx)
            if active_x:
                fn(xmask, self.dropout, kdrop.dropout_key(ctx.seed, ctx.step, self.seed), offset)
            if active_h:
                fn(hmask, self.recurrent_dropout,
                   kdrop.dropout_key(ctx.seed, ctx.step, self.seed ^ _RECURRENT_SEED_SALT), offset)
        return dict(xmask=xmask if active_x else None, hmask=hmask if active_h else None, rate=self.dropout,
                    recurrent_rate=self.recurrent_dropout)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        mask, h0, c0, b_in, b_rec, A, S, C, RH, xmask, hmask = self._parts(inputs, weights, saved)
        h_out = outputs[1] if self.return_state else None
        c_out = outputs[2] if self.return_state and self.cell == "lstm" else None
        kernel(krnn, "recurrent_forward", ctx)(
            self.spec, inputs[0], weights[0], weights[1], b_in, b_rec, mask, h0, c0, outputs[0], h_out, c_out,
            A, S, C, RH, **self._dropout_kwargs(ctx, xmask, hmask, make=True))

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        mask, h0, c0, b_in, b_rec, A, S, C, RH, xmask, hmask = self._parts(inputs, weights, saved)
        k = 1 + int(self.has_mask)
        dh0 = grad_inputs[k] if self.n_initial else None
        dc0 = grad_inputs[k + 1] if self.n_initial == 2 else None
        db = grad_weights[2] if len(grad_weights) == 3 else None
        db_in, db_rec = (db[0], db[1]) if (db is not None and self.cell == "gru") else (db, None)
        dh_out = grad_outputs[1] if self.return_state else None
        dc_out = grad_outputs[2] if self.return_state and self.cell == "lstm" else None
        acc = (ctx.acc_input(0), ctx.acc_weight(0), ctx.acc_weight(1), ctx.acc_weight(2), ctx.acc_weight(2),
               ctx.acc_input(k), ctx.acc_input(k + 1))
        kernel(krnn, "recurrent_backward", ctx)(
            self.spec, inputs[0], weights[0], weights[1], mask, A, S, C, RH, grad_outputs[0], dh_out, dc_out,
            grad_inputs[0], grad_weights[0], grad_weights[1], db_in, db_rec, dh0, dc0,
            accumulate=acc, **self._dropout_kwargs(ctx, xmask, hmask, make=False))


def recurrent(x, kernel_, recurrent_kernel, bias=None, mask=None, initial_state=None, training=None,
              name: str | None = None, **attrs):
    """Apply a `RecurrentOp` (symbolic on KerasTensors, eager on arrays); returns y or (y, *states).

    Args:
        x: (B, T, D). kernel_, recurrent_kernel, bias: Variables. mask: (B, T) or None. initial_state: a
            list of (B, H) tensors or None. training: eager calls only (symbolic graphs follow the
            execution's mode). attrs: `RecurrentOp` attributes.
    """
    from flexflow_keras.ops.functional import _eager_training, _tensor

    states = list(initial_state or [])
    inputs = [x] + ([mask] if mask is not None else []) + states
    sym = any(isinstance(t, KerasTensor) for t in inputs)
    tensors = [_tensor(t, sym) for t in inputs]
    if mask is not None:
        tensors[1] = _as_float_mask(tensors[1], x, sym)
    op = RecurrentOp(has_mask=mask is not None, n_initial=len(states), **attrs)
    weights = [kernel_, recurrent_kernel] + ([bias] if bias is not None else [])
    return apply_op(op, tensors, weights, name=name, training=False if sym else _eager_training(training))


def _as_float_mask(m, x, sym: bool):
    dtype = str(x.dtype)
    if sym:
        if str(m.dtype) == dtype:
            return m
        from flexflow_keras import ops

        return ops.cast(m, dtype)
    return np.asarray(m).astype(dtype)
