"""Pooling layers: MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D/GlobalMaxPooling2D (and the
1-D global poolings, over the steps of a ``(batch, steps, features)`` input; GlobalAveragePooling1D
averages over the unmasked steps when the input carries a mask, as in Keras 3)."""

from __future__ import annotations

from flexflow_keras import backend, ops
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.convolutional import (
    check_window_fits,
    from_channels_last,
    image_hint,
    to_channels_last,
)
from flexflow_keras.layers.input_spec import InputSpec


class _Pooling2D(Layer):
    _float_math = True

    _mode = "max"

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _args.int_tuple(self, "pool_size", pool_size, 2)
        self.strides = self.pool_size if strides is None else _args.int_tuple(self, "strides", strides, 2)
        self.padding = _args.padding(self, padding)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.input_spec = InputSpec(ndim=4)

    def _input_hint(self, index, shape, spec):
        return image_hint(self, shape)

    def call(self, inputs):
        x = to_channels_last(self, inputs)
        check_window_fits(self, x, self.pool_size, f"pool_size {self.pool_size}", "pool_size")
        y = ops.pool2d(x, self.pool_size, self.strides, self.padding, self._mode)
        y = from_channels_last(self, y)
        return y

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling2D(_Pooling2D):
    """Maximum over `pool_size` windows.

    Args:
        pool_size: int or (ph, pw).
        strides: int or (sy, sx); `pool_size` when None.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    _mode = "max"


class AveragePooling2D(_Pooling2D):
    """Mean over `pool_size` windows (with ``"same"`` padding, over the valid part of each window).

    Args:
        pool_size: int or (ph, pw).
        strides: int or (sy, sx); `pool_size` when None.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    _mode = "avg"


class _GlobalPooling(Layer):
    """Shared arguments and config of the global poolings; subclasses set `_ndim` (input rank) and `_mode`."""

    _float_math = True

    _mode = "avg"
    _ndim = 4

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._ndim)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class _GlobalPooling2D(_GlobalPooling):
    _ndim = 4

    def _input_hint(self, index, shape, spec):
        return image_hint(self, shape)

    def call(self, inputs):
        x = to_channels_last(self, inputs)
        y = ops.global_pool2d(x, self._mode)
        if self.keepdims:
            c = y.shape[-1]
            y = ops.reshape(y, (-1, c, 1, 1) if self.data_format == "channels_first" else (-1, 1, 1, c))
        return y


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Mean over the spatial dims: ``(N, H, W, C) -> (N, C)``.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.
        keepdims: keep the spatial dims as size 1.
    """

    _mode = "avg"


class GlobalMaxPooling2D(_GlobalPooling2D):
    """Maximum over the spatial dims: ``(N, H, W, C) -> (N, C)``.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.
        keepdims: keep the spatial dims as size 1.
    """

    _mode = "max"


class _GlobalPooling1D(_GlobalPooling):
    _ndim = 3

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":  # (N, C, steps) -> (N, steps, C)
            x = ops.transpose(x, (0, 2, 1))
        steps, c = x.shape[1], x.shape[2]
        if steps is None:  # variable-length sequences (Input(shape=(None,)) before an Embedding)
            reduce = ops.mean if self._mode == "avg" else ops.max
            y = reduce(x, axis=1)
        else:
            y = ops.global_pool2d(ops.reshape(x, (-1, steps, 1, c)), self._mode)
        if self.keepdims:
            y = ops.reshape(y, (-1, c, 1) if self.data_format == "channels_first" else (-1, 1, c))
        return y


class GlobalAveragePooling1D(_GlobalPooling1D):
    """Mean over the steps of ``(N, steps, features)`` (the usual head after an Embedding).

    With a mask (``(N, steps)``, from ``Embedding(mask_zero=True)``, `Masking` or ``mask=``), the mean is
    over the unmasked steps only, as in Keras 3; the output carries no mask.

    Args:
        data_format: ``"channels_last"`` (steps, features) or ``"channels_first"`` (features, steps).
        keepdims: keep the steps dim as size 1.
    """

    _mode = "avg"

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        steps_axis = 1 if self.data_format == "channels_last" else 2
        if tuple(mask.shape[1:]) != (inputs.shape[steps_axis],):
            raise ValueError(f"{_args.who(self)} expects a mask of shape (batch, {inputs.shape[steps_axis]}) for "
                             f"inputs of shape {tuple(inputs.shape)}, received a mask of shape {tuple(mask.shape)}.")
        m = ops.expand_dims(ops.cast(mask, inputs.dtype), 2 if steps_axis == 1 else 1)
        total = ops.sum(ops.multiply(inputs, m), axis=steps_axis, keepdims=self.keepdims)
        return ops.divide(total, ops.sum(m, axis=steps_axis, keepdims=self.keepdims))


class GlobalMaxPooling1D(_GlobalPooling1D):
    """Maximum over the steps of ``(N, steps, features)``; a mask is ignored (masked steps count) and
    dropped, as in Keras 3.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.
        keepdims: keep the steps dim as size 1.
    """

    _mode = "max"


MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
GlobalAvgPool1D, GlobalMaxPool1D = GlobalAveragePooling1D, GlobalMaxPooling1D
