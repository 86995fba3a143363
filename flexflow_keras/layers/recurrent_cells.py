"""`SimpleRNNCell`, `LSTMCell`, `GRUCell`, `StackedRNNCells` and the generic `RNN(cell)` layer.

A cell holds the arguments and weights of one recurrent step; ``cell(x_t, states)`` runs that one step (a
`RecurrentOp` over a single time step with the given initial states) and returns ``(output, new_states)``
as Keras cells do. ``RNN(cell)`` runs the built-in cells over the whole sequence with the same fused op as
`LSTM` & co. (one op per cell, not an unrolled graph); a list of cells (or `StackedRNNCells`) runs them
stacked, each feeding the next step by step, which equals a stack of layers with return_sequences. Custom
cell classes (a Python ``call`` per step) are not supported: they would need an unrolled graph.
"""

from __future__ import annotations

from flexflow_keras import ops
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.recurrent import GRU, LSTM, KeptStates, SimpleRNN, sequence_output_mask
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.ops.recurrent import recurrent

_SEQUENCE_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "zero_output_for_mask")


class _Cell(Layer):
    """A cell: the arguments of its layer class (`_layer_cls`) minus the sequence ones, and its weights."""

    _layer_cls = LSTM

    def __init__(self, units, **kwargs):
        base = {k: kwargs.pop(k) for k in ("name", "trainable", "dtype") if k in kwargs}
        super().__init__(**base)
        bad = sorted(set(kwargs) & set(_SEQUENCE_ARGS))
        if bad:
            raise ValueError(f"{_args.who(self)} does not take {bad}: give them to the RNN layer.")
        self._spec = self._layer_cls(units, name=self.name + "_spec", **kwargs)  # validates, holds the config
        self._cell_kwargs = dict(kwargs)
        self.units = self._spec.units

    @property
    def state_size(self):
        return [self.units, self.units] if self._spec._cell == "lstm" else self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        s = self._spec
        gh = s._gates * s.units
        d = int(input_shape[-1])
        self.kernel = self.add_weight(shape=(d, gh), initializer=s.kernel_initializer, regularizer=s.kernel_regularizer,
                                      constraint=s.kernel_constraint, name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(s.units, gh), initializer=s.recurrent_initializer,
                                                regularizer=s.recurrent_regularizer,
                                                constraint=s.recurrent_constraint, name="recurrent_kernel")
        self.bias = None
        if s.use_bias:
            self.bias = self.add_weight(shape=s._bias_shape(), initializer=s._bias_init(),
                                        regularizer=s.bias_regularizer, constraint=s.bias_constraint, name="bias")

    def _run(self, x, mask=None, initial_state=None, training=None, **seq):
        attrs = {**self._spec._op_attrs(), **seq}
        return recurrent(x, self.kernel, self.recurrent_kernel, self.bias, mask, initial_state, training=training,
                         **attrs)

    def call(self, inputs, states, training=None):
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        out = self._run(ops.expand_dims(inputs, 1), initial_state=states, training=training, return_state=True,
                        return_sequences=False, go_backwards=False, flip_output=False)
        out = list(out)
        return out[0], out[1:]

    def get_config(self):
        config = {**self._spec.get_config(), **super().get_config()}
        for k in _SEQUENCE_ARGS:
            config.pop(k, None)
        return config


class SimpleRNNCell(_Cell):
    """One SimpleRNN step; arguments as `SimpleRNN` without the sequence ones."""

    _layer_cls = SimpleRNN


class LSTMCell(_Cell):
    """One LSTM step (states [h, c]); arguments as `LSTM` without the sequence ones."""

    _layer_cls = LSTM


class GRUCell(_Cell):
    """One GRU step (either ``reset_after``); arguments as `GRU` without the sequence ones."""

    _layer_cls = GRU


class StackedRNNCells(Layer):
    """A list of built-in cells run as one cell stack (each feeds the next at every step).

    Args:
        cells: SimpleRNNCell / LSTMCell / GRUCell instances.
    """

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        self.cells = list(cells)
        for c in self.cells:
            if not isinstance(c, _Cell):
                raise ValueError(f"{_args.who(self)} takes SimpleRNNCell, LSTMCell or GRUCell instances, received "
                                 f"{c!r}.")

    def get_config(self):
        from flexflow_keras.layers import serialize_wrapped as serialize

        return {**super().get_config(), "cells": [serialize(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config):
        from flexflow_keras.layers import deserialize

        config = dict(config)
        return cls([deserialize(c) for c in config.pop("cells")], **config)


class RNN(KeptStates, Layer):
    """Run a built-in cell (or a list / `StackedRNNCells` of them) over a sequence with the fused op.

    Args:
        cell: SimpleRNNCell, LSTMCell, GRUCell, a list of them, or StackedRNNCells.
        return_sequences, return_state, go_backwards, zero_output_for_mask: as in `LSTM`. With stacked
            cells, return_state returns the final states of every cell in order.
        stateful: keep every cell's final states for the next batch (a declared batch size), as `LSTM`;
            `states` lists them cell by cell. unroll: accepted (same numbers).
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not isinstance(cell, (_Cell, StackedRNNCells)):
            raise ValueError(f"{_args.who(self)}: custom cells ({type(cell).__name__}) are not supported; the fused "
                             f"recurrent kernels run SimpleRNNCell, LSTMCell and GRUCell (or use the SimpleRNN, "
                             f"LSTM, GRU layers).")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)

    def _cells(self):
        return self.cell.cells if isinstance(self.cell, StackedRNNCells) else [self.cell]

    def build(self, input_shape):
        d = input_shape[-1]
        for c in self._cells():
            if not c.built:
                c.build((None, d))
                c.built = True
            d = c.units

    def call(self, inputs, mask=None, training=None, initial_state=None):
        cells = self._cells()
        sizes = [c.units for c in cells for _ in range(2 if c._spec._cell == "lstm" else 1)]
        kept = self.stateful and initial_state is None
        if kept:  # every cell starts from its kept states; its final ones are copied back after each batch
            initial_state = self._kept_states(inputs, sizes)
        states = list(initial_state) if initial_state is not None else None
        if states is not None and len(states) != len(sizes):
            raise ValueError(f"{_args.who(self)} expects initial_state to be a list of {len(sizes)} tensor(s) "
                             f"(its cells' states, in order), received {len(states)}.")
        x, finals, at = inputs, [], 0
        for k, c in enumerate(cells):
            last = k == len(cells) - 1
            n = 2 if c._spec._cell == "lstm" else 1
            init = None
            if states is not None:
                init, states = states[:n], states[n:]
            # Going backwards, every cell but the last writes its sequence in natural time order, so the next
            # one (also going backwards) reads the steps in the order the stack processes them.
            out = c._run(x, mask, init, training, return_sequences=self.return_sequences or not last,
                         return_state=self.return_state or kept, go_backwards=self.go_backwards,
                         flip_output=self.go_backwards and not last, zero_output_for_mask=self.zero_output_for_mask)
            if self.return_state or kept:
                out = list(out)
                if kept:
                    self._keep(out, self._state_vars[at:at + n])
                x, finals = out[0], finals + out[1:]
            else:
                x = out
            at += n
        if self.return_sequences and mask is not None and isinstance(x, KerasTensor):
            x._keras_mask = mask
        return [x] + finals if self.return_state else x

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: the input's mask on the sequence output (recurrent.sequence_output_mask)."""
        n = sum(2 if c._spec._cell == "lstm" else 1 for c in self._cells())
        return sequence_output_mask(mask, self.return_sequences, self.return_state, n)

    def get_config(self):
        from flexflow_keras.layers import serialize_wrapped as serialize

        return {**super().get_config(), "cell": serialize(self.cell), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask}

    @classmethod
    def from_config(cls, config):
        from flexflow_keras.layers import deserialize

        config = dict(config)
        return cls(deserialize(config.pop("cell")), **config)

