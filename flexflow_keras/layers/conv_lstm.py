"""ConvLSTM1D, ConvLSTM2D and ConvLSTM3D: Keras 3's convolutional LSTMs over sequences of frames
(batch, time, *spatial, channels), one `ConvLSTMOp` each (ops/conv_lstm.py). Keras' arguments, weights
(kernel, recurrent_kernel, bias; saved where Keras keeps them, on the layer's cell), the forget gate's bias
at one (`unit_forget_bias`), channels_first through transposes. Dropout on the inputs or the state, a
stateful layer, an initial state and a mask are clear errors (not built yet).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import activations, backend, constraints, initializers, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.layers.recurrent import recurrent_config
from flexflow_keras.ops.conv_lstm import conv_lstm
from flexflow_keras.utils import rng


class _ConvLSTM(Layer):
    """The ConvLSTM layers; subclasses set `_rank`."""

    _rank = 2
    _float_math = True
    _weights_on_cell = "conv_lstm_cell"  # Keras 3 keeps them on a ConvLSTMCell (models/weights_io.py)

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="sigmoid", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", unit_forget_bias=True,
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, **kwargs):
        kwargs.pop("unroll", None)  # Keras 3 takes it and ignores it too
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        n = self._rank
        self.filters = _args.positive_int(self, "filters", filters)
        self.kernel_size = _args.int_tuple(self, "kernel_size", kernel_size, n)
        self.strides = _args.int_tuple(self, "strides", strides, n)
        self.padding = _args.padding(self, padding)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.dilation_rate = _args.int_tuple(self, "dilation_rate", dilation_rate, n)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{_args.who(self)}: strides={self.strides} above 1 cannot be combined with "
                             f"dilation_rate={self.dilation_rate} above 1 (as in Keras); set one of them to 1.")
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        for what, fn in (("activation", self.activation), ("recurrent_activation", self.recurrent_activation)):
            if activations.fusable_name(fn) is None:
                raise ValueError(f"{_args.who(self)}: {what}={activations.serialize(fn)!r} is not a built-in "
                                 f"element-wise activation, which the ConvLSTM kernels need; use 'tanh', "
                                 f"'sigmoid', 'hard_sigmoid', 'relu', ...")
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        if seed is None:  # Keras' ConvLSTM cell makes a SeedGenerator (utils/rng.default_seed)
            rng.keras_draw()
        self.unit_forget_bias = bool(unit_forget_bias)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if rate:
                raise ValueError(f"{_args.who(self)}: {what}={rate!r} is not implemented by flexflow_keras's "
                                 f"ConvLSTM yet; leave it 0, or put a SpatialDropout3D / Dropout layer before it.")
        if stateful:
            raise ValueError(f"{_args.who(self)}: stateful=True is not implemented by flexflow_keras's ConvLSTM "
                             f"yet; feed the whole sequence at once.")
        self.dropout, self.recurrent_dropout, self.seed, self.stateful = 0.0, 0.0, seed, False
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.input_spec = InputSpec(ndim=n + 3)
        self.kernel = self.recurrent_kernel = self.bias = None

    def _channel_axis(self) -> int:
        return 2 if self.data_format == "channels_first" else -1

    def build(self, input_shape):
        channels = input_shape[self._channel_axis()]
        if channels is None:
            raise ShapeError(f"{_args.who(self)} needs a known channels dim, received input shape {input_shape}.")
        f = self.filters
        self.kernel = self.add_weight(name="kernel", shape=self.kernel_size + (channels, 4 * f),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(name="recurrent_kernel", shape=self.kernel_size + (f, 4 * f),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(4 * f,), initializer=self._bias_init(),
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint)
        self.input_spec = InputSpec(ndim=self._rank + 3, axes={self._channel_axis(): channels})

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, f = self.bias_initializer, self.filters

        def init(shape, dtype=None):  # Keras': zeros for i, ones for f, the initializer for c and o
            return np.concatenate([np.asarray(base((f,), dtype)), np.ones((f,), dtype),
                                   np.asarray(base((2 * f,), dtype))]).astype(dtype)

        return init

    def _perm(self, to_last: bool):
        n = self._rank
        if to_last:
            return (0, 1) + tuple(range(3, n + 3)) + (2,)
        return (0, 1, n + 2) + tuple(range(2, n + 2))

    def call(self, inputs, mask=None, training=None, initial_state=None):
        from flexflow_keras import ops

        if mask is not None or getattr(inputs, "_keras_mask", None) is not None:
            raise ValueError(f"{_args.who(self)}: a mask (from Masking or an argument) is not implemented by "
                             f"flexflow_keras's ConvLSTM yet; feed sequences of one length without a mask.")
        if initial_state is not None:
            raise ValueError(f"{_args.who(self)}: initial_state is not implemented by flexflow_keras's ConvLSTM yet; "
                             f"it starts from zero states, as Keras does without it.")
        first = self.data_format == "channels_first"
        x = ops.transpose(inputs, self._perm(True)) if first else inputs
        y, h, c = conv_lstm(x, self.kernel, self.recurrent_kernel, self.bias, self.strides, self.padding,
                            self.dilation_rate, activations.fusable_name(self.activation),
                            activations.fusable_name(self.recurrent_activation), self.go_backwards,
                            self.return_sequences)
        if first:
            frame = (0, self._rank + 1) + tuple(range(1, self._rank + 1))
            y = ops.transpose(y, self._perm(False) if self.return_sequences else frame)
            h, c = ops.transpose(h, frame), ops.transpose(c, frame)
        return [y, h, c] if self.return_state else y

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, **recurrent_config(self),
                "unit_forget_bias": self.unit_forget_bias}


class ConvLSTM1D(_ConvLSTM):
    """Convolutional LSTM over sequences of 1-D frames (batch, time, steps, channels).

    Example:
        >>> ConvLSTM1D(4, 3, padding="same")(np.zeros((2, 5, 8, 3), "float32")).shape
        (2, 8, 4)
    """

    _rank = 1


class ConvLSTM2D(_ConvLSTM):
    """Convolutional LSTM over sequences of images (batch, time, rows, cols, channels), as keras.io's
    next-frame prediction uses it: Keras 3's arguments, gates i, f, c, o, ``return_sequences``,
    ``return_state`` ([output, h, c]) and ``go_backwards``.

    Example:
        >>> ConvLSTM2D(8, 3, padding="same", return_sequences=True)(np.zeros((1, 4, 16, 16, 1), "float32")).shape
        (1, 4, 16, 16, 8)
    """

    _rank = 2


class ConvLSTM3D(_ConvLSTM):
    """Convolutional LSTM over sequences of volumes (batch, time, depth, rows, cols, channels)."""

    _rank = 3
