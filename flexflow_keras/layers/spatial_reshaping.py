"""Spatial reshaping layers: UpSampling1D/2D, ZeroPadding1D/2D and Cropping1D/2D (channels_last by
default; the 2-D ones and ZeroPadding1D accept channels_first through transposes). Each is one op of
`flexflow_keras.ops.spatial`."""

from __future__ import annotations

from flexflow_keras import backend
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.conv1d import steps_back, steps_hint, steps_last
from flexflow_keras.layers.convolutional import from_channels_last, image_hint, to_channels_last
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops.spatial import spatial_pad, upsample


def _pairs(layer, arg: str, value) -> tuple[tuple[int, int], tuple[int, int]]:
    """Keras' 2-D padding/cropping argument: an int, (symmetric_h, symmetric_w) or ((top, bottom),
    (left, right)) of non-negative ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    try:
        items = tuple(value)
    except TypeError:
        items = ()
    if len(items) != 2:
        raise ValueError(f"{_args.who(layer)} expects {arg} to be an int, a tuple of 2 ints or a tuple of 2 tuples "
                         f"of 2 ints, received {arg}={value!r}.")
    return tuple(_args.int_tuple(layer, arg, v, 2, allow_zero=True) for v in items)


class _Spatial2D(Layer):
    """A 2-D layer with a data_format, computing on the channels-last view."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))
        self.input_spec = InputSpec(ndim=4)

    def _input_hint(self, index, shape, spec):
        return image_hint(self, shape)

    def call(self, inputs):
        return from_channels_last(self, self._apply(to_channels_last(self, inputs)))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class UpSampling2D(_Spatial2D):
    """Repeat (``"nearest"``) or interpolate (``"bilinear"``, TensorFlow's half-pixel centres) rows and
    columns by integer factors.

    Args:
        size: int or (fh, fw).
        data_format: ``"channels_last"`` or ``"channels_first"``.
        interpolation: ``"nearest"`` or ``"bilinear"``.

    Example:
        >>> UpSampling2D(2)(np.zeros((1, 3, 4, 2), "float32")).shape
        (1, 6, 8, 2)
    """

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = _args.int_tuple(self, "size", size, 2)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"{_args.who(self)} supports interpolation 'nearest' or 'bilinear', received "
                             f"interpolation={interpolation!r}.")
        self.interpolation = interpolation

    def _apply(self, x):
        return upsample(x, self.size, self.interpolation)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "interpolation": self.interpolation}


class ZeroPadding2D(_Spatial2D):
    """Add rows and columns of zeros around each image.

    Args:
        padding: int, (symmetric_h, symmetric_w) or ((top, bottom), (left, right)).
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs(self, "padding", padding)

    def _apply(self, x):
        return spatial_pad(x, self.padding)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding}


class Cropping2D(_Spatial2D):
    """Remove rows and columns at the borders of each image.

    Args:
        cropping: int, (symmetric_h, symmetric_w) or ((top, bottom), (left, right)).
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _pairs(self, "cropping", cropping)

    def _apply(self, x):
        for d, (before, after) in enumerate(self.cropping):
            size = x.shape[1 + d]
            if size is not None and before + after >= size:
                raise ShapeError(f"{_args.who(self)}: cropping {self.cropping} leaves nothing of the input's "
                                 f"{'height' if d == 0 else 'width'} {size} (input shape {tuple(x.shape)}); "
                                 f"crop less.")
        (t, b), (left, r) = self.cropping
        return spatial_pad(x, ((-t, -b), (-left, -r)))

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


class _Steps(Layer):
    """A layer over (batch, steps, features)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.input_spec = InputSpec(ndim=3)

    def _input_hint(self, index, shape, spec):
        return steps_hint(shape)


class UpSampling1D(_Steps):
    """Repeat each step `size` times.

    Args:
        size: positive int.
    """

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = _args.positive_int(self, "size", size)

    def call(self, inputs):
        return upsample(inputs, (1, self.size))

    def get_config(self):
        return {**super().get_config(), "size": self.size}


class ZeroPadding1D(_Steps):
    """Add steps of zeros at the start and end.

    Args:
        padding: int or (start, end).
        data_format: ``"channels_last"`` (batch, steps, features) or ``"channels_first"``.
    """

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _args.int_tuple(self, "padding", padding, 2, allow_zero=True)
        self.data_format = backend.standardize_data_format(data_format, _args.who(self))

    def call(self, inputs):
        return steps_back(self, spatial_pad(steps_last(self, inputs), ((0, 0), self.padding)))

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class Cropping1D(_Steps):
    """Remove steps at the start and end.

    Args:
        cropping: int or (start, end).
    """

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = _args.int_tuple(self, "cropping", cropping, 2, allow_zero=True)

    def call(self, inputs):
        steps = inputs.shape[1]
        if steps is not None and sum(self.cropping) >= steps:
            raise ShapeError(f"{_args.who(self)}: cropping {self.cropping} leaves nothing of the input's {steps} "
                             f"steps (input shape {tuple(inputs.shape)}); crop less.")
        return spatial_pad(inputs, ((0, 0), (-self.cropping[0], -self.cropping[1])))

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}
