"""Recurrent layers: `SimpleRNN`, `LSTM`, `GRU` (Keras 3 semantics and defaults), each one fused
`RecurrentOp` over all time steps.

Defaults are Keras 3's: glorot_uniform kernel, orthogonal recurrent kernel, zero bias (LSTM's forget-gate
bias one with ``unit_forget_bias``), tanh / sigmoid, GRU ``reset_after=True`` with a (2, 3*units) bias
(``reset_after=False``: a (3*units,) bias, the reset gate applied before the candidate's recurrent matmul).
``stateful=True`` keeps each sample slot's final state for the next batch (Variables of shape
(batch, units), outside the layer's weights as in Keras 3): the batch size must be declared, and every
step (training, evaluation, prediction) copies the final states into them (execution/step.py); reset
them with ``reset_states()``. Masks come from the ``mask`` argument, which a call fills from the input's ``_keras_mask`` (set by
``Embedding(mask_zero=True)``, `Masking` and mask-propagating layers) as Keras 3 does: not when
``initial_state`` tensors are passed too (layers/mask_hooks.call_masks); a masked step keeps the previous
state and repeats the previous output. With ``return_sequences`` the input's mask is passed on to the
output, also when the call got none (`compute_mask`, as Keras 3's RNN).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import activations, constraints, initializers, regularizers
from flexflow_keras.errors import ArgumentError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops.graph import KerasTensor, Variable
from flexflow_keras.ops.recurrent import recurrent
from flexflow_keras.utils import rng, tree


def _kernel_activation(layer, arg: str, value):
    """(function, kernel name) of an activation argument; custom functions cannot run in the fused op."""
    fn = activations.get(value)
    name = "linear" if fn is activations.linear else activations.fusable_name(fn)
    if name is None:
        raise ValueError(f"{_args.who(layer)}: {arg}={value!r} is not supported; the fused recurrent kernel "
                         f"takes built-in element-wise activations ('tanh', 'sigmoid', 'relu', 'hard_sigmoid', "
                         f"...).")
    return fn, name


def sequence_output_mask(mask, return_sequences: bool, return_state: bool, n_states: int, n_outputs: int = 1):
    """Keras 3's `RNN.compute_mask`: the input's time-step mask (of a list of masks, the first) on each
    sequence output when it returns sequences, None on the last-step outputs and on the states. Keras
    uses it also when the call got no mask (initial_state tensors passed beside the input): the output
    still carries the input's mask, which a loss or a later layer reads."""
    if isinstance(mask, (list, tuple)):
        mask = tree.flatten(mask)[0] if tree.flatten(mask) else None
    out = [mask if return_sequences else None] * n_outputs
    if return_state:
        return out + [None] * n_states
    return out[0] if n_outputs == 1 else out


class KeptStates:
    """``stateful=True``: the final states of each batch kept in Variables for the next one. The layer's
    recurrent op node that produces them carries them as ``node.kept_states``; every step copies that
    node's final states into them (execution/step.py)."""

    _state_vars: list | None = None

    # --- stateful (shared with RNN(cell)) ----------------------------------------------------------------------------------------
    def _kept_states(self, inputs, sizes) -> list:
        """The kept states, one (batch, size) Variable per entry of `sizes` (created zero at the first call,
        for the declared batch size; an eager first call's batch is its array's, as Keras 3 builds the
        layer on that shape: keras.io's RNN guide calls LSTM(64, stateful=True) on arrays)."""
        if self._state_vars is None:
            batch = _args.static_batch(self, inputs)
            first = tree.flatten(inputs)[0] if tree.flatten(inputs) else None
            if batch is None and first is not None and not isinstance(first, KerasTensor) and hasattr(first, "shape"):
                batch = int(first.shape[0])
            if batch is None:
                raise ValueError(f"{_args.who(self)}: stateful=True needs a fixed batch size, since the state of "
                                 f"each sample slot is kept for the next batch. Declare it: keras.Input(shape=..., "
                                 f"batch_size=B), or batch_input_shape=(B, ...) / batch_size=B on the first layer.")
            self.__dict__["_state_vars"] = [
                Variable(f"state_{k}", (batch, size), initializer=np.zeros((batch, size), np.float32),
                         trainable=False, path=f"{self.name}/state_{k}") for k, size in enumerate(sizes)]
        return list(self._state_vars)

    @property
    def states(self):
        """Keras 3: the kept states of a stateful layer (Variables of shape (batch, units)); else None."""
        return list(self._state_vars) if self._state_vars is not None else None

    def reset_states(self, states=None):
        """Zero the kept states of a stateful layer (or set them to `states`, one (batch, units) array each);
        a no-op for a layer that keeps none. The next batch starts from them, mid-fit included."""
        if self._state_vars is None:
            return
        if states is not None and not isinstance(states, (list, tuple)):
            states = [states]
        if states is not None and len(states) != len(self._state_vars):
            raise ValueError(f"{_args.who(self)}.reset_states expects {len(self._state_vars)} state array(s), "
                             f"received {len(states)}.")
        for k, var in enumerate(self._state_vars):
            var.assign(np.zeros(var.shape, np.float32) if states is None else np.asarray(states[k], np.float32))

    reset_state = reset_states

    def get_initial_state(self, batch_size):
        """Keras 3: the zero states for `batch_size` samples, one (batch_size, size) tensor per state (h, or
        h and c for an LSTM). `batch_size` may be ``ops.shape(x)[0]`` of a symbolic x, or (as tf.keras 2 took
        it) a tensor whose batch it is."""
        from flexflow_keras import ops
        from flexflow_keras.ops.numpy_api import BatchDim

        if hasattr(batch_size, "shape") and not isinstance(batch_size, int | np.integer):
            if len(batch_size.shape) == 0 and np.dtype(getattr(batch_size, "dtype", "float32")).kind in "iu":
                batch_size = int(batch_size)  # tf.shape(x)[0] of an eager x (a custom train_step run eagerly)
            else:
                batch_size = ops.shape(batch_size)[0]
        if not isinstance(batch_size, BatchDim | int | np.integer):
            raise ArgumentError(f"{_args.who(self)}.get_initial_state expects a batch size (an int, or "
                                f"ops.shape(x)[0]), received {batch_size!r}.")
        return [ops.zeros((batch_size, int(size)), "float32") for size in self._state_sizes()]

    def _state_sizes(self) -> list:
        """The size of each state the layer carries (RNN(cell): its cells' state sizes, in order)."""
        cells = self._cells() if hasattr(self, "_cells") else None
        if cells is not None:
            sizes = []
            for cell in cells:
                size = cell.state_size
                sizes += list(size) if isinstance(size, list | tuple) else [size]
            return sizes
        return [self.units] * (2 if self._cell == "lstm" else 1)


    def _keep(self, out: list, kept: list) -> None:
        """Tie the final states in `out` (an op's [output, *final states]) to `kept`: a symbolic call marks
        its node for the step's state copy; an eager call keeps them at once."""
        if isinstance(out[0], KerasTensor):
            out[0].node.kept_states = list(kept)
        else:
            for var, value in zip(kept, out[1:], strict=True):
                var.assign(value)


class _Recurrent(KeptStates, Layer):
    """Shared argument handling, weights and call of the three recurrent layers."""

    _cell = "lstm"
    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, zero_output_for_mask=False,
                 implementation=None, use_cudnn="auto", **kwargs):
        input_dim, input_length = kwargs.pop("input_dim", None), kwargs.pop("input_length", None)
        super().__init__(**kwargs)
        if input_dim is not None and self._batch_input_shape is None:  # Keras 2: input_dim / input_length
            self._batch_input_shape = (kwargs.get("batch_size"), input_length, int(input_dim))
        self.units = _args.positive_int(self, "units", units)
        self.activation, self._act_name = _kernel_activation(self, "activation", activation)
        self.recurrent_activation, self._ract_name = _kernel_activation(
            self, "recurrent_activation", recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = _args.rate(self, "dropout", dropout)
        self.recurrent_dropout = _args.rate(self, "recurrent_dropout", recurrent_dropout)
        for arg in ("dropout", "recurrent_dropout"):
            if getattr(self, arg) >= 1.0:
                raise ValueError(f"{_args.who(self)} expects {arg} in [0, 1), received {arg}={getattr(self, arg)!r} "
                                 f"(every unit would be dropped).")
        self.seed = seed
        self._seed = int(seed) if seed is not None else rng.default_seed()
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self._state_vars: list | None = None  # stateful: the kept states, (batch, units) each
        self.unroll = bool(unroll)  # accepted: the fused op computes the same numbers either way
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.implementation = implementation  # Keras' kernel grouping choice; no numerical effect
        self.use_cudnn = use_cudnn
        self._flip_output = False  # set by Bidirectional on its backward layer
        self.kernel = self.recurrent_kernel = self.bias = None

    # --- weights ------------------------------------------------------------------------------------------
    def _bias_shape(self) -> tuple[int, ...]:
        return (self._gates * self.units,)

    def _bias_init(self):
        return self.bias_initializer

    def build(self, input_shape):
        if isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple)):
            input_shape = input_shape[0]
        if input_shape is None or len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(f"{_args.who(self)} expects inputs of shape (batch, timesteps, features), received "
                             f"input_shape={input_shape}.")
        gh = self._gates * self.units
        self.kernel = self.add_weight(shape=(int(input_shape[-1]), gh), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, gh), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
        if self.use_bias:
            self.bias = self.add_weight(shape=self._bias_shape(), initializer=self._bias_init(),
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        name="bias")

    # --- call ---------------------------------------------------------------------------------------------
    def _op_attrs(self) -> dict:
        return dict(cell=self._cell, units=self.units, activation=self._act_name,
                    recurrent_activation=self._ract_name, go_backwards=self.go_backwards,
                    return_sequences=self.return_sequences, return_state=self.return_state,
                    flip_output=self._flip_output, zero_output_for_mask=self.zero_output_for_mask,
                    dropout=self.dropout, recurrent_dropout=self.recurrent_dropout, seed=self._seed)

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(inputs, (list, tuple)):  # Keras 2: layer([x, h0, c0])
            inputs, extra = inputs[0], list(inputs[1:])
            initial_state = initial_state if initial_state is not None else (extra or None)
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if initial_state is not None and not isinstance(initial_state, (list, tuple)):
            initial_state = [initial_state]
        n_states = 2 if self._cell == "lstm" else 1
        if initial_state is not None and len(initial_state) != n_states:
            raise ValueError(f"{_args.who(self)} expects initial_state to be a list of {n_states} tensor(s) of "
                             f"shape (batch, {self.units}), received {len(initial_state)}.")
        attrs = self._op_attrs()
        kept = self.stateful and initial_state is None
        if kept:
            initial_state = self._kept_states(inputs, [self.units] * n_states)
            attrs["return_state"] = True  # the final states are copied into the kept ones after each batch
        out = recurrent(inputs, self.kernel, self.recurrent_kernel, self.bias if self.use_bias else None, mask,
                        initial_state, training=training, **attrs)
        if kept:
            out = list(out)
            self._keep(out, self._state_vars)
            if not self.return_state:
                out = out[0]
        if self.return_state:
            out = list(out)
        y = out[0] if self.return_state else out
        if self.return_sequences and mask is not None and isinstance(y, KerasTensor):
            y._keras_mask = mask
        return out

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: the input's mask on the sequence output (see `sequence_output_mask`)."""
        return sequence_output_mask(mask, self.return_sequences, self.return_state, 2 if self._cell == "lstm" else 1)

    def get_config(self):
        return {**super().get_config(), "units": self.units, **recurrent_config(self), "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask}


def recurrent_config(layer) -> dict:
    """The config entries every recurrent layer shares (LSTM, GRU, SimpleRNN, the ConvLSTMs): activations,
    the kernel / recurrent kernel / bias arguments, dropouts and the sequence options, serialized."""
    return {"activation": activations.serialize(layer.activation),
            "recurrent_activation": activations.serialize(layer.recurrent_activation),
            "use_bias": layer.use_bias,
            "kernel_initializer": initializers.serialize(layer.kernel_initializer),
            "recurrent_initializer": initializers.serialize(layer.recurrent_initializer),
            "bias_initializer": initializers.serialize(layer.bias_initializer),
            "kernel_regularizer": regularizers.serialize(layer.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(layer.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(layer.bias_regularizer),
            "kernel_constraint": constraints.serialize(layer.kernel_constraint),
            "recurrent_constraint": constraints.serialize(layer.recurrent_constraint),
            "bias_constraint": constraints.serialize(layer.bias_constraint),
            "dropout": layer.dropout, "recurrent_dropout": layer.recurrent_dropout, "seed": layer.seed,
            "return_sequences": layer.return_sequences, "return_state": layer.return_state,
            "go_backwards": layer.go_backwards, "stateful": layer.stateful}


class SimpleRNN(_Recurrent):
    """Fully-connected RNN: ``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)``.

    Args:
        units: the state size. activation: default "tanh". use_bias, kernel_initializer,
            recurrent_initializer, bias_initializer, *_regularizer, *_constraint: as in Keras.
        dropout, recurrent_dropout: rates of the masks on the inputs and on the state (training only).
        return_sequences: return every step's output (B, T, units), else the last (B, units).
        return_state: also return the final state. go_backwards: process the sequence in reverse.
        zero_output_for_mask: masked steps output zeros. unroll, implementation, use_cudnn: accepted; the
            fused op computes the same numbers. stateful: keep the final states for the next batch (a declared batch size).

    Example:
        >>> SimpleRNN(16, return_sequences=True)
    """

    _cell = "simple_rnn"
    _gates = 1

    def __init__(self, units, activation="tanh", **kwargs):
        kwargs.pop("recurrent_activation", None)
        super().__init__(units, activation=activation, recurrent_activation="sigmoid", **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("recurrent_activation")
        return config


class LSTM(_Recurrent):
    """Long short-term memory (Keras 3 gate order i, f, c, o).

    Args:
        units, activation ("tanh"), recurrent_activation ("sigmoid"): as in Keras.
        unit_forget_bias: initialise the forget gate's bias to one (default True).
        Others: see `SimpleRNN`. ``return_state`` returns ``[output, h, c]``.

    Example:
        >>> LSTM(128, dropout=0.2, recurrent_dropout=0.2)
    """

    _cell = "lstm"
    _gates = 4

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, n = self.bias_initializer, self.units

        def init(shape, dtype=None):
            return np.concatenate([np.asarray(base((n,), dtype)), np.ones((n,), dtype),
                                   np.asarray(base((2 * n,), dtype))]).astype(dtype)

        return init

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRU(_Recurrent):
    """Gated recurrent unit (Keras 3: gate order z, r, h).

    Args:
        units, activation ("tanh"), recurrent_activation ("sigmoid"): as in Keras.
        reset_after: True (Keras 3's default, cuDNN-compatible): the reset gate multiplies the recurrent
            candidate projection, with separate input and recurrent biases (bias shape (2, 3*units)).
            False (Keras 2's default): the reset gate multiplies the state before the candidate's
            recurrent matmul, with one bias (3*units,).
        Others: see `SimpleRNN`.
    """

    _gates = 3

    def __init__(self, units, reset_after=True, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)
        self._cell = "gru" if self.reset_after else "gru_reset_before"

    def _bias_shape(self):
        return (2, self._gates * self.units) if self.reset_after else (self._gates * self.units,)

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}
