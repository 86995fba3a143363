"""Sequence helpers around the recurrent layers: `Bidirectional`, `TimeDistributed`, `RepeatVector` and
`Masking` (Keras 3 semantics).

Masks travel as the ``_keras_mask`` attribute of a symbolic tensor, as in Keras: `Masking` and
``Embedding(mask_zero=True)`` set it, recurrent layers read it, and `Bidirectional` / `TimeDistributed`
pass it on where Keras does.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.core import Activation, Dense, Dropout
from flexflow_keras.layers.recurrent import _Recurrent, sequence_output_mask
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.ops.time_slice import time_slice

_MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _with_mask(y, mask):
    if mask is not None and isinstance(y, KerasTensor):
        y._keras_mask = mask
    return y


class Masking(Layer):
    """Mask the time steps whose features all equal `mask_value`: their features become zero and the
    output carries a (batch, timesteps) mask that recurrent layers honour.

    Args:
        mask_value: the padding value (default 0.0).
    """

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)

    def call(self, inputs):
        keep = ops.max(ops.cast(ops.not_equal(inputs, self.mask_value), inputs.dtype), axis=-1)
        y = ops.multiply(inputs, ops.expand_dims(keep, -1))
        if not isinstance(y, KerasTensor):
            return y
        return _with_mask(y, ops.not_equal(keep, 0.0))  # a bool mask, as Keras'

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: the time steps with a feature other than mask_value (an eager output carries it too)."""
        return ops.any(ops.not_equal(inputs, self.mask_value), axis=-1)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


class RepeatVector(Layer):
    """Repeat a (batch, features) input `n` times: (batch, n, features).

    Args:
        n: the number of repetitions.
    """

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = _args.positive_int(self, "n", n)

    def call(self, inputs):
        if len(inputs.shape) != 2:
            raise ValueError(f"{_args.who(self)} expects a 2-D input (batch, features), received shape "
                             f"{tuple(inputs.shape)}.")
        ones = np.ones((1, self.n, 1), np.dtype(inputs.dtype))
        return ops.multiply(ops.expand_dims(inputs, 1), ops.constant(ones) if isinstance(inputs, KerasTensor)
                            else ones)

    def get_config(self):
        return {**super().get_config(), "n": self.n}


# Layers whose op acts on the last axis of inputs of any rank: TimeDistributed calls them directly.
_LAST_AXIS_LAYERS = (Dense, Activation, Dropout)


class TimeDistributed(Layer):
    """Apply `layer` to every time step of a (batch, timesteps, ...) input.

    Dense, Activation and Dropout act on the last axis directly (one op for all steps); other layers are
    applied step by step, sharing their weights. The input's mask is passed on.

    Args:
        layer: the layer to apply.
    """

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(f"{_args.who(self)} expects a Layer instance, received {layer!r}.")
        self.layer = layer

    def build(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(f"{_args.who(self)} expects inputs of rank >= 3 (batch, timesteps, ...), received "
                             f"input_shape={tuple(input_shape)}.")
        if not self.layer.built:  # built here so weights= (set after build) reaches it
            step_shape = tuple(input_shape) if isinstance(self.layer, _LAST_AXIS_LAYERS) else (
                (input_shape[0],) + tuple(input_shape[2:]))
            self.layer.build(step_shape)

    def call(self, inputs, training=None, mask=None):
        if mask is None:
            mask = getattr(inputs, "_keras_mask", None)
        if isinstance(self.layer, _LAST_AXIS_LAYERS):
            y = self.layer(inputs, training=training)
            if isinstance(y, KerasTensor):  # Keras stacks the steps' outputs: a softmax's logits stay behind
                y.keras_logits_lost = True  # (ops/loss_functions.activation_logits)
            return _with_mask(y, mask)
        steps = inputs.shape[1]
        if steps is None:
            step = tuple(inputs.shape[2:])
            raise ShapeError(
                f"{_args.who(self)} wraps {type(self.layer).__name__}, which flexflow_keras applies once per "
                f"timestep, so it needs a known number of timesteps; received input shape "
                f"{tuple(inputs.shape)}. Give the number in the input shape (input_shape={(4,) + step} for 4 "
                f"steps, not {(None,) + step}), and pad the sequences to that length.")
        outs = [self.layer(time_slice(inputs, t), training=training) for t in range(steps)]
        y = ops.concatenate([ops.expand_dims(o, 1) for o in outs], axis=1)
        return _with_mask(y, mask)

    def get_config(self):
        from flexflow_keras.layers import serialize_wrapped as serialize

        return {**super().get_config(), "layer": serialize(self.layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(_wrapped_layer(config.pop("layer")), **config)


class Bidirectional(Layer):
    """Run a recurrent layer forwards and a copy backwards over the sequence and merge their outputs.

    Args:
        layer: a SimpleRNN, LSTM or GRU (copied from its config as the forward layer).
        merge_mode: "concat" (default), "sum", "mul", "ave" or None (a list of both outputs).
        backward_layer: the backward layer (default: a copy of `layer` with go_backwards flipped); it must
            have the opposite go_backwards and the same return_sequences / return_state.

    With ``return_sequences`` the backward output is in natural time order and masked steps output zeros
    (Keras forces ``zero_output_for_mask``). With ``return_state`` the output is ``[merged, *forward_states,
    *backward_states]``.
    """

    def __init__(self, layer, merge_mode="concat", backward_layer=None, weights=None, **kwargs):
        super().__init__(weights=weights, **kwargs)
        if not isinstance(layer, _Recurrent):
            raise ValueError(f"{_args.who(self)} expects a SimpleRNN, LSTM or GRU layer, received {layer!r}.")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"{_args.who(self)} expects merge_mode in {list(_MERGE_MODES)}, received "
                             f"merge_mode={merge_mode!r}.")
        config = layer.get_config()
        base = layer.name.removeprefix("forward_")
        self.forward_layer = type(layer).from_config({**config, "name": "forward_" + base})
        if backward_layer is None:
            back = {**config, "name": "backward_" + base, "go_backwards": not layer.go_backwards}
            backward_layer = type(layer).from_config(back)
        elif not isinstance(backward_layer, _Recurrent):
            raise ValueError(f"{_args.who(self)} expects backward_layer to be a SimpleRNN, LSTM or GRU, received "
                             f"{backward_layer!r}.")
        if backward_layer.go_backwards == self.forward_layer.go_backwards:
            raise ValueError(f"{_args.who(self)}: forward_layer and backward_layer need opposite go_backwards, "
                             f"received go_backwards={layer.go_backwards} for both.")
        for attr in ("return_sequences", "return_state"):
            if getattr(backward_layer, attr) != getattr(layer, attr):
                raise ValueError(f"{_args.who(self)}: forward and backward layers need the same {attr}, received "
                                 f"{getattr(layer, attr)} and {getattr(backward_layer, attr)}.")
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        for sub in (self.forward_layer, self.backward_layer):
            sub.zero_output_for_mask = self.return_sequences
        self.backward_layer._flip_output = self.return_sequences

    def build(self, input_shape):
        for sub in (self.forward_layer, self.backward_layer):  # built here so weights= reaches them
            if not sub.built:
                sub.build(input_shape)

    def call(self, inputs, mask=None, training=None, initial_state=None):
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = list(initial_state[:half]), list(initial_state[half:])
        fw = self.forward_layer(inputs, mask=mask, training=training, initial_state=fw_state)
        bw = self.backward_layer(inputs, mask=mask, training=training, initial_state=bw_state)
        states = []
        if self.return_state:
            fw, states = fw[0], list(fw[1:]) + list(bw[1:])
            bw = bw[0]
        if self.merge_mode == "concat":
            y = ops.concatenate([fw, bw], axis=-1)
        elif self.merge_mode == "sum":
            y = ops.add(fw, bw)
        elif self.merge_mode == "mul":
            y = ops.multiply(fw, bw)
        elif self.merge_mode == "ave":
            y = ops.multiply(ops.add(fw, bw), 0.5)
        else:
            y = [fw, bw]
        if self.return_sequences and mask is not None:
            for t in y if isinstance(y, list) else [y]:
                _with_mask(t, mask)
        if self.return_state:
            return (y if isinstance(y, list) else [y]) + states
        return y

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: the input's mask on the merged output (on both outputs when merge_mode is None)."""
        n = 2 if self.forward_layer._cell == "lstm" else 1
        return sequence_output_mask(mask, self.return_sequences, self.return_state, 2 * n,
                                    1 if self.merge_mode else 2)

    def get_config(self):
        from flexflow_keras.layers import serialize_wrapped as serialize

        return {**super().get_config(), "layer": serialize(self.forward_layer), "merge_mode": self.merge_mode,
                "backward_layer": serialize(self.backward_layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        layer = _wrapped_layer(config.pop("layer"))
        back = config.pop("backward_layer", None)
        return cls(layer, backward_layer=_wrapped_layer(back) if back is not None else None, **config)


def _wrapped_layer(config):
    """The wrapped layer of a saved TimeDistributed / Bidirectional config, ours or tf.keras' (whose nested
    configs carry Keras 3's extras: a DTypePolicy dict, initializer arguments Keras added later)."""
    from flexflow_keras.saving.config_load import deserialize_layer

    return deserialize_layer(config, where="a wrapped layer's config")
